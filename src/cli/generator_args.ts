/** The arguments of the commands that write generated files (`crds`, `deploy`). */
import { parseFlags, UsageError } from "./flags.ts";
import { commandProgram, commandUsage, CONSOLE, failUsage, type Output } from "./usage.ts";

/** What a generator command was asked: `--check` (write nothing) and `--dir DIR`. */
export interface GeneratorArgs {
  check: boolean;
  dir?: string;
}

/** The help text of a generator command `mod.ts <command>`: its usage line, what it writes, the options. */
export function generatorHelp(command: string, what: string, dirHelp: string): string {
  return `${commandUsage(command, "[--check] [--dir DIR]")}

${what}

Options:
  --check     write nothing; list the files that differ and exit 1 if any do
  --dir DIR   ${dirHelp}
  -h, --help  show this help`;
}

/**
 * Parses `[--check] [--dir DIR] [--help]` of `mod.ts <command>`. When the command stops here it
 * returns its exit code, having printed the help (0) or a one-line usage error (2).
 */
export function parseGeneratorArgs(
  command: string,
  args: string[],
  help: string,
  output: Output = CONSOLE,
): GeneratorArgs | number {
  let parsed;
  try {
    parsed = parseFlags(args, { check: { type: "boolean" }, dir: { type: "string" } });
  } catch (err) {
    if (err instanceof UsageError) return failUsage(output, commandProgram(command), err.message);
    throw err;
  }
  if (parsed.help) {
    output.out(help);
    return 0;
  }
  const { check, dir } = parsed.values;
  return { check: check ?? false, ...(dir !== undefined ? { dir } : {}) };
}
