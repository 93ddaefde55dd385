/** What the `./deno task dev` tests share: running it, reading its output, running what it prints. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO_ROOT } from "../../tools/operator/process.ts";
import { runCommand } from "../command.ts";
import { SKIP_REASON } from "./harness.ts";

/** Reads `stream` line by line into `lines` until it ends. */
async function collectLines(stream: ReadableStream<Uint8Array>, lines: string[]): Promise<void> {
  let rest = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    const parts = (rest + chunk).split("\n");
    rest = parts.pop() ?? "";
    lines.push(...parts);
  }
  if (rest) lines.push(rest);
}

/**
 * Runs `command` with sh from the repository root in `env` (with `stdin` if given); asserts it
 * succeeds and returns its stdout and stderr.
 */
export async function sh(
  command: string,
  env: Record<string, string>,
  stdin?: string,
): Promise<string> {
  const out = await runCommand("sh", ["-c", command], { cwd: REPO_ROOT, env, stdin });
  const text = out.stdout + out.stderr;
  assert.ok(out.success, `${command} failed:\n${text}`);
  return text;
}

/**
 * Resolves once a line of `lines` includes `text`. Rejects as soon as `child` exits first (with
 * the last lines it wrote), rather than waiting out `timeoutMs` for a process that is gone.
 */
async function untilPrinted(
  child: Deno.ChildProcess,
  lines: readonly string[],
  text: string,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited: Deno.CommandStatus | undefined;
  child.status.then((s) => exited = s, () => {});
  for (;;) {
    if (lines.some((l) => l.includes(text))) return;
    if (exited) {
      // Its last lines may still be on their way through the pipe.
      await new Promise((r) => setTimeout(r, 200));
      if (lines.some((l) => l.includes(text))) return;
      throw new Error(
        `exited with code ${exited.code} before printing ${JSON.stringify(text)}:\n${
          lines.slice(-20).join("\n")
        }`,
      );
    }
    if (Date.now() >= deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${JSON.stringify(text)}:\n${
          lines.slice(-20).join("\n")
        }`,
      );
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** `./deno task dev` running, once it said it is ready: what it printed, and its Ctrl-C. */
export interface DevRun {
  /** Its stderr so far, a line each (where it prints what to try). */
  err: string[];
  /** The match of `re` on the first stderr line (trimmed) it matches; asserts there is one. */
  printed(re: RegExp): RegExpExecArray;
  /** The variables of the `export KUBECONFIG=... PATH=...:$PATH` line it printed, for {@link sh}. */
  env(): Record<string, string>;
  /** Ctrl-C: asserts that it exits with 130, and waits until its output is read to the end. */
  stop(): Promise<void>;
}

/** How {@link devTest} runs `./deno task dev`. */
export interface DevTestOptions {
  /** Its flags, e.g. `--mesh`. */
  args: string[];
  /** How long it may take to say it is ready (on a cold machine it builds for minutes). */
  readyMs: number;
  /** Why the test cannot run here, if it cannot (it is then ignored); default SKIP_REASON. */
  skip?: string;
  /** Runs before dev is started, outside `readyMs` (e.g. building). */
  before?: () => Promise<unknown>;
}

/**
 * A Deno test of `./deno task dev` with `o.args`: waits (up to `o.readyMs`) until it prints
 * `Ctrl-C stops`, then runs `body`; if `body` did not stop it, it is sent Ctrl-C and waited for.
 */
export function devTest(name: string, o: DevTestOptions, body: (dev: DevRun) => Promise<void>) {
  Deno.test({
    name,
    ignore: (o.skip ?? SKIP_REASON) !== undefined,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async () => {
      await o.before?.();
      await withDev(o.args, o.readyMs, body);
    },
  });
}

/** Runs `./deno task dev` for {@link devTest}. */
async function withDev(
  args: string[],
  readyMs: number,
  body: (dev: DevRun) => Promise<void>,
): Promise<void> {
  const child = new Deno.Command(join(REPO_ROOT, "deno"), {
    args: ["task", "dev", ...args],
    cwd: REPO_ROOT,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const out: string[] = [];
  const err: string[] = [];
  const reading = Promise.all([collectLines(child.stdout, out), collectLines(child.stderr, err)]);
  let stopped = false;
  const printed = (re: RegExp) => {
    const m = err.map((l) => re.exec(l.trim())).find((x) => x);
    assert.ok(m, `dev printed no line like ${re}:\n${err.slice(-30).join("\n")}`);
    return m;
  };
  try {
    await untilPrinted(child, err, "Ctrl-C stops", readyMs);
    await body({
      err,
      printed,
      env: () => {
        const [, kubeconfig, bin] = printed(/^export KUBECONFIG=(\S+) PATH=(\S+):\$PATH$/);
        return { KUBECONFIG: kubeconfig, PATH: `${bin}:${Deno.env.get("PATH")}` };
      },
      stop: async () => {
        child.kill("SIGINT");
        stopped = true;
        const status = await child.status;
        assert.equal(status.code, 130, err.slice(-10).join("\n"));
        await reading;
      },
    });
  } finally {
    if (!stopped) {
      try {
        child.kill("SIGINT");
      } catch { /* gone */ }
      await child.status;
    }
  }
}
