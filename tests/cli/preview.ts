/** Runs the preview (`mod.ts ratelimit`) through main(), its output captured, for the CLI tests. */
import { main } from "../../src/cli/ratelimit/mod.ts";

/** main(args) with `stdin` as its stdin: stdout and stderr lines. */
export async function runLines(
  args: string[],
  stdin: string | Uint8Array = "",
): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    stdin: () => Promise.resolve(stdin),
  });
  return { code, out, err };
}

/** main(args) with stdout lines in `out` and stderr joined in `err`. */
export async function run(args: string[]): Promise<{ code: number; out: string[]; err: string }> {
  const r = await runLines(args);
  return { ...r, err: r.err.join("\n") };
}
