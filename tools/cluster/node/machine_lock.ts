/**
 * One real node per machine, across processes. kube-proxy's chains are the machine's, so a second
 * real node is refused (proxy.ts checkAloneOnMachine); this lock makes a process that wants a real
 * node wait for the other instead, so test runs of several checkouts (a CI clone beside a working
 * tree) take turns rather than fail. The lock is an exclusive flock on one file of the machine,
 * held by the process from the start of its real node's cluster until that cluster stops (or the
 * process ends: the kernel drops it). Re-entrant within a process: a process holding it may start
 * a second cluster (which the refusal then stops, as before).
 */
import { resolve } from "node:path";

/** The machine-wide lock file (`/run/lock` when it exists, else the temp directory). */
export function realNodeLockPath(): string {
  let dir = "/tmp";
  try {
    if (Deno.statSync("/run/lock").isDirectory) dir = "/run/lock";
  } catch { /* no /run/lock */ }
  return `${dir}/platform-project-real-node.lock`;
}

let held: Deno.FsFile | undefined;
const holders = new Set<string>();

/**
 * Takes the machine's real-node lock for the cluster in `dir`, waiting (and saying so every 30 s)
 * while another process holds it.
 */
export async function acquireRealNodeLock(dir: string, log: (m: string) => void): Promise<void> {
  holders.add(resolve(dir));
  if (held) return;
  const path = realNodeLockPath();
  const file = await Deno.open(path, { create: true, write: true });
  const started = Date.now();
  const timer = setInterval(() => {
    log(
      `waiting for the machine's real node (${path} is held by another process: only one real ` +
        `node runs at a time) for ${Math.round((Date.now() - started) / 1000)} s`,
    );
  }, 30_000);
  try {
    await file.lock(true);
  } catch (e) {
    file.close();
    holders.delete(resolve(dir));
    throw e;
  } finally {
    clearInterval(timer);
  }
  held = file;
  if (Date.now() - started > 1_000) {
    log(`took the machine's real node after ${Math.round((Date.now() - started) / 1000)} s`);
  }
}

/** Gives the lock up once no cluster of this process that took it still runs. */
export function releaseRealNodeLock(dir: string): void {
  if (!holders.delete(resolve(dir)) || holders.size > 0 || !held) return;
  const file = held;
  held = undefined;
  try {
    file.unlockSync();
  } finally {
    file.close();
  }
}
