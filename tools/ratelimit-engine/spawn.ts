/**
 * Child processes of a test (Redis, the engine), their stdout and stderr appended to a log file,
 * with only the environment given (the engine reads its settings from the environment: nothing
 * of the caller's may leak into them).
 *
 * @module
 */

/** A child process started by {@link spawnLogged}. */
export interface Child {
  pid: number;
  /** True once the process has exited. */
  exited(): boolean;
  /** Its exit status, once it exits. */
  status: Promise<Deno.CommandStatus>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Starts `bin args` with stdout and stderr appended to `log`, stdin closed, and `env` plus PATH as
 * its whole environment. Throws Deno.errors.NotFound when `bin` is not found.
 */
export function spawnLogged(
  bin: string,
  args: readonly string[],
  log: string,
  env: Record<string, string>,
): Child {
  const path = Deno.env.get("PATH") ?? "/usr/local/bin:/usr/bin:/bin";
  const found = bin.includes("/") ? bin : path.split(":").map((d) => `${d}/${bin}`).find((p) => {
    try {
      return Deno.statSync(p).isFile;
    } catch {
      return false;
    }
  });
  if (!found) throw new Deno.errors.NotFound(`${bin} not found on PATH`);
  // `exec` keeps the pid: the child is the program itself, so signals reach it.
  const child = new Deno.Command("/bin/sh", {
    args: ["-c", 'exec "$@" >>"$SPAWN_LOG" 2>&1', "sh", found, ...args],
    env: { ...env, PATH: path, SPAWN_LOG: log },
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  let done = false;
  const status = child.status.then((s) => {
    done = true;
    return s;
  });
  return {
    pid: child.pid,
    exited: () => done,
    status,
    stop: async (graceMs = 5000) => {
      if (done) return;
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      const timer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch { /* already gone */ }
      }, graceMs);
      await status;
      clearTimeout(timer);
    },
  };
}
