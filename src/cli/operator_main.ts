/**
 * Entry of the compiled operator binary (`deno task compile`): `run` and nothing else, so the
 * binary holds only the operator's code and needs only its permissions.
 */
import { main } from "./run.ts";

/** The arguments of `run`: a leading `run` is accepted too (`ENTRYPOINT ["/platform-operator", "run"]`). */
export function runArgs(args: readonly string[]): string[] {
  return args[0] === "run" ? args.slice(1) : [...args];
}

if (import.meta.main) Deno.exit(await main(runArgs(Deno.args)));
