/**
 * `mod.ts ratelimit` (`deno task ratelimit`): what a RateLimit will do to some traffic, before anyone
 * applies it, through the operator's reducer and the data-plane model; or with `--render` the
 * EnvoyFilter the operator would apply. See `HELP`.
 */
import { parseAllDocuments, stringify } from "yaml";
import { HELP, parseCommandLine, PROGRAM, rateRequests, type TrafficRequest } from "./args.ts";
import { jsonLine, textReport } from "./format.ts";
import { parseRequests } from "./requests.ts";
import { renderFilters, runTraffic } from "./run.ts";
import { renderSvg } from "./svg.ts";
import { InputError, readInput, readStdin, writeOutput } from "../input.ts";
import { CONSOLE, errorLine, failUsage, type Output, USAGE_EXIT } from "../usage.ts";

/** What the command reads and writes besides files (tests replace them). */
export interface CommandIo extends Output {
  /** All of stdin, for `-`. */
  stdin?: () => Promise<string>;
}

/** The one RateLimit document of a YAML text, or why there is none. */
export function rateLimitDocument(
  text: string,
  name: string,
): { ok: true; value: unknown } | { ok: false; error: string } {
  const docs = parseAllDocuments(text);
  if (!Array.isArray(docs)) return { ok: false, error: `${name}: no YAML documents` };
  const bad = docs.find((d) => d.errors.length > 0);
  if (bad) return { ok: false, error: `${name}: ${bad.errors[0].message}` };
  const values = docs.map((d) => d.toJS() as unknown).filter((v) => v !== null && v !== undefined);
  const kinds = values.map((v) => (v as { kind?: unknown }).kind);
  const rateLimits = values.filter((_, i) => kinds[i] === "RateLimit");
  if (rateLimits.length === 1) return { ok: true, value: rateLimits[0] };
  if (rateLimits.length > 1) {
    return { ok: false, error: `${name}: expected one RateLimit, found ${rateLimits.length}` };
  }
  if (values.length === 0) return { ok: false, error: `${name}: no YAML documents` };
  // One document with no kind is read as a RateLimit, so validation names what it lacks.
  if (values.length === 1 && kinds[0] === undefined) return { ok: true, value: values[0] };
  const named = kinds.map((k) => typeof k === "string" ? k : "an object without a kind");
  return {
    ok: false,
    error: values.length === 1
      ? `${name}: this is a ${named[0]}, not a RateLimit`
      : `${name}: no RateLimit among its ${values.length} documents (${named.join(", ")})`,
  };
}

/** The YAML of objects to apply, one document each, in the order the operator applies them. */
export function objectsYaml(objects: readonly unknown[]): string {
  return objects.map((o) => stringify(o, { lineWidth: 0, aliasDuplicateObjects: false }))
    .join("---\n");
}

/** Runs the command; resolves to the exit code (0 done, 1 file error, 2 invalid input). */
export async function main(args: string[], io: CommandIo = CONSOLE): Promise<number> {
  const cmd = parseCommandLine(args);
  if (!cmd.ok) {
    if (cmd.help) {
      io.out(HELP);
      return 0;
    }
    return failUsage(io, PROGRAM, cmd.error);
  }
  const file = "render" in cmd ? cmd.render.file : cmd.options.file;
  const stdin = io.stdin ?? readStdin;
  const shown = file === "-" ? "stdin" : file;
  const fail = (message: string, code: number) => {
    io.err(errorLine(message));
    return code;
  };
  let doc: ReturnType<typeof rateLimitDocument>;
  try {
    doc = rateLimitDocument(await readInput(file, stdin), shown);
  } catch (err) {
    if (err instanceof InputError) return fail(err.message, 1);
    throw err;
  }
  if (!doc.ok) return fail(doc.error, USAGE_EXIT);
  // Each problem on its own line, each naming the file.
  const refused = (error: string) => {
    for (const line of error.split("\n")) io.err(errorLine(`${shown}: ${line}`));
    return USAGE_EXIT;
  };
  if ("render" in cmd) {
    const filters = renderFilters(doc.value);
    if (!filters.ok) return refused(filters.error);
    io.out(objectsYaml(filters.value).trimEnd());
    return 0;
  }
  const opts = cmd.options;
  let requests: TrafficRequest[];
  let endMs: number;
  if ("requests" in opts.traffic) {
    const name = opts.traffic.requests;
    let text: string;
    try {
      text = await readInput(name, stdin);
    } catch (err) {
      if (err instanceof InputError) return fail(err.message, 1);
      throw err;
    }
    const parsed = parseRequests(text, name === "-" ? "stdin" : name);
    if (!parsed.ok) return fail(parsed.error, USAGE_EXIT);
    requests = parsed.value;
    endMs = requests.length > 0 ? requests[requests.length - 1].t : 0;
  } else {
    const { rateHz, forMs, path, headers } = opts.traffic;
    requests = rateRequests(rateHz, forMs, path, headers);
    endMs = forMs;
  }
  const run = runTraffic(doc.value, requests, endMs, opts.envoy, opts.replicas);
  if (!run.ok) return refused(run.error);
  if (opts.json) { for (const o of run.value.outcomes) io.out(jsonLine(o)); }
  else for (const line of textReport(run.value)) io.out(line);
  if (opts.svg) {
    try {
      await writeOutput(opts.svg, renderSvg(run.value));
    } catch (err) {
      if (err instanceof InputError) return fail(err.message, 1);
      throw err;
    }
  }
  return 0;
}
