/**
 * The largest and the oddest RateLimits the CRD and the operator accept, built from the bounds of
 * src/api/ratelimit.ts (docs/ratelimit.md "Bounds"), and one just over each bound.
 */
import {
  HEADERS_AND_QUERY_TOO_MANY,
  HTTP_METHODS,
  MAX_BUCKET_RULES,
  MAX_GLOBAL_REQUESTS,
  MAX_GLOBAL_RULES,
  MAX_HEADER_NAME_LENGTH,
  MAX_HEADER_VALUE_LENGTH,
  MAX_HOST_LENGTH,
  MAX_LABEL_KEY_LENGTH,
  MAX_LABEL_VALUE_LENGTH,
  MAX_PATH_LENGTH,
  MAX_QUERY_NAME_LENGTH,
  MAX_QUERY_VALUE_LENGTH,
  MAX_RULE_HEADERS,
  MAX_RULE_HEADERS_AND_QUERY,
  MAX_RULE_HOSTS,
  MAX_RULE_HOSTS_LENGTH,
  MAX_SELECTOR_LABELS,
  MAX_TOKENS_LIMIT,
} from "../../src/api/ratelimit_bounds.ts";
import { DEFAULT_MESH } from "../../src/dataplane/mod.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { bucket, rateLimit } from "./ratelimit_fixtures.ts";

/**
 * Characters to fill text with: `plain` ones take a byte each where etcd stores them; `escaped`
 * ones take six (Go's JSON writes `<` and `&` as `\u003c`, `\u0026`), the most a character can.
 */
export type Fill = "plain" | "escaped";

/** `n` digits of `i`: distinct names of equal length. */
const digits = (i: number, n: number) => String(i).padStart(n, "0");

/** The most labels, each with the longest key (`prefix/name`) and value Kubernetes allows. */
export function largestSelector(): Record<string, string> {
  const nameLength = 63;
  const prefixLength = MAX_LABEL_KEY_LENGTH - nameLength - 1;
  return Object.fromEntries(
    Array.from({ length: MAX_SELECTOR_LABELS }, (_, i) => [
      `${"p".repeat(prefixLength - 4)}${digits(i, 4)}/${"n".repeat(nameLength)}`,
      "v".repeat(MAX_LABEL_VALUE_LENGTH),
    ]),
  );
}

/**
 * The RateLimit whose EnvoyFilter is the largest the bounds allow: the most labels, and the most
 * rules, all with the same longest path, every method (the longest `:method` regex), the most hosts
 * with the longest regex (wildcards of one-letter labels: every dot escaped) and the most headers of
 * the longest names and values (or `queryParams` of them query parameters, the longest). Each
 * rule's header names are its own, so no rule covers another (all are used) while every rule can
 * overlap every earlier one: each rule's entry repeats all earlier rules' matchers. `on` the gateway,
 * it selects the ingress gateway in its namespace instead of a workload.
 */
export function largestRateLimit(
  fill: Fill,
  on: "workload" | "gateway" = "workload",
  queryParams = 0,
): KubeObject {
  const [pathChar, nameChar, valueChar] = fill === "plain" ? ["p", "h", "v"] : ["<", "&", ">"];
  const most = bucket(MAX_TOKENS_LIMIT, MAX_TOKENS_LIMIT, "999999999s");
  const path = `/${pathChar.repeat(MAX_PATH_LENGTH - 1)}`;
  const headers = (rule: number) =>
    Object.fromEntries(
      Array.from({ length: MAX_RULE_HEADERS_AND_QUERY - queryParams }, (_, h) => [
        `${nameChar.repeat(MAX_HEADER_NAME_LENGTH - 4)}${digits(rule, 2)}${digits(h, 2)}`,
        valueChar.repeat(MAX_HEADER_VALUE_LENGTH),
      ]),
    );
  // The longest query matchers: every character one whose regex is longest (`.`: `(?:\.|%2[eE])`);
  // `<`, `>` and `&` are no query parameter's.
  const query = (rule: number) =>
    Object.fromEntries(
      Array.from({ length: queryParams }, (_, q) => [
        `${".".repeat(MAX_QUERY_NAME_LENGTH - 4)}${digits(rule, 2)}${digits(q, 2)}`,
        ".".repeat(MAX_QUERY_VALUE_LENGTH),
      ]),
    );
  // `*.` and one-letter labels (every dot escaped in the regex), each host its own letter: as
  // many as fit in MAX_RULE_HOSTS_LENGTH, each as long as they can be together (four of 127 give a
  // longer regex than two of 253: each term adds its `|` and `[^:]+`).
  const count = Math.min(MAX_RULE_HOSTS, Math.floor(MAX_RULE_HOSTS_LENGTH / 3));
  const each = Math.min(MAX_HOST_LENGTH, Math.floor(MAX_RULE_HOSTS_LENGTH / count));
  const hosts = Array.from({ length: count }, (_, k) => {
    const letter = String.fromCharCode(97 + k);
    return `*.${`${letter}.`.repeat(Math.floor((each - 1) / 2) - 1)}${letter}`;
  });
  const rl = rateLimit({
    name: `largest-${fill}`,
    selectorLabels: largestSelector(),
    enableResponseHeaders: true,
    defaultBucket: most,
    buckets: Array.from(
      { length: MAX_BUCKET_RULES },
      (_, i) => ({
        path,
        methods: [...HTTP_METHODS],
        hosts,
        ...(queryParams < MAX_RULE_HEADERS_AND_QUERY ? { headers: headers(i) } : {}),
        ...(queryParams > 0 ? { queryParams: query(i) } : {}),
        bucket: most,
      }),
    ),
  });
  // The longest name and namespace the API server allows, and the longest generation.
  rl.metadata.name = `${"n".repeat(253 - `-${fill}`.length)}-${fill}`;
  rl.metadata.namespace = "s".repeat(63);
  rl.metadata.generation = Number.MAX_SAFE_INTEGER;
  if (on === "gateway") {
    // One label fewer, and the gateway's own: with no Pod to say, a selector with a gateway's
    // conventional label goes on the ingress gateway.
    const labels = Object.entries(largestSelector()).slice(1);
    (rl.spec as { selectorLabels: Record<string, string> }).selectorLabels = Object.fromEntries([
      ...labels,
      ["app", DEFAULT_MESH.gateway.labels.app],
    ]);
    rl.metadata.namespace = DEFAULT_MESH.gateway.namespace;
  }
  return rl;
}

/**
 * The largest RateLimits with a global part: the largest RateLimit's rules (all overlapping, of
 * the longest text) shared out between the parts in every way the operator allows, MAX_BUCKET_RULES
 * together with the global default counting as one (and, with no local part at all, every global
 * rule). Each global rule has the largest limit and the rules' matching of `largestRateLimit`.
 */
export function largestWithGlobal(fill: Fill): { what: string; rateLimit: KubeObject }[] {
  const out: { what: string; rateLimit: KubeObject }[] = [];
  const limit = { requests: MAX_GLOBAL_REQUESTS, unit: "Day" };
  const make = (local: number | undefined, rules: number, withDefault: boolean) => {
    const rl = largestRateLimit(fill);
    const spec = rl.spec as {
      local?: {
        buckets: {
          path: string;
          methods: string[];
          hosts: string[];
          headers: Record<string, string>;
        }[];
      };
      global?: unknown;
    };
    const all = spec.local!.buckets;
    if (local === undefined) delete spec.local;
    else spec.local!.buckets = all.slice(0, local);
    spec.global = {
      ...(rules > 0
        ? {
          rules: all.slice(0, rules).map((r) => ({
            path: r.path,
            methods: r.methods,
            hosts: r.hosts,
            headers: r.headers,
            limit,
          })),
        }
        : {}),
      ...(withDefault ? { default: { limit } } : {}),
      failureMode: "Deny",
    };
    out.push({
      what: `${local ?? "no"} local and ${rules} global rules${
        withDefault ? " and a default" : ""
      }`,
      rateLimit: rl,
    });
  };
  for (let local = 0; local < MAX_BUCKET_RULES; local++) {
    make(local, MAX_BUCKET_RULES - local, false);
    make(local, MAX_BUCKET_RULES - local - 1, true);
  }
  make(undefined, MAX_GLOBAL_RULES, false);
  return out;
}

/**
 * Valid RateLimits with odd but allowed text: every character HTTP allows in a header name, and
 * quotes, backslashes, `<>&`, percent signs, non-ASCII letters and emoji in paths and values.
 */
export function oddRateLimits(): { name: string; rateLimit: KubeObject }[] {
  const b = bucket(1, 1, "1s");
  const odd = (name: string, buckets: unknown[]) => ({
    name,
    rateLimit: rateLimit({ name, defaultBucket: bucket(1, 1, "1s"), buckets }),
  });
  return [
    odd("odd-header-names", [
      { headers: { "!#$%&'*+-.^_`|~": "x", "X-UPPER": "y" }, bucket: b },
      { headers: { "0123456789abcdefghijklmnopqrstuvwxyz": "" }, bucket: b },
    ]),
    odd("odd-paths", [
      { path: "/a b".replace(" ", "%20"), bucket: b },
      { path: "/<script>&\"'\\`{}|^", bucket: b },
      { path: "/ünïcödé/日本/🙂", bucket: b },
      { path: "/", bucket: b },
      { path: "//double//slashes/./..", bucket: b },
    ]),
    odd("odd-values", [
      { headers: { "x-a": '"quoted" \\back\\ <tag> & amp' }, bucket: b },
      { headers: { "x-a": "ünïcödé 日本 🙂 \u2028\u2029" }, bucket: b },
      { headers: { "x-a": " leading and trailing spaces " }, bucket: b },
      { headers: { "x-a": "" }, bucket: b },
    ]),
  ];
}

/** A bound: a RateLimit at it (valid) and one just over it, and what the refusal says. */
export interface BoundCase {
  what: string;
  at: KubeObject;
  over: KubeObject;
  /** The field error of `over`, as the operator's message has it. */
  says: string;
  /** The operator holds this bound, not the CRD: the API server stores `over`. */
  operatorOnly?: true;
}

const mapOf = (n: number, key = (i: number) => `k${i}`, value = "v") =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [key(i), value]));

/** One case a bound of docs/ratelimit.md "Bounds". */
export function boundCases(): BoundCase[] {
  const b = bucket(1, 1, "30s");
  const withRules = (rules: unknown[]) => rateLimit({ buckets: rules });
  const rules = (n: number) => Array.from({ length: n }, (_, i) => ({ path: `/p${i}`, bucket: b }));
  const withHeaders = (headers: Record<string, string>) => withRules([{ headers, bucket: b }]);
  const labelKey = (n: number) => `${"p".repeat(n - 64)}/${"n".repeat(63)}`;
  const tokens = (n: number) => rateLimit({ defaultBucket: bucket(n, 1, "30s") });
  const rule0 = "spec.local.buckets[0]";
  const globalLimit = (requests: number) => ({ requests, unit: "Minute" });
  const globalRules = (n: number) =>
    Array.from({ length: n }, (_, i) => ({ path: `/g${i}`, limit: globalLimit(1) }));
  return [
    {
      what: "rules",
      at: withRules(rules(MAX_BUCKET_RULES)),
      over: withRules(rules(MAX_BUCKET_RULES + 1)),
      says: `spec.local.buckets: must have at most ${MAX_BUCKET_RULES} entries`,
    },
    {
      what: "path length",
      at: withRules([{ path: `/${"🙂".repeat(MAX_PATH_LENGTH - 1)}`, bucket: b }]),
      over: withRules([{ path: `/${"a".repeat(MAX_PATH_LENGTH)}`, bucket: b }]),
      says: `${rule0}.path: must have at most ${MAX_PATH_LENGTH} characters`,
    },
    {
      what: "headers of a rule",
      at: withHeaders(mapOf(MAX_RULE_HEADERS)),
      over: withHeaders(mapOf(MAX_RULE_HEADERS + 1)),
      says:
        `${rule0}.headers: must have at most ${MAX_RULE_HEADERS} entries; ${rule0}: ${HEADERS_AND_QUERY_TOO_MANY}`,
    },
    {
      what: "headers and query parameters of a rule together",
      at: withRules([{ headers: mapOf(2), queryParams: mapOf(2), bucket: b }]),
      over: withRules([{ headers: mapOf(2), queryParams: mapOf(3), bucket: b }]),
      says: `${rule0}: ${HEADERS_AND_QUERY_TOO_MANY}`,
    },
    {
      what: "query parameter name length",
      at: withRules([{ queryParams: { ["q".repeat(MAX_QUERY_NAME_LENGTH)]: "v" }, bucket: b }]),
      over: withRules([{
        queryParams: { ["q".repeat(MAX_QUERY_NAME_LENGTH + 1)]: "v" },
        bucket: b,
      }]),
      says:
        `${rule0}.queryParams: query parameter names must have at most ${MAX_QUERY_NAME_LENGTH} characters`,
    },
    {
      what: "query parameter value length",
      at: withRules([{ queryParams: { q: ".".repeat(MAX_QUERY_VALUE_LENGTH) }, bucket: b }]),
      over: withRules([{ queryParams: { q: "v".repeat(MAX_QUERY_VALUE_LENGTH + 1) }, bucket: b }]),
      says: `${rule0}.queryParams.q: must have at most ${MAX_QUERY_VALUE_LENGTH} characters`,
    },
    {
      what: "header name length",
      at: withHeaders({ ["h".repeat(MAX_HEADER_NAME_LENGTH)]: "v" }),
      over: withHeaders({ ["h".repeat(MAX_HEADER_NAME_LENGTH + 1)]: "v" }),
      says: `${rule0}.headers: header names must have at most ${MAX_HEADER_NAME_LENGTH} characters`,
    },
    {
      what: "header value length",
      at: withHeaders({ "x-a": "🙂".repeat(MAX_HEADER_VALUE_LENGTH) }),
      over: withHeaders({ "x-a": "v".repeat(MAX_HEADER_VALUE_LENGTH + 1) }),
      says: `${rule0}.headers["x-a"]: must have at most ${MAX_HEADER_VALUE_LENGTH} characters`,
    },
    {
      what: "selector labels",
      at: rateLimit({ selectorLabels: mapOf(MAX_SELECTOR_LABELS) }),
      over: rateLimit({ selectorLabels: mapOf(MAX_SELECTOR_LABELS + 1) }),
      says: `spec.selectorLabels: must have at most ${MAX_SELECTOR_LABELS} entries`,
    },
    {
      what: "label key length",
      at: rateLimit({ selectorLabels: { [labelKey(MAX_LABEL_KEY_LENGTH)]: "v" } }),
      over: rateLimit({ selectorLabels: { [labelKey(MAX_LABEL_KEY_LENGTH + 1)]: "v" } }),
      says: `spec.selectorLabels: label keys must have at most ${MAX_LABEL_KEY_LENGTH} characters`,
    },
    {
      what: "label value length",
      at: rateLimit({ selectorLabels: { app: "v".repeat(MAX_LABEL_VALUE_LENGTH) } }),
      over: rateLimit({ selectorLabels: { app: "v".repeat(MAX_LABEL_VALUE_LENGTH + 1) } }),
      says: `spec.selectorLabels.app: must have at most ${MAX_LABEL_VALUE_LENGTH} characters`,
    },
    {
      what: "tokens",
      at: tokens(MAX_TOKENS_LIMIT),
      over: tokens(MAX_TOKENS_LIMIT + 1),
      says: `spec.local.defaultBucket.maxTokens: ${
        MAX_TOKENS_LIMIT + 1
      } is above the maximum ${MAX_TOKENS_LIMIT}`,
    },
    {
      what: "global rules",
      at: rateLimit({ global: { rules: globalRules(MAX_GLOBAL_RULES) } }),
      over: rateLimit({ global: { rules: globalRules(MAX_GLOBAL_RULES + 1) } }),
      says: `spec.global.rules: must have at most ${MAX_GLOBAL_RULES} entries`,
    },
    {
      what: "rules of both parts together",
      at: rateLimit({
        buckets: rules(4),
        global: { rules: globalRules(3), default: { limit: globalLimit(1) } },
      }),
      over: rateLimit({
        buckets: rules(5),
        global: { rules: globalRules(3), default: { limit: globalLimit(1) } },
      }),
      says:
        `spec.global has 3 rules and a default and spec.local.buckets 5: at most ${MAX_BUCKET_RULES} rules in both together (the global default counts as one)`,
      operatorOnly: true,
    },
    {
      what: "global requests",
      at: rateLimit({ global: { default: { limit: globalLimit(MAX_GLOBAL_REQUESTS) } } }),
      over: rateLimit({ global: { default: { limit: globalLimit(MAX_GLOBAL_REQUESTS + 1) } } }),
      says: `spec.global.default.limit.requests: ${
        MAX_GLOBAL_REQUESTS + 1
      } is above the maximum ${MAX_GLOBAL_REQUESTS}`,
    },
    {
      what: "fillInterval",
      at: rateLimit({ defaultBucket: bucket(1, 1, "999999999s") }),
      over: rateLimit({ defaultBucket: bucket(1, 1, "1000000000s") }),
      says:
        'spec.local.defaultBucket.fillInterval: "1000000000s" is not a whole number of seconds or minutes like 30s or 1m (at most 999999999s or 9999999m)',
    },
  ];
}
