/** A tiny cross-process lock based on an atomic `mkdir`, with stale-owner detection. */
import { join } from "node:path";
import { isAlive } from "./processes.ts";

/** A try for the lock: held (release it when done), or held by a live process `owner` (0: unknown). */
export type LockAttempt =
  | { held: true; release(): Promise<void> }
  | { held: false; owner: number };

/** Takes the lock directory `path` if it is free or its holder is dead; never waits. */
export async function tryLock(path: string): Promise<LockAttempt> {
  for (;;) {
    try {
      await Deno.mkdir(path);
      await Deno.writeTextFile(join(path, "pid"), String(Deno.pid));
      return {
        held: true,
        release: () => Deno.remove(path, { recursive: true }).catch(() => {}),
      };
    } catch (e) {
      if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
    }
    const owner = Number(await Deno.readTextFile(join(path, "pid")).catch(() => "0"));
    if (owner > 0 && !isAlive(owner)) {
      await Deno.remove(path, { recursive: true }).catch(() => {});
      continue;
    }
    return { held: false, owner };
  }
}

/** Runs `fn` while holding the lock directory `path`; waits for (or breaks a stale) holder. */
export async function withLock<T>(
  path: string,
  fn: () => Promise<T>,
  log: (msg: string) => void = () => {},
): Promise<T> {
  let announced = false;
  let attempt: LockAttempt;
  while (!(attempt = await tryLock(path)).held) {
    if (!announced) log(`waiting for lock ${path} (held by pid ${attempt.owner || "?"})`);
    announced = true;
    await new Promise((r) => setTimeout(r, 1000));
  }
  try {
    return await fn();
  } finally {
    await attempt.release();
  }
}
