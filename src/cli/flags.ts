/**
 * The command line of the CLI's commands, parsed one way: `--name value`, `--name=value`, `-x
 * value`, booleans as `--name`, `--` ending the flags. A flag that takes a value takes the next
 * argument whatever it is (`--for -1s`, `-f -`), as kubectl's flags do, so the value's own check
 * says what is wrong with it; given twice, the last value wins, unless the flag is `once` (a file
 * to read: taking the last would silently ignore the first). An unknown flag is named with the
 * one meant. No node:util, so the
 * operator's start-up graph stays free of Node's compatibility layer.
 */
import { didYouMean } from "../api/suggest.ts";

/** One flag: a boolean, or one that takes a value (repeatable when `multiple`). */
export interface FlagSpec {
  type: "string" | "boolean";
  short?: string;
  multiple?: boolean;
  /** Given twice is a usage error (for a flag naming the one file a command reads). */
  once?: boolean;
}

/** The values of flags `S`: booleans, strings, lists of strings; absent when not given. */
export type FlagValues<S extends Record<string, FlagSpec>> = {
  [K in keyof S]?: S[K]["type"] extends "boolean" ? boolean
    : S[K]["multiple"] extends true ? string[]
    : string;
};

/** What was given: flag values and the other arguments, or help asked for. */
export type ParsedFlags<S extends Record<string, FlagSpec>> =
  | { help: true }
  | { help: false; values: FlagValues<S>; positionals: string[] };

/** A usage error: the command line cannot be read. */
export class UsageError extends Error {}

/**
 * Parses `args` against `spec`. `-h` or `--help` anywhere before `--` asks for help, whatever else
 * is wrong; otherwise an unknown flag, a missing value, or a positional argument when
 * `positionals` is false throws a UsageError.
 */
export function parseFlags<S extends Record<string, FlagSpec>>(
  args: readonly string[],
  spec: S,
  positionals = false,
): ParsedFlags<S> {
  const end = args.indexOf("--");
  const flagArgs = end < 0 ? args : args.slice(0, end);
  if (flagArgs.some((a) => a === "-h" || a === "--help")) return { help: true };
  const names = Object.keys(spec);
  const byShort = new Map(names.flatMap((n) => spec[n].short ? [[spec[n].short!, n]] : []));
  const values: Record<string, string | boolean | string[]> = {};
  const rest: string[] = [];
  for (let i = 0; i < flagArgs.length; i++) {
    const arg = flagArgs[i];
    if (arg === "-" || !arg.startsWith("-")) {
      rest.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const written = eq < 0 ? arg : arg.slice(0, eq);
    const name = written.startsWith("--") ? written.slice(2) : byShort.get(written.slice(1));
    if (name === undefined || !Object.hasOwn(spec, name) || written === "--") {
      const known = names.flatMap((
        n,
      ) => [`--${n}`, ...(spec[n].short ? [`-${spec[n].short}`] : [])]);
      throw new UsageError(`unknown flag ${written}${didYouMean(written, [...known, "--help"])}`);
    }
    const flag = spec[name];
    if (flag.type === "boolean") {
      if (eq >= 0) throw new UsageError(`${written} takes no value`);
      values[name] = true;
      continue;
    }
    let value: string;
    if (eq >= 0) value = arg.slice(eq + 1);
    else if (i + 1 < flagArgs.length) value = flagArgs[++i];
    else throw new UsageError(`${written} needs a value`);
    if (flag.once && values[name] !== undefined) {
      throw new UsageError(
        `${written} given twice (${JSON.stringify(values[name])} and ${
          JSON.stringify(value)
        }): this command reads one`,
      );
    }
    // A flag given again wins over its earlier value (as kubectl's flags; tests append flags).
    if (flag.multiple) values[name] = [...(values[name] as string[] | undefined ?? []), value];
    else values[name] = value;
  }
  if (end >= 0) rest.push(...args.slice(end + 1));
  if (!positionals && rest.length > 0) {
    throw new UsageError(`unexpected argument ${JSON.stringify(rest[0])}: this command takes none`);
  }
  return { help: false, values: values as FlagValues<S>, positionals: rest };
}
