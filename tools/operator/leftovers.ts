/** Operator processes a killed test run left behind, found by their pid files and stopped. */
import { join } from "node:path";
import { isAlive } from "../processes.ts";

/**
 * SIGKILLs operators a previous, killed test run left behind: those with a pid file in `logDir`
 * whose process still runs this Deno with a kubeconfig under `clusterDir` (never another process).
 */
export async function killLeftovers(logDir: string, clusterDir: string): Promise<void> {
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(logDir));
  } catch {
    return;
  }
  for (const e of entries.filter((e) => e.name.endsWith(".pid"))) {
    const pid = Number(await Deno.readTextFile(join(logDir, e.name)).catch(() => "0"));
    const cmd = pid > 0 && isAlive(pid)
      ? await Deno.readTextFile(`/proc/${pid}/cmdline`).catch(() => "")
      : "";
    if (cmd.startsWith(Deno.execPath()) && cmd.includes(`--kubeconfig=${clusterDir}/`)) {
      Deno.kill(pid, "SIGKILL");
    }
  }
}
