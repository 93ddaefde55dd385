/**
 * A guard that stops a suite's cluster when the test process dies without cleaning up: `deno test`
 * exits on Ctrl-C without running finally blocks, and the cluster's processes run in their own
 * session, so nothing else would stop them.
 */
import { join } from "node:path";
import { startProcess, stopProcess } from "../../tools/processes.ts";
import { REPO_ROOT } from "./operator.ts";

const SH = "/bin/sh";
const SCRIPT = 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; ' +
  'exec "$2" run -A --frozen --config "$3" "$4" down --dir "$5"';

/** A running watchdog. */
export interface Watchdog {
  /** Ends the watchdog (the suite cleans up itself). */
  stop(): Promise<void>;
}

/** Starts a detached shell that runs `cluster.ts down --dir clusterDir` once this process is gone. */
export async function startWatchdog(clusterDir: string, log: string): Promise<Watchdog> {
  const pid = await startProcess({
    name: "e2e-watchdog",
    bin: SH,
    args: [
      "-c",
      SCRIPT,
      "sh",
      String(Deno.pid),
      Deno.execPath(),
      join(REPO_ROOT, "deno.json"),
      join(REPO_ROOT, "tools", "cluster", "cluster.ts"),
      clusterDir,
    ],
    log,
  });
  return { stop: () => stopProcess(pid, SH, 2_000).then(() => {}) };
}
