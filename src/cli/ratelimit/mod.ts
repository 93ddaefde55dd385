/**
 * `mod.ts ratelimit` (`deno task ratelimit`): what a RateLimit will do to some traffic, before anyone
 * applies it, through the operator's reducer and the data-plane model; or with `--render` the
 * EnvoyFilter the operator would apply. See `HELP`.
 */
import { stringify } from "yaml";
import { HELP, parseCommandLine, PROGRAM, rateRequests, type TrafficRequest } from "./args.ts";
import { jsonLine, rateJsonLines, textReport } from "./format.ts";
import { parseRequests } from "./requests.ts";
import { renderFilters, runTraffic } from "./run.ts";
import { renderSvg } from "./svg.ts";
import { fromKyma, isKymaRateLimit, KYMA_API_VERSION } from "./kyma.ts";
import {
  BACKEND_TRAFFIC_POLICY,
  ENVOY_GATEWAY_API_VERSION,
  fromBackendTrafficPolicy,
  isBackendTrafficPolicy,
} from "./envoy_gateway.ts";
import {
  InputError,
  readInput,
  readStdin,
  RefusedInput,
  type StdinReader,
  writeOutput,
} from "../input.ts";
import { objectMetaProblems, parseYamlDocuments } from "../../api/yaml.ts";
import { CONSOLE, errorLine, failUsage, type Output, USAGE_EXIT } from "../usage.ts";

/** What the command reads and writes besides files (tests replace them). */
export interface CommandIo extends Output {
  /** All of stdin, for `-` (at most the limit it is given, and one chunk more). */
  stdin?: StdinReader;
}

/**
 * The one RateLimit document of a YAML text (read as kubectl reads it: src/api/yaml.ts; a
 * `kind: List` counts as its items), or why there is none: one line, or one line a problem of
 * its name and namespace, each naming the file.
 */
export function rateLimitDocument(
  text: string,
  name: string,
): { ok: true; value: unknown } | { ok: false; error: string } {
  const docs = parseYamlDocuments(text, name);
  if (!docs.ok) return docs;
  const values = docs.value;
  const kinds = values.map((v) => (v as { kind?: unknown }).kind);
  let rateLimits = values.filter((_, i) => kinds[i] === "RateLimit");
  // Envoy Gateway's BackendTrafficPolicy is converted (envoy_gateway.ts) when no RateLimit is there.
  if (rateLimits.length === 0) rateLimits = values.filter(isBackendTrafficPolicy);
  if (rateLimits.length === 1) {
    const problems = objectMetaProblems(rateLimits[0]);
    if (problems.length > 0) {
      return { ok: false, error: problems.map((p) => `${name}: ${p}`).join("\n") };
    }
    return { ok: true, value: rateLimits[0] };
  }
  if (rateLimits.length > 1) {
    const what = kinds.includes("RateLimit") ? "RateLimit" : BACKEND_TRAFFIC_POLICY;
    return { ok: false, error: `${name}: expected one ${what}, found ${rateLimits.length}` };
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

/**
 * What a Kyma RateLimit becomes: this project's RateLimit as YAML, led by comment lines naming it
 * and what behaves differently, so the text can be applied as it is.
 */
export function kymaLines(name: string, rateLimit: unknown, differences: string[]): string[] {
  return convertedLines(
    `Kyma's RateLimit ${name} (${KYMA_API_VERSION})`,
    "docs/migrating-from-kyma.md",
    [rateLimit],
    differences,
  );
}

/**
 * A converted object's lines: what it was, what behaves differently (see `page`), the RateLimits
 * (one, or one a target of an Envoy Gateway policy).
 */
function convertedLines(
  what: string,
  page: string,
  rateLimits: unknown[],
  differences: string[],
): string[] {
  return [
    `# ${what} as this project's RateLimit${rateLimits.length > 1 ? "s" : ""}.`,
    `# What behaves differently (${page}):`,
    ...differences.map((d) => `# - ${d}`),
    ...objectsYaml(rateLimits).trimEnd().split("\n"),
  ];
}

/** The `namespace/name` of a converted object's metadata, or `(unnamed)`. */
function shownName(obj: Record<string, unknown>): string {
  const meta = (obj.metadata ?? {}) as { name?: unknown; namespace?: unknown };
  return [meta.namespace, meta.name].filter((x) => typeof x === "string").join("/") || "(unnamed)";
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
    for (const line of message.split("\n")) io.err(errorLine(line));
    return code;
  };
  /** A file's text, or the exit code of the error said. */
  const read = async (path: string): Promise<string | number> => {
    try {
      return await readInput(path, stdin);
    } catch (err) {
      if (err instanceof InputError) return fail(err.message, 1);
      if (err instanceof RefusedInput) return fail(err.message, USAGE_EXIT);
      throw err;
    }
  };
  const text = await read(file);
  if (typeof text === "number") return text;
  const doc = rateLimitDocument(text, shown);
  if (!doc.ok) return fail(doc.error, USAGE_EXIT);
  let rateLimit = doc.value;
  // A converted object (Kyma's RateLimit, Envoy Gateway's BackendTrafficPolicy): the lines saying
  // what it became, and the words a refusal of it starts with.
  let converted: string[] | undefined;
  let lead = "";
  // Each problem on its own line, each naming the file (and, for a converted one, that it is not
  // carried).
  const refused = (error: string) => {
    for (const line of error.split("\n")) io.err(errorLine(`${shown}: ${lead}${line}`));
    return USAGE_EXIT;
  };
  if (isKymaRateLimit(rateLimit)) {
    lead = "cannot carry over Kyma's RateLimit: ";
    const c = fromKyma(rateLimit as Record<string, unknown>);
    if (!c.ok) return refused(c.problems.join("\n"));
    converted = kymaLines(shownName(c.rateLimit), c.rateLimit, c.differences);
    rateLimit = c.rateLimit;
  } else if (isBackendTrafficPolicy(rateLimit)) {
    lead = `cannot carry over Envoy Gateway's ${BACKEND_TRAFFIC_POLICY}: `;
    const policy = rateLimit as Record<string, unknown>;
    const c = fromBackendTrafficPolicy(policy);
    if (!c.ok) return refused(c.problems.join("\n"));
    converted = convertedLines(
      `Envoy Gateway's ${BACKEND_TRAFFIC_POLICY} ${
        shownName(policy)
      } (${ENVOY_GATEWAY_API_VERSION})`,
      "docs/migration-envoy-gateway.md",
      c.rateLimits,
      c.differences,
    );
    // The preview runs the first; the others differ only in name and selector, which the
    // conversion checks.
    rateLimit = c.rateLimit;
  }
  if ("render" in cmd) {
    const filters = renderFilters(rateLimit);
    if (!filters.ok) return refused(filters.error);
    // A converted object renders to the RateLimit to apply instead; rendering that shows its filter.
    if (converted) { for (const line of converted) io.out(line); }
    else io.out(objectsYaml(filters.value).trimEnd());
    return 0;
  }
  const opts = cmd.options;
  let requests: TrafficRequest[];
  let endMs: number;
  if ("requests" in opts.traffic) {
    const name = opts.traffic.requests;
    const lines = await read(name);
    if (typeof lines === "number") return lines;
    const parsed = parseRequests(lines, name === "-" ? "stdin" : name);
    if (!parsed.ok) return fail(parsed.error, USAGE_EXIT);
    requests = parsed.value;
    endMs = requests.length > 0 ? requests[requests.length - 1].t : 0;
  } else {
    const { rateHz, forMs, method, path, headers, clients } = opts.traffic;
    requests = rateRequests(rateHz, forMs, path, headers, clients, method);
    endMs = forMs;
  }
  const run = runTraffic(rateLimit, requests, endMs, opts.envoy, opts.replicas);
  if (!run.ok) return refused(run.error);
  // With `--svg -` the picture is alone on stdout and the report goes to stderr.
  const report = opts.svg === "-" ? io.err : io.out;
  if (converted) {
    // JSON lines stay alone on stdout; the conversion goes beside them.
    const put = opts.json ? io.err : report;
    for (const line of [...converted, ""]) put(line);
  }
  if (opts.json) {
    for (const o of run.value.outcomes) report(jsonLine(o));
    for (const line of rateJsonLines(run.value)) report(line);
  } else for (const line of textReport(run.value)) report(line);
  if (opts.svg !== undefined) {
    try {
      await writeOutput(opts.svg, renderSvg(run.value), io.out);
    } catch (err) {
      if (err instanceof InputError) return fail(err.message, 1);
      throw err;
    }
  }
  return 0;
}
