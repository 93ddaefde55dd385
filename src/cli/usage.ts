/**
 * How every command speaks: help and results on stdout, errors on stderr, one usage line form,
 * and usage errors on one line that says where the help is (as kubectl's `See '... --help'`).
 * Loads nothing, so the operator's `run` can use it too.
 */

/** Where a command writes, one line at a time: results and help to `out`, errors to `err`. */
export interface Output {
  out(line: string): void;
  err(line: string): void;
}

/** stdout and stderr. */
export const CONSOLE: Output = {
  out: (line) => console.log(line),
  err: (line) => console.error(line),
};

/** The exit code of a usage error (bad flags or arguments), as every command uses it. */
export const USAGE_EXIT = 2;

/**
 * The usage line of a help text: `Usage: PROGRAM SYNOPSIS`; a synopsis of several lines is
 * indented under its first.
 */
export function usageLine(program: string, synopsis: string): string {
  const indent = " ".repeat(`Usage: ${program} `.length);
  const [first, ...rest] = synopsis.split("\n");
  return [`Usage: ${program} ${first}`, ...rest.map((l) => indent + l.trimStart())].join("\n");
}

/** How a command of the front door is named in its usage line and hints: `mod.ts <command>`. */
export function commandProgram(command: string): string {
  return `mod.ts ${command}`;
}

/** The usage line of a front-door command, and the `./deno task` that runs it. */
export function commandUsage(command: string, synopsis: string, task = command): string {
  return `${usageLine(commandProgram(command), synopsis)}\n(also \`./deno task ${task}\`)`;
}

/** An error line: `error: MESSAGE`. */
export function errorLine(message: string): string {
  return `error: ${message}`;
}

/** A usage error on one line: `error: MESSAGE. See 'PROGRAM --help'.` */
export function usageError(program: string, message: string): string {
  const end = /[.?!]$/.test(message) ? " " : ". ";
  return `${errorLine(message)}${end}See '${program} --help'.`;
}

/** Writes a usage error and returns its exit code. */
export function failUsage(output: Output, program: string, message: string): number {
  output.err(usageError(program, message));
  return USAGE_EXIT;
}
