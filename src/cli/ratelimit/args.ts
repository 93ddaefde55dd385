/** Arguments of `mod.ts ratelimit` and the traffic they describe. */
import { goDurationProblem, parseGoDuration } from "../../api/duration.ts";
import { HTTP_TOKEN_CHARS } from "../../api/ratelimit_bounds.ts";
import {
  DEFAULT_ENVOY,
  type EnvoyBehaviour,
  envoyBehaviour,
  NEWEST_ISTIO,
} from "../../dataplane/mod.ts";
import { type FlagSpec, parseFlags, UsageError } from "../flags.ts";
import { commandProgram, commandUsage } from "../usage.ts";

/** How the command is named in its usage line and hints. */
export const PROGRAM = commandProgram("ratelimit");

/** The help text. */
export const HELP = `${
  commandUsage(
    "ratelimit",
    `-f RATELIMIT.yaml (--render | --requests FILE.jsonl
     | --rate N/s --for DURATION [--method M] [--path P] [--header K=V]... [--clients N])
     [--envoy VERSION] [--replicas N] [--json] [--svg FILE]`,
  )
}

Shows what a RateLimit will do to some traffic before anyone applies it: the RateLimit goes through
the operator's reconciler, its EnvoyFilter through the model of Envoy's local rate limit, on one
proxy and one route, with time 0 the moment the limit is applied; its global part (spec.global)
through the model of the rate limit engine's fixed windows, time 0 starting a window of each unit. Unknown fields are refused as
kubectl refuses them. --render prints the EnvoyFilter the operator would apply instead.

Options:
  -f, --file FILE      the RateLimit (YAML; the one RateLimit document of the file); - reads stdin
                       a Kyma RateLimit (gateway.kyma-project.io/v1alpha1) or an Envoy Gateway
                       BackendTrafficPolicy (gateway.envoyproxy.io/v1alpha1) is converted: the
                       equivalent RateLimit and what behaves differently are printed first
  --requests FILE      requests, one JSON object a line (- reads stdin):
                         {"t":"1.5s","path":"/headers","headers":{"X-Rate-Limited":"true"},"count":1}
                       t is a Go duration from time 0, in order; method (default GET),
                       headers, count and client are optional; "client":"C" sends from address C, and with C as the
                       value of each perClient header the request does not carry
  --rate N/s           instead of --requests: N requests a second, evenly spaced from time 0
  --for DURATION       how long --rate sends (Go duration: 10s, 2m, 1m30s)
  --method M           method of the --rate requests (default GET)
  --path P             path of the --rate requests (default /)
  --header K=V         a header of the --rate requests; repeatable
  --clients N          spread the --rate requests over N clients in turn (10.0.0.1, 10.0.0.2,
                       ...), each sending from its address and with it as perClient headers;
                       without, every request comes from 10.0.0.1
  --envoy VERSION      the mesh's Envoy (default ${DEFAULT_ENVOY}, Istio ${NEWEST_ISTIO}'s): 1.31 and later
                       refill continuously, 1.30 adds tokensPerFill at each fillInterval
  --replicas N         also show each bucket's rate on one Pod and on N Pods with sidecars
                       together (buckets are per proxy: N Pods admit N times the rate); with
                       spec.global the requests go to the N Pods in turn, each proxy's local
                       filter first, and one engine counts the global limits for all of them
  --header content-type=application/grpc makes the requests gRPC calls: a rejection is
                       HTTP 200 with grpc-status 8 (or 14 with spec.grpcStatus Unavailable)
  --json               one JSON line a request instead of the table; with --replicas, then
                       one line a bucket: {"bucket","perPod","replicas","workload"}
  --svg FILE           also draw tokens left and admitted/rejected requests of each bucket that
                       a request reached, over time; - writes the SVG alone to stdout and the
                       report to stderr
  --render             print the EnvoyFilter the operator would apply (YAML; with spec.global, once
                       the rate limit engine is Ready), and nothing else;
                       for a Kyma RateLimit or an Envoy Gateway policy, the RateLimit to apply
                       instead
  -h, --help           show this help

Exit status: 0 done; 2 invalid arguments, RateLimit or requests (the RateLimit's message is the one
the operator would put in its status); 1 a file could not be read or written.`;

/** One request line (after `count` is expanded). */
export interface TrafficRequest {
  t: number;
  /** The HTTP method; GET when absent. */
  method?: string;
  path: string;
  headers: Record<string, string>;
  /** Who sends it: its address, and its value of per-client headers it does not carry. */
  client?: string;
}

/** Parsed arguments. */
export interface Options {
  file: string;
  traffic: { requests: string } | {
    rateHz: number;
    forMs: number;
    method?: string;
    path: string;
    headers: Record<string, string>;
    clients?: number;
  };
  json: boolean;
  svg?: string;
  /** The Envoy the proxy runs. */
  envoy: EnvoyBehaviour;
  /** Pods with sidecars the rates are shown for, when asked. */
  replicas?: number;
}

/** Parsed arguments (traffic to run, or a RateLimit to render), help, or a usage error. */
export type ParsedArgs =
  | { ok: true; options: Options }
  | { ok: true; render: { file: string } }
  | { ok: false; help: true }
  | { ok: false; help?: false; error: string };

const FLAGS = {
  file: { type: "string", short: "f", once: true },
  requests: { type: "string", once: true },
  rate: { type: "string" },
  for: { type: "string" },
  method: { type: "string" },
  path: { type: "string" },
  header: { type: "string", multiple: true },
  clients: { type: "string" },
  json: { type: "boolean" },
  svg: { type: "string", once: true },
  envoy: { type: "string" },
  replicas: { type: "string" },
  render: { type: "boolean" },
} as const satisfies Record<string, FlagSpec>;

/** The most `--replicas` takes. */
export const MAX_REPLICAS = 999999;

/** Requests `--rate` may generate at most. */
export const MAX_REQUESTS = 1_000_000;

/** Parses `N/s` into requests a second. */
export function parseRate(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)\/s$/.exec(text);
  const n = m ? Number(m[1]) : NaN;
  // So many digits that the number is Infinity is no rate either.
  return n > 0 && Number.isFinite(n) ? n : undefined;
}

/**
 * Why a request's header names (`names`) cannot be sent, or undefined: a name given twice (HTTP
 * compares names without case, and a request here carries each once), or `__proto__`, which a
 * JavaScript object of headers drops.
 */
export function headerNamesProblem(names: readonly string[]): string | undefined {
  const seen = new Map<string, string>();
  for (const name of names) {
    if (name === "__proto__") return `header name "__proto__" is not taken here`;
    const before = seen.get(name.toLowerCase());
    if (before === name) return `header ${JSON.stringify(name)} given twice`;
    if (before !== undefined) {
      return `header ${JSON.stringify(name)} given twice (as ${
        JSON.stringify(before)
      } too: names are compared without case)`;
    }
    seen.set(name.toLowerCase(), name);
  }
  return undefined;
}

/** Reads the command line. */
export function parseCommandLine(args: string[]): ParsedArgs {
  let parsed;
  try {
    parsed = parseFlags(args, FLAGS);
  } catch (err) {
    if (err instanceof UsageError) return { ok: false, error: err.message };
    throw err;
  }
  if (parsed.help) return { ok: false, help: true };
  const values = parsed.values;
  const fail = (error: string): ParsedArgs => ({ ok: false, error });
  if (!values.file) return fail("-f RATELIMIT.yaml is required");
  if (values.render) {
    const other = Object.keys(values).filter((k) => k !== "file" && k !== "render");
    if (other.length > 0) return fail(`--render prints the EnvoyFilter only: drop --${other[0]}`);
    return { ok: true, render: { file: values.file } };
  }
  const envoy = envoyBehaviour(values.envoy ?? DEFAULT_ENVOY);
  if (!envoy.ok) return fail(`--envoy: ${envoy.error}`);
  let replicas: number | undefined;
  if (values.replicas !== undefined) {
    replicas = /^[1-9][0-9]{0,5}$/.test(values.replicas) ? Number(values.replicas) : undefined;
    if (replicas === undefined) {
      return fail(
        `--replicas ${
          JSON.stringify(values.replicas)
        } is not a whole number from 1 to ${MAX_REPLICAS}`,
      );
    }
  }
  if (values.svg === "") return fail("--svg needs a file name (or - for stdout)");
  const common = {
    file: values.file,
    json: values.json ?? false,
    svg: values.svg,
    envoy: envoy.value,
    ...(replicas !== undefined ? { replicas } : {}),
  };
  if (values.requests !== undefined) {
    const traffic = [
      values.rate,
      values.for,
      values.method,
      values.path,
      values.header,
      values.clients,
    ];
    if (traffic.some((v) => v !== undefined)) {
      return fail(
        "--requests cannot be combined with --rate, --for, --method, --path, --header or --clients",
      );
    }
    if (values.requests === "-" && values.file === "-") {
      return fail("-f - and --requests - cannot both read stdin");
    }
    return { ok: true, options: { ...common, traffic: { requests: values.requests } } };
  }
  if (values.rate === undefined || values.for === undefined) {
    return fail("give --requests FILE.jsonl, or --rate N/s with --for DURATION");
  }
  const rateHz = parseRate(values.rate);
  if (rateHz === undefined) {
    return fail(`--rate ${JSON.stringify(values.rate)} is not a rate like 10/s`);
  }
  const forMs = parseGoDuration(values.for);
  if (forMs === undefined) {
    return fail(
      `--for ${
        goDurationProblem(
          values.for,
          `${JSON.stringify(values.for)} is not a duration like 30s or 2m`,
        )
      }`,
    );
  }
  if ((rateHz * forMs) / 1000 > MAX_REQUESTS) {
    return fail(`--rate ${values.rate} for ${values.for} is more than ${MAX_REQUESTS} requests`);
  }
  const method = values.method;
  if (method !== undefined && !METHOD.test(method)) {
    return fail(`--method ${JSON.stringify(method)} is not an HTTP method like GET or POST`);
  }
  const path = values.path ?? "/";
  if (!path.startsWith("/")) return fail(`--path ${JSON.stringify(path)} does not start with /`);
  const headers: Record<string, string> = {};
  for (const h of values.header ?? []) {
    const eq = h.indexOf("=");
    if (eq <= 0) return fail(`--header ${JSON.stringify(h)} is not K=V`);
    const problem = headerNamesProblem([...Object.keys(headers), h.slice(0, eq)]);
    if (problem !== undefined) return fail(`--header ${JSON.stringify(h)}: ${problem}`);
    headers[h.slice(0, eq)] = h.slice(eq + 1);
  }
  let clients: number | undefined;
  if (values.clients !== undefined) {
    clients = /^[1-9][0-9]{0,3}$/.test(values.clients) ? Number(values.clients) : undefined;
    if (clients === undefined || clients > MAX_CLIENTS_FLAG) {
      return fail(
        `--clients ${
          JSON.stringify(values.clients)
        } is not a whole number from 1 to ${MAX_CLIENTS_FLAG}`,
      );
    }
  }
  return {
    ok: true,
    options: {
      ...common,
      traffic: {
        rateHz,
        forMs,
        ...(method !== undefined ? { method } : {}),
        path,
        headers,
        ...(clients ? { clients } : {}),
      },
    },
  };
}

/**
 * An HTTP method as a request line has it: a token (RFC 9110), any method and not only the nine a
 * rule can list, so that a preview shows that `PROPFIND` or `get` matches no rule's methods.
 */
export const METHOD = new RegExp(`^${HTTP_TOKEN_CHARS}{1,32}$`);

/** The most `--clients` takes. */
export const MAX_CLIENTS_FLAG = 1000;

/** The address of the k-th client (from 1): 10.0.0.1, 10.0.0.2, ... 10.0.1.0, ... */
export function clientAddress(k: number): string {
  return `10.0.${k >> 8}.${k & 255}`;
}

/** The requests of `--rate N/s --for D`: at floor(k × 1000 / N) ms while before D. */
export function rateRequests(
  rateHz: number,
  forMs: number,
  path: string,
  headers: Record<string, string>,
  clients?: number,
  method?: string,
): TrafficRequest[] {
  const out: TrafficRequest[] = [];
  for (let k = 0;; k++) {
    const t = Math.floor((k * 1000) / rateHz);
    if (t >= forMs) return out;
    out.push({
      t,
      ...(method !== undefined ? { method } : {}),
      path,
      headers,
      ...(clients ? { client: clientAddress((k % clients) + 1) } : {}),
    });
  }
}
