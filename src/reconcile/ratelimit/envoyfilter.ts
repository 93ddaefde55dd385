/**
 * The Istio EnvoyFilter a valid RateLimit becomes (docs/design.md "RateLimit bucket selection").
 *
 * Envoy APIs used, by file in envoyproxy/envoy:
 * - `api/envoy/extensions/filters/http/local_ratelimit/v3/local_rate_limit.proto` (LocalRateLimit):
 *   stat_prefix, token_bucket, filter_enabled / filter_enforced (RuntimeFractionalPercent, both 0%
 *   by default "for safety"), descriptors, enable_x_ratelimit_headers (OFF | DRAFT_VERSION_03),
 *   always_consume_default_token_bucket (default true), status (envoy.type.v3.HttpStatus),
 *   request_headers_to_add_when_not_enforced (HeaderValueOption, at most 10),
 *   rate_limited_as_resource_exhausted (field 15, envoyproxy/envoy#29279, in Envoy since 1.29).
 * - `api/envoy/type/v3/token_bucket.proto`: max_tokens (uint32 > 0), tokens_per_fill, fill_interval
 *   (Duration, protobuf JSON `"30s"`).
 * - `api/envoy/extensions/common/ratelimit/v3/ratelimit.proto`: LocalRateLimitDescriptor.
 * - `api/envoy/config/route/v3/route_components.proto`: Route.rate_limits, RateLimit.Action
 *   .HeaderValueMatch {descriptor_key, descriptor_value, expect_match, headers}, HeaderMatcher
 *   {name, string_match, invert_match}.
 */
import type { RateLimit, RateLimitSpec } from "../../api/ratelimit.ts";
import { protoFillInterval } from "../../api/duration.ts";
import { apiVersionOf, RESOURCES } from "../../api/resources.ts";
import type { KubeObject } from "../../api/object.ts";
import {
  LOCAL_RATELIMIT_FILTER,
  LOCAL_RATELIMIT_TYPE,
  SHADOW_HEADER,
  SHADOW_HEADER_VALUE,
} from "../../api/envoy.ts";
import { namesGateway, type ProxyContext } from "../../api/mesh.ts";
import { managedLabels } from "../labels.ts";
import { LIMITS_ANNOTATION, limitsRecord } from "./inforce.ts";
import { DEFAULT_MAX_CLIENTS } from "../../api/ratelimit_bounds.ts";
import { type Json, ruleEntries } from "./descriptors.ts";

/**
 * Annotation on the EnvoyFilter: the RateLimit generation it was rendered from. The filter on the
 * cluster is the record of what is enforced, so after a restart the operator still knows which
 * generation a refused update left in force without keeping any state of its own.
 */
export const GENERATION_ANNOTATION = "gateway.platform-project.io/ratelimit-generation";

/** The generation an EnvoyFilter was rendered from (its annotation), if it says. */
export function renderedGeneration(ef: KubeObject): number | undefined {
  const text = ef.metadata.annotations?.[GENERATION_ANNOTATION];
  if (text === undefined || !/^(0|[1-9][0-9]{0,15})$/.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}

function tokenBucket(b: RateLimitSpec["local"]["defaultBucket"]): Json {
  return {
    max_tokens: b.maxTokens,
    tokens_per_fill: b.tokensPerFill,
    fill_interval: protoFillInterval(b.fillInterval),
  };
}

const ALWAYS = { numerator: 100, denominator: "HUNDRED" };
const NEVER = { numerator: 0, denominator: "HUNDRED" };

/**
 * The `stat_prefix` of every filter we generate: Envoy counts its requests under
 * `<prefix>.http_local_rate_limit.*`, which the monitoring dashboard reads.
 */
export const STAT_PREFIX = "http_local_rate_limiter";

/** The LocalRateLimit config merged into the routes (typed, as Envoy loads an Any). */
function routeConfig(spec: RateLimitSpec, descriptors: Json[]): Json {
  return {
    "@type": LOCAL_RATELIMIT_TYPE,
    stat_prefix: STAT_PREFIX,
    token_bucket: tokenBucket(spec.local.defaultBucket),
    filter_enabled: { runtime_key: "local_rate_limit_enabled", default_value: ALWAYS },
    // Shadow mode: every request is counted (enabled 100%), none rejected (enforced 0%); Envoy
    // adds `request_headers_to_add_when_not_enforced` to a request it would have rejected.
    filter_enforced: {
      runtime_key: "local_rate_limit_enforced",
      default_value: spec.enforce ? ALWAYS : NEVER,
    },
    ...(spec.enforce ? {} : {
      request_headers_to_add_when_not_enforced: [{
        header: { key: SHADOW_HEADER, value: SHADOW_HEADER_VALUE },
        // One value whatever the client sent: the upstream must not see "true,true".
        append_action: "OVERWRITE_IF_EXISTS_OR_ADD",
      }],
    }),
    enable_x_ratelimit_headers: spec.enableResponseHeaders ? "DRAFT_VERSION_03" : "OFF",
    always_consume_default_token_bucket: false,
    status: { code: "TooManyRequests" },
    // A gRPC call gets HTTP 200 and a grpc-status; without this Envoy maps 429 to UNAVAILABLE (14),
    // which gRPC clients retry, adding load to a workload already over its limit.
    ...(spec.grpcStatus === "ResourceExhausted"
      ? { rate_limited_as_resource_exhausted: true }
      : {}),
    ...(descriptors.length > 0 ? { descriptors } : {}),
    // Each filter config reads its own bound (envoyproxy/gateway#9973): set on the route's.
    ...(spec.local.buckets.some((r) => r.perClient !== undefined)
      ? { max_dynamic_descriptors: spec.local.maxClients ?? DEFAULT_MAX_CLIENTS }
      : {}),
  };
}

/**
 * The EnvoyFilter of a valid RateLimit: same name and namespace, owned by it, patching each of
 * `contexts` (reach.ts `patchContexts` chooses them from the Pods; without, a selector that names
 * a gateway by convention gets GATEWAY and any other SIDECAR_INBOUND).
 */
export function renderEnvoyFilter(
  rl: RateLimit,
  contexts: readonly ProxyContext[] = [
    namesGateway(rl.spec.selectorLabels) ? "GATEWAY" : "SIDECAR_INBOUND",
  ],
): KubeObject {
  const namespace = rl.metadata.namespace ?? "default";
  const spec = rl.spec;
  const rules = spec.local.buckets;
  const rateLimits: Json[] = [];
  const descriptors: Json[] = [];
  ruleEntries(rules).forEach(({ actions, entries }, i) => {
    rateLimits.push({ actions });
    descriptors.push({ entries, token_bucket: tokenBucket(rules[i].bucket) });
  });
  const owner = rl.metadata.uid
    ? {
      ownerReferences: [{
        apiVersion: rl.apiVersion,
        kind: rl.kind,
        name: rl.metadata.name,
        uid: rl.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      }],
    }
    : {};
  const generation = rl.metadata.generation;
  const limits = limitsRecord({
    shadow: !spec.enforce,
    buckets: [spec.local.defaultBucket, ...rules.map((r) => r.bucket)].map((b, i) => ({
      bucket: i === 0 ? "default" : String(i - 1),
      tokensPerFill: b.tokensPerFill,
      fillInterval: protoFillInterval(b.fillInterval),
    })),
  });
  const annotations = {
    annotations: {
      ...(generation !== undefined ? { [GENERATION_ANNOTATION]: String(generation) } : {}),
      [LIMITS_ANNOTATION]: limits,
    },
  };
  return {
    apiVersion: apiVersionOf(RESOURCES.EnvoyFilter),
    kind: RESOURCES.EnvoyFilter.kind,
    metadata: {
      name: rl.metadata.name,
      namespace,
      labels: managedLabels("ratelimit"),
      ...annotations,
      ...owner,
    },
    spec: {
      workloadSelector: { labels: { ...spec.selectorLabels } },
      configPatches: contexts.flatMap((context) => [
        {
          // The filter itself, inert at listener level (filter_enabled defaults to 0%); the route
          // config below turns it on. Inserted before the router, which must stay last.
          applyTo: "HTTP_FILTER",
          match: {
            context,
            listener: {
              filterChain: {
                filter: {
                  name: "envoy.filters.network.http_connection_manager",
                  subFilter: { name: "envoy.filters.http.router" },
                },
              },
            },
          },
          patch: {
            operation: "INSERT_BEFORE",
            value: {
              name: LOCAL_RATELIMIT_FILTER,
              typed_config: {
                "@type": LOCAL_RATELIMIT_TYPE,
                stat_prefix: STAT_PREFIX,
              },
            },
          },
        },
        {
          // Forwarding routes only. A redirect or direct-response route has no `route` action;
          // merging `route: {rate_limits}` into it would give it a second action (or replace its
          // redirect with a route to no cluster), and Envoy would reject the whole route config.
          applyTo: "HTTP_ROUTE",
          // Forwarding routes only: merged into a redirect or direct_response route, `route:`
          // makes a route without a cluster, and Envoy rejects the whole route configuration.
          match: { context, routeConfiguration: { vhost: { route: { action: "ROUTE" } } } },
          patch: {
            operation: "MERGE",
            value: {
              // No rules, no `rate_limits`: an entry with `actions: []` makes Envoy reject the
              // whole route config (Kyma api-gateway #2380).
              ...(rateLimits.length > 0 ? { route: { rate_limits: rateLimits } } : {}),
              typed_per_filter_config: { [LOCAL_RATELIMIT_FILTER]: routeConfig(spec, descriptors) },
            },
          },
        },
      ]),
    },
  };
}
