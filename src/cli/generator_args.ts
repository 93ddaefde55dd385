/** The arguments of the commands that write generated files (`crds`, `deploy`). */
import { parseFlags, UsageError } from "./flags.ts";
import { isFsError } from "./generated_files.ts";
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
  const wrong = dir === undefined ? undefined : notAFolder(dir);
  if (wrong) return failUsage(output, commandProgram(command), `--dir ${wrong}`);
  return { check: check ?? false, ...(dir !== undefined ? { dir } : {}) };
}

/**
 * Why `dir` cannot be a generator's folder, or undefined: empty, or a path that exists but is not
 * a folder (one that does not exist yet is made when the files are written).
 */
function notAFolder(dir: string): string | undefined {
  if (dir === "") return "is empty: give a folder";
  try {
    return Deno.statSync(dir).isDirectory ? undefined : `${dir} is not a folder`;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    // A path through a file (`a-file/sub`) is not a folder either.
    if (err instanceof Deno.errors.NotADirectory) return `${dir} is not a folder`;
    if (isFsError(err)) return `${dir}: ${err.message.split("\n")[0]}`;
    throw err;
  }
}
