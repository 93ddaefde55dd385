/**
 * Envoy's local rate limit filter config, read from protobuf JSON the way Envoy would load it:
 * `api/envoy/extensions/filters/http/local_ratelimit/v3/local_rate_limit.proto` (LocalRateLimit),
 * `api/envoy/type/v3/token_bucket.proto`, `api/envoy/extensions/common/ratelimit/v3/ratelimit.proto`
 * (LocalRateLimitDescriptor) and `config/route/v3/route_components.proto` (RateLimit). Fields are
 * strict: a misspelt field is an error here as it is a NACK in Envoy. The checks Envoy makes when it
 * loads the config (fill interval floor, multiple-of rule, duplicate descriptors) are made here too.
 */
import { z } from "zod";
import { type FieldError, toFieldErrors } from "../api/issues.ts";
import type { BucketSpec } from "./bucket.ts";
import { DEFAULT_BEHAVIOUR, type EnvoyBehaviour } from "./envoy.ts";
import { DEFAULT_MAX_DYNAMIC_DESCRIPTORS } from "./dynamic.ts";
import { type Action, ActionSchema } from "./matchers.ts";

import {
  LOCAL_RATELIMIT_FILTER,
  LOCAL_RATELIMIT_TYPE,
  MIN_FILL_INTERVAL_MS,
  UINT32_MAX,
} from "../api/envoy.ts";
import type { DescriptorEntry } from "../api/envoy.ts";
export { LOCAL_RATELIMIT_FILTER, LOCAL_RATELIMIT_TYPE, MIN_FILL_INTERVAL_MS };
const TYPED_STRUCT_TYPES = [
  "type.googleapis.com/udpa.type.v1.TypedStruct",
  "type.googleapis.com/xds.type.v3.TypedStruct",
];

/** Parses a protobuf-JSON Duration (`"30s"`, `"0.050s"`) into milliseconds. */
export function parseProtoDuration(text: string): number | undefined {
  const m = /^(\d+)(?:\.(\d{1,9}))?s$/.exec(text);
  if (!m) return undefined;
  return Number(m[1]) * 1000 + (m[2] ? Number(`0.${m[2]}`) * 1000 : 0);
}

/** A protobuf-JSON Duration field. */
export const Duration = z.string().refine((s) => parseProtoDuration(s) !== undefined, {
  error: (iss) => `${JSON.stringify(iss.input)} is not a protobuf Duration like "30s"`,
});
const UInt32 = z.number().int().min(0).max(UINT32_MAX);

const TokenBucketSchema = z.strictObject({
  max_tokens: UInt32.min(1),
  tokens_per_fill: UInt32.min(1).optional(),
  fill_interval: Duration,
});

const DENOMINATORS = { HUNDRED: 100, TEN_THOUSAND: 10_000, MILLION: 1_000_000 } as const;

/** A `RuntimeFractionalPercent` field. */
export const RuntimeFractionSchema = z.strictObject({
  runtime_key: z.string().optional(),
  default_value: z.strictObject({
    numerator: UInt32,
    denominator: z.enum(["HUNDRED", "TEN_THOUSAND", "MILLION"]).optional(),
  }),
});

const APPEND_ACTIONS = [
  "APPEND_IF_EXISTS_OR_ADD",
  "ADD_IF_ABSENT",
  "OVERWRITE_IF_EXISTS_OR_ADD",
  "OVERWRITE_IF_EXISTS",
] as const;

const HeaderValueOptionSchema = z.strictObject({
  header: z.strictObject({ key: z.string().min(1), value: z.string() }),
  append_action: z.enum(APPEND_ACTIONS).optional(),
});

/** A header to add and how (`envoy.config.core.v3.HeaderValueOption`). */
export interface HeaderToAdd {
  key: string;
  value: string;
  /** Default APPEND_IF_EXISTS_OR_ADD, as the proto's. */
  appendAction: (typeof APPEND_ACTIONS)[number];
}

/** Names of `envoy.type.v3.StatusCode` values a rate limit may reply with. */
export const STATUS_NAMES: Record<string, number> = {
  BadRequest: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  TooManyRequests: 429,
  InternalServerError: 500,
  ServiceUnavailable: 503,
};

/** The LocalRateLimit fields the model reads; any other field is rejected by the strict schema. */
const LocalRateLimitSchema = z.strictObject({
  stat_prefix: z.string().min(1),
  status: z.strictObject({ code: z.union([z.enum(Object.keys(STATUS_NAMES)), UInt32]) })
    .optional(),
  token_bucket: TokenBucketSchema.optional(),
  filter_enabled: RuntimeFractionSchema.optional(),
  filter_enforced: RuntimeFractionSchema.optional(),
  response_headers_to_add: z.array(HeaderValueOptionSchema).max(10).optional(),
  request_headers_to_add_when_not_enforced: z.array(HeaderValueOptionSchema).max(10).optional(),
  rate_limited_as_resource_exhausted: z.boolean().optional(),
  // An empty value is a wildcard from Envoy 1.34 on; `loadLocalRateLimit` refuses it before. A
  // value left out is the empty string, as protobuf reads an absent string field.
  descriptors: z.array(z.strictObject({
    entries: z.array(z.strictObject({ key: z.string().min(1), value: z.string().default("") }))
      .min(1),
    token_bucket: TokenBucketSchema,
  })).optional(),
  // Field 18 (Envoy 1.34 and later): UInt32Value, `gte: 1`.
  max_dynamic_descriptors: UInt32.min(1).optional(),
  stage: z.number().int().min(0).max(10).optional(),
  local_rate_limit_per_downstream_connection: z.literal(false).optional(),
  enable_x_ratelimit_headers: z.enum(["OFF", "DRAFT_VERSION_03"]).optional(),
  always_consume_default_token_bucket: z.boolean().optional(),
});

/** A route's `rate_limits` entry (`envoy.config.route.v3.RateLimit`). */
export const RouteRateLimitSchema = z.strictObject({
  stage: z.number().int().min(0).max(10).optional(),
  disable_key: z.string().optional(),
  actions: z.array(ActionSchema).min(1),
});

/** A route `rate_limits` entry the model evaluates. */
export interface RouteRateLimit {
  stage: number;
  actions: Action[];
  /**
   * `disable_key`, when not empty. The local rate limit filter skips such an entry whatever the
   * key (proxyconfig.ts `compiledOf`); only the global rate limit filter asks the runtime.
   */
  disableKey?: string;
}

/** A descriptor and its bucket. */
export interface DescriptorBucket {
  entries: DescriptorEntry[];
  bucket: BucketSpec;
}

/** A LocalRateLimit config, loaded and checked. */
export interface LocalRateLimit {
  statPrefix: string;
  status: number;
  /** The default bucket; Envoy lets a listener-level config leave it out (then nothing is limited). */
  tokenBucket?: BucketSpec;
  /** Share of requests the filter looks at: 0 or 1 (fractions in between are not modelled). */
  enabled: boolean;
  /** Share of limited requests actually rejected: 0 or 1. */
  enforced: boolean;
  responseHeadersToAdd: Array<{ key: string; value: string }>;
  /** Added to a request the filter would reject but does not enforce on. */
  requestHeadersWhenNotEnforced: HeaderToAdd[];
  /** The grpc-status of a rejected gRPC call: RESOURCE_EXHAUSTED when set, else UNAVAILABLE. */
  grpcResourceExhausted: boolean;
  descriptors: DescriptorBucket[];
  /** Buckets kept for each wildcard descriptor (`max_dynamic_descriptors`, default 20). */
  maxDynamicDescriptors: number;
  stage: number;
  xRateLimitHeaders: boolean;
  alwaysConsumeDefault: boolean;
}

/** A result with errors naming fields under `prefix`. */
export type Loaded<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

/** Errors of a config read at `prefix`, their paths under it. */
export function prefixed(errors: FieldError[], prefix: string): FieldError[] {
  return errors.map((e) => ({
    path: e.path === "(root)" ? prefix : `${prefix}${e.path.startsWith("[") ? "" : "."}${e.path}`,
    message: e.message,
  }));
}

function bucketOf(b: z.output<typeof TokenBucketSchema>): BucketSpec {
  return {
    maxTokens: b.max_tokens,
    tokensPerFill: b.tokens_per_fill ?? 1,
    fillIntervalMs: parseProtoDuration(b.fill_interval) ?? 0,
  };
}

/**
 * The fraction as 0 or 1; undefined for a fraction strictly between (Envoy would roll dice).
 * `absent` is the field's default: local_ratelimit's filter_enabled and filter_enforced are 0%
 * "for safety", the ratelimit filter's 100%.
 */
export function fraction(
  f: z.output<typeof RuntimeFractionSchema> | undefined,
  absent: 0 | 1 = 0,
): number | undefined {
  if (!f) return absent;
  const share = f.default_value.numerator / DENOMINATORS[f.default_value.denominator ?? "HUNDRED"];
  return share <= 0 ? 0 : share >= 1 ? 1 : undefined;
}

/**
 * Unwraps `typed_config` / `typed_per_filter_config` values of type `want` (the LocalRateLimit's
 * unless given): typed `@type`, or a TypedStruct.
 */
export function unwrapTyped(
  value: unknown,
  path: string,
  want: string = LOCAL_RATELIMIT_TYPE,
): Loaded<Record<string, unknown>> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { ok: false, errors: [{ path, message: "expected an object with @type" }] };
  }
  const { "@type": type, ...rest } = value as Record<string, unknown>;
  if (type === want) return { ok: true, value: rest };
  if (typeof type === "string" && TYPED_STRUCT_TYPES.includes(type)) {
    const { type_url: url, value: inner } = rest;
    if (url === want && inner && typeof inner === "object") {
      return { ok: true, value: inner as Record<string, unknown> };
    }
    return {
      ok: false,
      errors: [{ path: `${path}.type_url`, message: `expected ${want}` }],
    };
  }
  return {
    ok: false,
    errors: [{
      path: `${path}["@type"]`,
      message: `expected ${want}, got ${JSON.stringify(type)}`,
    }],
  };
}

/**
 * The checks Envoy makes when it loads token buckets (local_ratelimit_impl.cc). `multipleOfRule`:
 * Envoy up to v1.33.0 refuses a descriptor fill_interval that is not a multiple of the default's
 * (its timer refilled descriptors on every N-th tick); v1.34.0 removed the timer and the check.
 */
function bucketErrors(cfg: LocalRateLimit, path: string, multipleOfRule: boolean): FieldError[] {
  const errors: FieldError[] = [];
  const floor = (b: BucketSpec, at: string, what: string) => {
    if (b.fillIntervalMs < MIN_FILL_INTERVAL_MS) {
      errors.push({ path: at, message: `local rate limit ${what}fill timer must be >= 50ms` });
    }
  };
  if (cfg.tokenBucket) {
    floor(cfg.tokenBucket, `${path}.token_bucket.fill_interval`, "token bucket ");
  }
  const seen = new Set<string>();
  cfg.descriptors.forEach((d, i) => {
    const at = `${path}.descriptors[${i}]`;
    floor(d.bucket, `${at}.token_bucket.fill_interval`, "descriptor token bucket ");
    const base = cfg.tokenBucket?.fillIntervalMs;
    if (multipleOfRule && base && d.bucket.fillIntervalMs % base !== 0) {
      errors.push({
        path: `${at}.token_bucket.fill_interval`,
        message: "local rate descriptor limit is not a multiple of token bucket fill timer",
      });
    }
    const key = JSON.stringify(d.entries.map((e) => [e.key, e.value]));
    if (seen.has(key)) {
      // Envoy names the descriptor (`LocalDescriptor::toString`: `k=v` joined with ", ").
      const named = d.entries.map((e) => `${e.key}=${e.value}`).join(", ");
      errors.push({
        path: at,
        message: `duplicate descriptor in the local rate descriptor: ${named}`,
      });
    }
    seen.add(key);
  });
  return errors;
}

/**
 * Loads a LocalRateLimit from its fields (after `unwrapTyped`) as `envoy` would. `perRoute` adds
 * Envoy's rule for typed_per_filter_config: "local rate limit token bucket must be set for per
 * filter configs".
 */
export function loadLocalRateLimit(
  fields: Record<string, unknown>,
  path: string,
  perRoute: boolean,
  envoy: EnvoyBehaviour = DEFAULT_BEHAVIOUR,
): Loaded<LocalRateLimit> {
  const parsed = LocalRateLimitSchema.safeParse(fields);
  if (!parsed.success) {
    return { ok: false, errors: prefixed(toFieldErrors(parsed.error, fields), path) };
  }
  const p = parsed.data;
  const enabled = fraction(p.filter_enabled);
  const enforced = fraction(p.filter_enforced);
  const errors: FieldError[] = [];
  if (enabled === undefined) {
    errors.push({
      path: `${path}.filter_enabled`,
      message: "fractions between 0 and 100% are not modelled",
    });
  }
  if (enforced === undefined) {
    errors.push({
      path: `${path}.filter_enforced`,
      message: "fractions between 0 and 100% are not modelled",
    });
  }
  if (perRoute && !p.token_bucket) {
    errors.push({
      path: `${path}.token_bucket`,
      message: "local rate limit token bucket must be set for per filter configs",
    });
  }
  const code = p.status?.code;
  const status = typeof code === "string" ? STATUS_NAMES[code] : code;
  const cfg: LocalRateLimit = {
    statPrefix: p.stat_prefix,
    // Envoy: "If the status is less than 400, 429 is used" (local_rate_limit.proto, status).
    status: status !== undefined && status >= 400 ? status : 429,
    tokenBucket: p.token_bucket ? bucketOf(p.token_bucket) : undefined,
    enabled: enabled === 1,
    enforced: enforced === 1,
    responseHeadersToAdd: (p.response_headers_to_add ?? []).map((h) => h.header),
    requestHeadersWhenNotEnforced: (p.request_headers_to_add_when_not_enforced ?? []).map((h) => ({
      ...h.header,
      appendAction: h.append_action ?? "APPEND_IF_EXISTS_OR_ADD",
    })),
    grpcResourceExhausted: p.rate_limited_as_resource_exhausted ?? false,
    descriptors: (p.descriptors ?? []).map((d) => ({
      entries: d.entries,
      bucket: bucketOf(d.token_bucket),
    })),
    maxDynamicDescriptors: p.max_dynamic_descriptors ?? DEFAULT_MAX_DYNAMIC_DESCRIPTORS,
    stage: p.stage ?? 0,
    xRateLimitHeaders: p.enable_x_ratelimit_headers === "DRAFT_VERSION_03",
    // The proto's default is true: the default bucket is charged even when a descriptor matched.
    alwaysConsumeDefault: p.always_consume_default_token_bucket ?? true,
  };
  errors.push(...bucketErrors(cfg, path, envoy.multipleOfRule));
  if (!envoy.dynamicDescriptors) errors.push(...wildcardErrors(cfg, path, envoy));
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value: cfg };
}

/** Before Envoy 1.34 a descriptor entry's value had `min_len: 1`: a wildcard is refused. */
function wildcardErrors(cfg: LocalRateLimit, path: string, envoy: EnvoyBehaviour): FieldError[] {
  return cfg.descriptors.flatMap((d, i) =>
    d.entries.flatMap((e, j) =>
      e.value === ""
        ? [{
          path: `${path}.descriptors[${i}].entries[${j}].value`,
          message:
            `value length must be at least 1 runes (Envoy ${envoy.version} has no wildcard descriptors; they came in 1.34)`,
        }]
        : []
    )
  );
}

/** Loads a route's `rate_limits` list. */
export function loadRouteRateLimits(value: unknown, path: string): Loaded<RouteRateLimit[]> {
  const parsed = z.array(RouteRateLimitSchema).safeParse(value);
  if (!parsed.success) {
    return { ok: false, errors: prefixed(toFieldErrors(parsed.error, value), path) };
  }
  return {
    ok: true,
    value: parsed.data.map((r) => ({
      stage: r.stage ?? 0,
      actions: r.actions,
      ...(r.disable_key ? { disableKey: r.disable_key } : {}),
    })),
  };
}
