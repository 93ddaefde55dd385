/** The zod schema of RateLimit (gateway.platform-project.io/v1alpha1), docs/design.md "RateLimit". */
import { z } from "zod";
import { FILL_INTERVAL_PATTERN, notAFillInterval } from "../duration.ts";
import {
  BUCKET_PATH_PATTERN,
  BUCKET_RULE_NEEDS_MATCH,
  DEFAULT_MAX_CLIENTS,
  GLOBAL_NEEDS_LIMIT,
  GLOBAL_UNITS,
  HEADERS_AND_QUERY_TOO_MANY,
  HOST_PATTERN,
  HOSTS_TOO_LONG,
  HOSTS_TWICE,
  HTTP_METHODS,
  MAX_BUCKET_RULES,
  MAX_CLIENTS,
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
  METHODS_TWICE,
  PER_CLIENT_NEEDS_KEY,
  QUERY_VALUE_PATTERN,
  RULE_ONE_PATH,
  SPEC_NEEDS_LIMITS,
} from "../ratelimit_bounds.ts";
import { GATEWAY_GROUP } from "../groups.ts";
import { SHADOW_HEADER, SHADOW_HEADER_VALUE } from "../envoy.ts";
import { boundedMap, ConditionsSchema, integer, kindSchema } from "./common.ts";

const Tokens = (what: string) =>
  integer().min(1).max(MAX_TOKENS_LIMIT).describe(`${what}; an integer from 1 to 4294967295.`);

/** A token bucket (docs/design.md "Bucket"). */
export const BucketSchema = z.object({
  maxTokens: Tokens(
    "Capacity of the bucket: the largest burst it admits; it starts full when the limit is applied",
  ),
  tokensPerFill: Tokens(
    "Tokens regained per fillInterval, never above maxTokens. The mesh's Envoy (1.31 and later, that of every supported Istio) adds them continuously, one every fillInterval / tokensPerFill, and admits a request once a whole token has accrued; Envoy 1.30 and older added them all at once at the end of each fillInterval",
  ),
  fillInterval: z.string().regex(new RegExp(FILL_INTERVAL_PATTERN), {
    error: (iss) => notAFillInterval(String(iss.input)),
  }).describe(
    "The period in which tokensPerFill tokens are regained (continuously, see tokensPerFill): a whole positive number with the suffix s or m, e.g. 30s or 1m; at most 999999999s or 9999999m (Istio parses durations as Go does, up to about 292 years).",
  ),
});

/** What tells a per-client rule's clients apart: one request header's value, or the client IP. */
export const PerClientSchema = z.object({
  header: z.string().min(1).max(MAX_HEADER_NAME_LENGTH).optional().describe(
    `A request header (e.g. x-api-key): each distinct value gets its own bucket; a request without it is not this rule's (later rules and the default bucket take it). A name of at most ${MAX_HEADER_NAME_LENGTH} characters.`,
  ),
  clientIP: z.boolean().optional().describe(
    "true: each client address gets its own bucket. On the ingress gateway the address of the connection's peer; on a sidecar the last address of x-forwarded-for (the one the gateway adds), else the peer.",
  ),
}).refine((p) => p.header !== undefined || p.clientIP !== undefined, {
  error: PER_CLIENT_NEEDS_KEY,
}).meta({
  // The operator refuses both at once, and clientIP: false (validate.ts).
  "x-kubernetes-validations": [{
    rule: "has(self.header) || has(self.clientIP)",
    message: PER_CLIENT_NEEDS_KEY,
  }],
});

/**
 * Which requests a rule takes: its path, methods, hosts, headers and per-client key, the same for a
 * local bucket rule and a global rule (one matching, rendered by entries.ts `ruleEntries` for
 * both). `perClient` says how many clients are kept, which is where the two differ.
 */
function ruleMatchShape(clients: string) {
  return {
    path: z.string().max(MAX_PATH_LENGTH).regex(new RegExp(BUCKET_PATH_PATTERN), {
      error: (iss) =>
        `${JSON.stringify(iss.input)} is not a path like /headers (starts with /, no ? or #)`,
    }).optional().describe(
      `Request path the rule applies to, matched exactly, query string ignored; starts with / and has no ? or #; at most ${MAX_PATH_LENGTH} characters.`,
    ),
    pathPrefix: z.string().max(MAX_PATH_LENGTH).regex(new RegExp(BUCKET_PATH_PATTERN), {
      error: (iss) =>
        `${JSON.stringify(iss.input)} is not a path prefix like /api/ (starts with /, no ? or #)`,
    }).optional().describe(
      `Start of the request paths the rule applies to, compared character by character as Istio's uri prefix is: /api takes /api, /api/v1, /api?x=1 and /apiary, and /api/ takes /api/v1 but not /api. Not with path; starts with / and has no ? or #; at most ${MAX_PATH_LENGTH} characters.`,
    ),
    methods: z.array(z.enum(HTTP_METHODS)).min(1).max(HTTP_METHODS.length).refine(
      (ms) => new Set(ms).size === ms.length,
      { error: METHODS_TWICE },
    ).meta({ "x-kubernetes-list-type": "set" }).optional().describe(
      `Request methods the rule applies to, any one of them (${
        HTTP_METHODS.join(", ")
      }, compared exactly: get is not GET); each at most once. Without it, every method.`,
    ),
    hosts: z.array(
      z.string().max(MAX_HOST_LENGTH).regex(new RegExp(HOST_PATTERN), {
        error: (iss) =>
          `${
            JSON.stringify(iss.input)
          } is not a host like api.example.com or *.example.com (a DNS name in lower case, or *. and one)`,
      }),
    ).min(1).max(MAX_RULE_HOSTS).refine(
      (hs) => new Set(hs).size === hs.length,
      { error: HOSTS_TWICE },
    ).refine(
      (hs) => hs.reduce((n, h) => n + [...h].length, 0) <= MAX_RULE_HOSTS_LENGTH,
      { error: HOSTS_TOO_LONG },
    ).meta({
      "x-kubernetes-list-type": "set",
      "x-kubernetes-validations": [{
        rule: `self.map(x, size(x)).sum() <= ${MAX_RULE_HOSTS_LENGTH}`,
        message: HOSTS_TOO_LONG,
      }],
    }).optional().describe(
      `Request hosts the rule applies to, any one of them: the Host header (HTTP/2's :authority) compared case-insensitively and without a port or trailing dot, so api.example.com takes API.example.com:443; *.example.com takes any name that ends with .example.com (a.example.com, a.b.example.com), not example.com. DNS names in lower case, each at most ${MAX_HOST_LENGTH} characters and all at most ${MAX_RULE_HOSTS_LENGTH} together, 1 to ${MAX_RULE_HOSTS}, each at most once. Without it, every host.`,
    ),
    // Header names are only bounded here: a CEL rule matching the names' syntax would cost more
    // than the API server allows, and this schema admits exactly what the CRD admits. The operator
    // checks the syntax.
    headers: boundedMap(z.string().max(MAX_HEADER_VALUE_LENGTH), {
      min: 1,
      minMessage: "must list at least one header",
      max: MAX_RULE_HEADERS,
      maxKey: MAX_HEADER_NAME_LENGTH,
      keys: "header names",
    }).optional().describe(
      `Request headers and values that must all match (names case-insensitive, values exact); 1 to ${MAX_RULE_HEADERS} headers, names of at most ${MAX_HEADER_NAME_LENGTH} characters, values of at most ${MAX_HEADER_VALUE_LENGTH}.`,
    ),
    // Names, like headers', are only bounded here; the operator checks their syntax.
    queryParams: boundedMap(
      z.string().max(MAX_QUERY_VALUE_LENGTH).regex(new RegExp(QUERY_VALUE_PATTERN), {
        error: (iss) =>
          `${
            JSON.stringify(iss.input)
          } is not a query parameter's value as the workload reads it (letters, digits and -._~!$'()*,/:;=?@[], no &, +, %, # or spaces)`,
      }),
      {
        min: 1,
        minMessage: "must list at least one query parameter",
        max: MAX_RULE_HEADERS_AND_QUERY,
        maxKey: MAX_QUERY_NAME_LENGTH,
        keys: "query parameter names",
      },
    ).optional().describe(
      `Query parameters and values that must all be in the request's query string: a parameter matches when any of its occurrences has the value, names and values compared after percent-decoding (format=csv takes ?format=csv, ?a=1&format=csv, ?format=json&format=csv and ?%66ormat=%63sv), case-sensitive; an empty value takes ?name and ?name=. Names of at most ${MAX_QUERY_NAME_LENGTH} characters (letters, digits, -._~[]); values of at most ${MAX_QUERY_VALUE_LENGTH}, written decoded. At most ${MAX_RULE_HEADERS_AND_QUERY} headers and query parameters together.`,
    ),
    perClient: PerClientSchema.optional().describe(clients),
  };
}

/**
 * A rule's refinements: it must say which requests it takes, by one kind of path at most, with at
 * most MAX_RULE_HEADERS_AND_QUERY headers and query parameters together (zod, and the CRD's CEL
 * rules).
 */
const RULE_NEEDS_MATCH = {
  "x-kubernetes-validations": [{
    rule:
      "has(self.path) || has(self.pathPrefix) || has(self.methods) || has(self.hosts) || has(self.headers) || has(self.queryParams) || has(self.perClient)",
    message: BUCKET_RULE_NEEDS_MATCH,
  }, {
    rule: "!has(self.path) || !has(self.pathPrefix)",
    message: RULE_ONE_PATH,
  }, {
    rule:
      `(has(self.headers) ? size(self.headers) : 0) + (has(self.queryParams) ? size(self.queryParams) : 0) <= ${MAX_RULE_HEADERS_AND_QUERY}`,
    message: HEADERS_AND_QUERY_TOO_MANY,
  }],
};

function hasMatch(
  r: {
    path?: string;
    pathPrefix?: string;
    methods?: unknown;
    hosts?: unknown;
    headers?: unknown;
    queryParams?: unknown;
    perClient?: unknown;
  },
): boolean {
  return r.path !== undefined || r.pathPrefix !== undefined || r.methods !== undefined ||
    r.hosts !== undefined || r.headers !== undefined || r.queryParams !== undefined ||
    r.perClient !== undefined;
}

/** At most MAX_RULE_HEADERS_AND_QUERY headers and query parameters together (zod, and CEL). */
function fewMatches(r: { headers?: object; queryParams?: object }): boolean {
  const size = (m: object | undefined) => (m === undefined ? 0 : Object.keys(m).length);
  return size(r.headers) + size(r.queryParams) <= MAX_RULE_HEADERS_AND_QUERY;
}

/** At most one of a rule's path and pathPrefix (zod, and the CRD's CEL rule). */
function onePath(r: { path?: string; pathPrefix?: string }): boolean {
  return r.path === undefined || r.pathPrefix === undefined;
}

/** An additional bucket and the requests it applies to. */
export const BucketRuleSchema = z.object({
  ...ruleMatchShape(
    "Gives each client of the matching requests its own bucket, the bucket below, instead of one bucket for all (Envoy's dynamic descriptors: Envoy 1.34 and later, Istio 1.26 and later). How many clients are kept: spec.local.maxClients.",
  ),
  bucket: BucketSchema.describe(
    "The bucket used for matching requests (for each client, with perClient).",
  ),
}).refine(hasMatch, { error: BUCKET_RULE_NEEDS_MATCH }).refine(onePath, { error: RULE_ONE_PATH })
  .refine(fewMatches, { error: HEADERS_AND_QUERY_TOO_MANY }).meta(RULE_NEEDS_MATCH);

/** A global limit: requests per unit, counted in fixed windows shared by every proxy. */
export const GlobalLimitSchema = z.object({
  requests: integer().min(1).max(MAX_GLOBAL_REQUESTS).describe(
    "Requests admitted per unit, by all proxies together; an integer from 1 to 4294967295.",
  ),
  unit: z.enum(GLOBAL_UNITS).describe(
    "Second, Minute, Hour or Day: the window. Windows are fixed and aligned to the unit from the Unix epoch (a minute starts at second 0, a day at 00:00 UTC); a request counts in the window it arrives in, and a new window starts from zero.",
  ),
});

/** A global rule: the requests it takes and the limit all proxies share for them. */
export const GlobalRuleSchema = z.object({
  ...ruleMatchShape(
    "Gives each client of the matching requests its own count against the limit below, instead of one count for all. Every distinct value is counted (the engine keeps one counter a client and window), with no bound on the number of clients.",
  ),
  limit: GlobalLimitSchema.describe(
    "The limit for matching requests (for each client, with perClient), shared by every proxy.",
  ),
}).refine(hasMatch, { error: BUCKET_RULE_NEEDS_MATCH }).refine(onePath, { error: RULE_ONE_PATH })
  .refine(fewMatches, { error: HEADERS_AND_QUERY_TOO_MANY }).meta(RULE_NEEDS_MATCH);

/** The global part of a RateLimit: limits counted by the rate limit engine for all proxies. */
export const GlobalSchema = z.object({
  rules: z.array(GlobalRuleSchema).min(1).max(MAX_GLOBAL_RULES).optional().describe(
    `Global rules, tried in order; the first matching rule counts the request. 1 to ${MAX_GLOBAL_RULES}.`,
  ),
  default: z.object({
    limit: GlobalLimitSchema.describe("The limit for requests no rule matches."),
  }).optional().describe(
    "The limit for all traffic no global rule matches; without it such traffic has no global limit.",
  ),
  failureMode: z.enum(["Allow", "Deny"]).default("Allow").describe(
    "What a proxy does with a request when the engine cannot answer (unreachable, no answer within the timeout, Redis down): Allow admits it (Envoy's failure_mode_deny false), Deny refuses it with 500. Default Allow.",
  ),
}).refine((g) => g.rules !== undefined || g.default !== undefined, {
  error: GLOBAL_NEEDS_LIMIT,
}).meta({
  "x-kubernetes-validations": [{
    rule: "has(self.rules) || has(self.default)",
    message: GLOBAL_NEEDS_LIMIT,
  }],
});

/** RateLimit spec (docs/design.md). */
export const RateLimitSpecSchema = z.object({
  selectorLabels: boundedMap(z.string().max(MAX_LABEL_VALUE_LENGTH), {
    min: 1,
    minMessage: "must select at least one label",
    max: MAX_SELECTOR_LABELS,
    maxKey: MAX_LABEL_KEY_LENGTH,
    keys: "label keys",
  }).describe(
    `Labels selecting the Pods to limit: a workload's (sidecar proxies), or the ingress gateway's (Pods whose proxy runs as a router). In the mesh's root namespace a filter reaches every namespace, so there only gateway Pods may be selected. 1 to ${MAX_SELECTOR_LABELS} labels, as Istio's workload selector allows.`,
  ),
  enableResponseHeaders: z.boolean().default(false).describe(
    "When true, admitted and rejected (429) responses carry x-ratelimit-limit (maxTokens of the bucket used), x-ratelimit-remaining (whole tokens left) and, with Envoy 1.35 and later, x-ratelimit-reset (seconds until the next whole token, 0 while one is left). Default false.",
  ),
  enforce: z.boolean().default(true).describe(
    `When false, shadow mode: the limit counts requests against its buckets but rejects none; a request it would have rejected reaches the workload with the header ${SHADOW_HEADER}: ${SHADOW_HEADER_VALUE} (and its response carries the x-ratelimit headers when enableResponseHeaders is true). Kyma's RateLimit field of the same name. Switching it to true enforces the same buckets. Default true.`,
  ),
  grpcStatus: z.enum(["ResourceExhausted", "Unavailable"]).default("ResourceExhausted").describe(
    "The gRPC status a rejected gRPC call (content-type application/grpc) gets, in an HTTP 200 response with grpc-status: ResourceExhausted (8), which gRPC clients do not retry by default, or Unavailable (14), Envoy's mapping of 429, which they retry. Other requests get 429 either way. Default ResourceExhausted.",
  ),
  local: z.object({
    defaultBucket: BucketSchema.describe(
      "Bucket for all traffic no additional bucket matches. It starts full and regains tokensPerFill tokens every fillInterval, continuously (one every fillInterval / tokensPerFill).",
    ),
    buckets: z.array(BucketRuleSchema).max(MAX_BUCKET_RULES).default([]).describe(
      `Additional buckets, tried in order; the first matching rule wins. Each fillInterval must be a multiple of the default bucket's. At most ${MAX_BUCKET_RULES}.`,
    ),
    maxClients: integer().min(1).max(MAX_CLIENTS).optional().describe(
      `How many clients each perClient rule keeps a bucket for, on each proxy and route; past it the least recently seen client is dropped, and comes back to a full bucket. 1 to ${MAX_CLIENTS}; default ${DEFAULT_MAX_CLIENTS} (Envoy's max_dynamic_descriptors).`,
    ),
  }).optional().describe(
    "Local token-bucket limits: every proxy (each Pod, each gateway Pod) and every route on it (on the gateway, each VirtualService host and http route) has its own buckets.",
  ),
  global: GlobalSchema.optional().describe(
    "Global limits: fixed windows counted by the rate limit engine for every proxy together, however many Pods run. A request refused by the local limits is not counted here. Enforced only once the engine is installed and Ready (status condition GlobalEnforced).",
  ),
}).refine((s) => s.local !== undefined || s.global !== undefined, {
  error: SPEC_NEEDS_LIMITS,
}).meta({
  "x-kubernetes-validations": [{
    rule: "has(self.local) || has(self.global)",
    message: SPEC_NEEDS_LIMITS,
  }],
});

/** RateLimit status: docs/design.md shows state; the rest is this operator's (docs/design.md). */
export const RateLimitStatusSchema = z.object({
  state: z.enum(["Ready", "Error"]).optional().describe(
    "Ready when the limit is applied, Error when not.",
  ),
  description: z.string().optional().describe("What the state means for this object, in words."),
  observedGeneration: integer().min(0).optional().describe(
    "The generation the status was computed from.",
  ),
  enforcedGeneration: integer().min(0).optional().describe(
    "The generation whose limits the EnvoyFilter in place enforces; absent when no limit is in place. Below observedGeneration when a newer generation was refused and the last good one is kept.",
  ),
  podsSelected: integer().min(0).optional().describe(
    "Pods the enforced limit selects (not finished, not being deleted), in every namespace for a limit in the mesh's root namespace; absent when no limit is in place.",
  ),
  podsWithSidecar: integer().min(0).optional().describe(
    "Of podsSelected, those whose mesh proxy (an istio-proxy container or native sidecar, or the sidecar.istio.io/status annotation) applies the filter: a sidecar, or a gateway's router for a gateway limit. Only their traffic is limited.",
  ),
  mode: z.enum(["Enforcing", "Shadow"]).optional().describe(
    "What the limit in place does: Enforcing rejects requests over it; Shadow (spec.enforce false) counts them and marks them with a request header but rejects none. Absent when no limit is in place.",
  ),
  rates: z.array(z.object({
    bucket: z.string().max(16).describe(
      "default, or the rule's index in spec.local.buckets; global.<index> or global.default for a rule of spec.global.",
    ),
    perPod: z.string().max(64).optional().describe(
      "What one Pod's proxy admits over time once the burst is spent: tokensPerFill/fillInterval, e.g. 10/30s. Absent for a global rule, whose limit all Pods share.",
    ),
    workload: z.string().max(64).describe(
      "What all podsWithSidecar admit together: perPod times podsWithSidecar, e.g. 30/30s for 3 Pods (on the ingress gateway, for each route); for a global rule its limit, e.g. 100/1m, counted by the engine across every proxy in windows aligned to the clock.",
    ),
  })).max(MAX_BUCKET_RULES + 1).optional().describe(
    "Per bucket of the limit in place, the rate one Pod admits and the rate the selected Pods with a mesh proxy admit together, then each global rule's limit for the workload as a whole (once the global part is in place); absent when no limit is in place.",
  ),
  proxies: z.object({
    accepted: integer().min(0).describe(
      "Proxies that acknowledged the config istiod sent them, and istiod shows the limit in force in it.",
    ),
    rejected: integer().min(0).describe(
      "Proxies that rejected the config istiod sent them (they keep their previous config).",
    ),
    pending: integer().min(0).describe(
      "Proxies connected to istiod that have not acknowledged its last push, hold an earlier limit, or whose holdings istiod does not show the operator.",
    ),
    notConnected: integer().min(0).describe("Proxies istiod does not list as connected."),
  }).optional().describe(
    "The proxies of podsWithSidecar by what istiod says of them; absent when the operator does not ask istiod or istiod did not answer.",
  ),
  conditions: ConditionsSchema.optional().describe(
    "Ready: the limit is in place (the EnvoyFilter is stored). Enforced: every selected Pod runs a mesh proxy that applies the filter, so the limit takes effect. Accepted: istiod says every such proxy acknowledged the config holding the limit in force (False when one rejected it, Unknown when not known). GlobalEnforced, with spec.global: whether the rate limit engine enforces the global limits, read back from its Pods (True when every Ready engine Pod holds this RateLimit's domain as in force and reaches Redis; False or Unknown with the reason and the failure mode that applies meanwhile).",
  ),
});

/** A RateLimit object. */
export const RateLimitSchema = kindSchema(
  `${GATEWAY_GROUP}/v1alpha1`,
  "RateLimit",
  RateLimitSpecSchema.describe("The workload and its limits."),
  RateLimitStatusSchema,
  "RateLimit applies local token-bucket rate limits to a workload's Pods or to the mesh ingress gateway.",
);
