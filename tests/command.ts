/** Running a command to its end in a test, with text on its stdin. */
import { join } from "node:path";
import { REPO_ROOT } from "../tools/cluster/paths.ts";

/** How a command ended: its exit code and what it wrote. */
export interface CommandOutput {
  code: number;
  success: boolean;
  stdout: string;
  stderr: string;
}

/** Where and how {@link runCommand} runs a command. */
export interface CommandOptions {
  /** Written to its stdin, which is then closed; without it, no stdin. */
  stdin?: string;
  cwd?: string;
  /** More environment variables (the test's own are kept). */
  env?: Record<string, string>;
}

/** Runs `command` with `args` to its end; never throws on a non-zero exit. */
export async function runCommand(
  command: string,
  args: string[],
  o: CommandOptions = {},
): Promise<CommandOutput> {
  const child = new Deno.Command(command, {
    args,
    cwd: o.cwd,
    env: o.env,
    stdin: o.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (o.stdin !== undefined) {
    await ReadableStream.from([new TextEncoder().encode(o.stdin)]).pipeTo(child.stdin);
  }
  const out = await child.output();
  const dec = new TextDecoder();
  return {
    code: out.code,
    success: out.success,
    stdout: dec.decode(out.stdout),
    stderr: dec.decode(out.stderr),
  };
}

/** Runs `deno run -A --frozen <script> ...args` from the repository root (`script` relative to it). */
export function runDenoScript(script: string, args: string[]): Promise<CommandOutput> {
  return runCommand(Deno.execPath(), ["run", "-A", "--frozen", join(REPO_ROOT, script), ...args], {
    cwd: REPO_ROOT,
  });
}
