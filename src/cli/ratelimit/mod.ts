/**
 * `mod.ts ratelimit` (`deno task ratelimit`): what a RateLimit will do to some traffic, before anyone
 * applies it, through the operator's reducer and the data-plane model. See `HELP`.
 */
import { parseAllDocuments } from "yaml";
import { HELP, parseCommandLine, rateRequests, type TrafficRequest } from "./args.ts";
import { jsonLine, textReport } from "./format.ts";
import { parseRequests } from "./requests.ts";
import { runTraffic } from "./run.ts";
import { renderSvg } from "./svg.ts";

/** Where the command writes: one line at a time. */
export interface CommandOutput {
  out(line: string): void;
  err(line: string): void;
}

const CONSOLE: CommandOutput = { out: (l) => console.log(l), err: (l) => console.error(l) };

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
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
  const rateLimits = values.filter((v) => (v as { kind?: unknown }).kind === "RateLimit");
  if (rateLimits.length === 1) return { ok: true, value: rateLimits[0] };
  if (rateLimits.length === 0 && values.length === 1) return { ok: true, value: values[0] };
  return { ok: false, error: `${name}: expected one RateLimit, found ${rateLimits.length}` };
}

/** Runs the command; resolves to the exit code (0 done, 1 file error, 2 invalid input). */
export async function main(args: string[], io: CommandOutput = CONSOLE): Promise<number> {
  const cmd = parseCommandLine(args);
  if (!cmd.ok) {
    if (cmd.help) {
      io.out(HELP);
      return 0;
    }
    io.err(`error: ${cmd.error}\n\n${HELP}`);
    return 2;
  }
  const opts = cmd.options;
  let yamlText: string;
  let requestsText: string | undefined;
  try {
    yamlText = await Deno.readTextFile(opts.file);
    if ("requests" in opts.traffic) requestsText = await Deno.readTextFile(opts.traffic.requests);
  } catch (err) {
    io.err(`error: ${message(err)}`);
    return 1;
  }
  const doc = rateLimitDocument(yamlText, opts.file);
  if (!doc.ok) {
    io.err(`error: ${doc.error}`);
    return 2;
  }
  let requests: TrafficRequest[];
  let endMs: number;
  if ("requests" in opts.traffic) {
    const parsed = parseRequests(requestsText ?? "", opts.traffic.requests);
    if (!parsed.ok) {
      io.err(`error: ${parsed.error}`);
      return 2;
    }
    requests = parsed.value;
    endMs = requests.length > 0 ? requests[requests.length - 1].t : 0;
  } else {
    const { rateHz, forMs, path, headers } = opts.traffic;
    requests = rateRequests(rateHz, forMs, path, headers);
    endMs = forMs;
  }
  const run = runTraffic(doc.value, requests, endMs, opts.envoy, opts.replicas);
  if (!run.ok) {
    io.err(`error: ${opts.file}: ${run.error}`);
    return 2;
  }
  if (opts.json) { for (const o of run.value.outcomes) io.out(jsonLine(o)); }
  else for (const line of textReport(run.value)) io.out(line);
  if (opts.svg) {
    try {
      await Deno.writeTextFile(opts.svg, renderSvg(run.value));
    } catch (err) {
      io.err(`error: ${message(err)}`);
      return 1;
    }
  }
  return 0;
}
