/** A tiny cross-process lock based on an atomic `mkdir`, with stale-owner detection. */
import { join } from "node:path";
import { isAlive } from "./processes.ts";

/** Runs `fn` while holding the lock directory `path`; waits for (or breaks a stale) holder. */
export async function withLock<T>(
  path: string,
  fn: () => Promise<T>,
  log: (msg: string) => void = () => {},
): Promise<T> {
  let announced = false;
  for (;;) {
    try {
      await Deno.mkdir(path);
      await Deno.writeTextFile(join(path, "pid"), String(Deno.pid));
      break;
    } catch (e) {
      if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
    }
    const owner = Number(await Deno.readTextFile(join(path, "pid")).catch(() => "0"));
    if (owner > 0 && !isAlive(owner)) {
      await Deno.remove(path, { recursive: true }).catch(() => {});
      continue;
    }
    if (!announced) log(`waiting for lock ${path} (held by pid ${owner || "?"})`);
    announced = true;
    await new Promise((r) => setTimeout(r, 1000));
  }
  try {
    return await fn();
  } finally {
    await Deno.remove(path, { recursive: true }).catch(() => {});
  }
}
