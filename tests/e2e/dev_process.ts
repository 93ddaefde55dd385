/** What the `./deno task dev` tests share: reading its output by lines, running what it prints. */
import assert from "node:assert/strict";
import { REPO_ROOT } from "../../tools/operator/process.ts";

/** Reads `stream` line by line into `lines` until it ends. */
export async function collectLines(
  stream: ReadableStream<Uint8Array>,
  lines: string[],
): Promise<void> {
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
  const child = new Deno.Command("sh", {
    args: ["-c", command],
    cwd: REPO_ROOT,
    env,
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const out = await child.output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.ok(out.success, `${command} failed:\n${text}`);
  return text;
}

/**
 * Resolves once a line of `lines` includes `text`. Rejects as soon as `child` exits first (with
 * the last lines it wrote), rather than waiting out `timeoutMs` for a process that is gone.
 */
export async function untilPrinted(
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
