/** The arguments of the commands that write generated files (`crds`, `deploy`). */
import { parseArgs } from "node:util";

/** What a generator command was asked: `--check` (write nothing) and `--dir DIR`. */
export interface GeneratorArgs {
  check: boolean;
  dir?: string;
}

/**
 * Parses `[--check] [--dir DIR] [--help]`. When the command stops here it returns its exit code,
 * having printed the help (0) or the error and the help (2).
 */
export function parseGeneratorArgs(args: string[], help: string): GeneratorArgs | number {
  let values: { check?: boolean; dir?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args,
      options: {
        check: { type: "boolean" },
        dir: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    console.error(`error: ${err instanceof Error ? err.message : String(err)}\n\n${help}`);
    return 2;
  }
  if (values.help) {
    console.log(help);
    return 0;
  }
  return { check: values.check ?? false, ...(values.dir !== undefined ? { dir: values.dir } : {}) };
}
