/**
 * Envoy's global rate limit filter (`envoy.filters.http.ratelimit`) as the model reads and runs it:
 * its config (`api/envoy/extensions/filters/http/ratelimit/v3/rate_limit.proto`), the descriptors
 * it sends (the route's `rate_limits` entries of its stage, `populateRateLimitDescriptors`) and what
 * it does with the engine's answer (`source/extensions/filters/http/ratelimit/ratelimit.cc`
 * `Filter::complete`): OK goes on; OVER_LIMIT, when enforced, is a local reply with
 * `rate_limited_status` (429) and response flag RL; an error (the engine down, Redis down, no
 * answer within `timeout`) goes on with `failure_mode_deny` false and is a local reply with
 * `status_on_error` (500) otherwise. Not modelled: its `x-ratelimit-*` response headers (refused
 * nowhere: the model's answer carries the engine's remaining count instead), per-route configs of
 * the filter, `request_type` other than `both`, runtime overrides (`ratelimit.<disable_key>.
 * http_filter_enabled` is taken at its default, 100%: a `disable_key` disables nothing).
 */
import { z } from "zod";
import { type FieldError, toFieldErrors } from "../api/issues.ts";
import {
  Duration,
  fraction,
  type Loaded,
  parseProtoDuration,
  prefixed,
  RuntimeFractionSchema,
  STATUS_NAMES,
} from "./envoyconfig.ts";
import type { EngineResult } from "./engine.ts";

const StatusSchema = z.strictObject({
  code: z.union([z.enum(Object.keys(STATUS_NAMES)), z.number().int().min(0)]),
});

/** The RateLimit (filter) fields the model reads; any other is refused by the strict schema. */
const GlobalRateLimitSchema = z.strictObject({
  domain: z.string().min(1),
  stage: z.number().int().min(0).max(10).optional(),
  request_type: z.literal("both").optional(),
  timeout: Duration.optional(),
  failure_mode_deny: z.boolean().optional(),
  rate_limited_as_resource_exhausted: z.boolean().optional(),
  rate_limit_service: z.strictObject({
    grpc_service: z.strictObject({
      envoy_grpc: z.strictObject({ cluster_name: z.string().min(1) }),
      timeout: Duration.optional(),
    }),
    transport_api_version: z.literal("V3"),
  }),
  enable_x_ratelimit_headers: z.enum(["OFF", "DRAFT_VERSION_03"]).optional(),
  disable_x_envoy_ratelimited_header: z.boolean().optional(),
  rate_limited_status: StatusSchema.optional(),
  status_on_error: StatusSchema.optional(),
  filter_enabled: RuntimeFractionSchema.optional(),
  filter_enforced: RuntimeFractionSchema.optional(),
});

/** A global rate limit filter's config, loaded. */
export interface GlobalRateLimit {
  domain: string;
  stage: number;
  /** How long it waits for the engine (Envoy's default 20 ms). */
  timeoutMs: number;
  failureModeDeny: boolean;
  /** The cluster of the engine it asks. */
  cluster: string;
  grpcResourceExhausted: boolean;
  xEnvoyRateLimited: boolean;
  rateLimitedStatus: number;
  statusOnError: number;
  /** filter_enabled (default 100%). */
  enabled: boolean;
  /** filter_enforced (default 100%): false in shadow mode. */
  enforced: boolean;
  /** How many local_ratelimit filters run before it in the chain. */
  position: number;
}

/** Envoy's default `timeout` of the filter. */
export const DEFAULT_GLOBAL_TIMEOUT_MS = 20;

function statusCode(s: z.output<typeof StatusSchema> | undefined, fallback: number): number {
  const code = typeof s?.code === "string" ? STATUS_NAMES[s.code] : s?.code;
  // rate_limit.proto: a code below 400 (or none) gives the default.
  return code !== undefined && code >= 400 ? code : fallback;
}

/** Loads a ratelimit filter's typed config (already unwrapped) at `path`. */
export function loadGlobalRateLimit(
  fields: Record<string, unknown>,
  path: string,
  position: number,
): Loaded<GlobalRateLimit> {
  const parsed = GlobalRateLimitSchema.safeParse(fields);
  if (!parsed.success) {
    return { ok: false, errors: prefixed(toFieldErrors(parsed.error, fields), path) };
  }
  const p = parsed.data;
  const enabled = fraction(p.filter_enabled, 1);
  const enforced = fraction(p.filter_enforced, 1);
  const errors: FieldError[] = [];
  for (const [name, v] of [["filter_enabled", enabled], ["filter_enforced", enforced]] as const) {
    if (v === undefined) {
      errors.push({
        path: `${path}.${name}`,
        message: "fractions between 0 and 100% are not modelled",
      });
    }
  }
  if (errors.length > 0) return { ok: false, errors };
  return {
    ok: true,
    value: {
      domain: p.domain,
      stage: p.stage ?? 0,
      timeoutMs: p.timeout === undefined
        ? DEFAULT_GLOBAL_TIMEOUT_MS
        : parseProtoDuration(p.timeout)!,
      failureModeDeny: p.failure_mode_deny ?? false,
      cluster: p.rate_limit_service.grpc_service.envoy_grpc.cluster_name,
      grpcResourceExhausted: p.rate_limited_as_resource_exhausted ?? false,
      xEnvoyRateLimited: !(p.disable_x_envoy_ratelimited_header ?? false),
      rateLimitedStatus: statusCode(p.rate_limited_status, 429),
      statusOnError: statusCode(p.status_on_error, 500),
      enabled: enabled === 1,
      enforced: enforced === 1,
      position,
    },
  };
}

/** What the global filter made of a request (beside the proxy's Decision). */
export interface GlobalDecision {
  domain: string;
  /** The engine's overall code, or ERROR when Envoy got no answer. */
  code: "OK" | "OVER_LIMIT" | "ERROR";
  /** The descriptor closest to its limit (the one Envoy's headers report): remaining and limit. */
  limitRemaining?: number;
  requestsPerUnit?: number;
  unit?: string;
  /** The engine's counters this call counted in. */
  keys?: string[];
  /** The error, for ERROR. */
  error?: string;
  /** Set when the filter, not enforcing (shadow mode), let an OVER_LIMIT request on. */
  notEnforced?: boolean;
  /** Set when the engine's shadow mode answered OK for a descriptor over its limit. */
  shadowOverLimit?: boolean;
  /** Set when the engine was down and the failure mode let the request on. */
  failedOpen?: boolean;
}

/** The answer's descriptor with the least limitRemaining among those with a limit. */
export function closestToLimit(
  result: EngineResult,
): Pick<GlobalDecision, "limitRemaining" | "requestsPerUnit" | "unit"> {
  if (!result.ok) return {};
  let best: { remaining: number; rpu: number; unit: string } | undefined;
  for (const s of result.answer.statuses) {
    if (!s.currentLimit) continue;
    const remaining = s.code === "OVER_LIMIT" ? 0 : s.limitRemaining;
    if (!best || remaining < best.remaining) {
      best = { remaining, rpu: s.currentLimit.requestsPerUnit, unit: s.currentLimit.unit };
    }
  }
  return best ? { limitRemaining: best.remaining, requestsPerUnit: best.rpu, unit: best.unit } : {};
}
