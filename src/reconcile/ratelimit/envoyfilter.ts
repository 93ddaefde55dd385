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
import type { BucketRule, RateLimit, RateLimitSpec } from "../../api/ratelimit.ts";
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

type Json = Record<string, unknown>;
type Matcher = Json;

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
 * Header matchers of a rule's headers: names in lower case (Envoy's form), values exact; and a
 * per-client header must be present, so that a request without it is not the rule's and goes on
 * to later rules (its `request_headers` action would yield no descriptor).
 */
function headerMatchers(rule: BucketRule): Matcher[] {
  const key = rule.perClient?.header?.toLowerCase();
  const own: (Matcher & { name: string })[] = Object.entries(rule.headers ?? {})
    .map(([name, value]) => ({ name: name.toLowerCase(), string_match: { exact: value } }));
  if (key !== undefined && !own.some((m) => m.name === key)) {
    own.push({ name: key, present_match: true });
  }
  return own.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * The action that names a per-client rule's client, and its config entry: the empty value is
 * Envoy's wildcard (dynamic descriptors), one bucket for each distinct value.
 */
function clientAction(rule: BucketRule): { action: Json; entry: Entry } | undefined {
  const header = rule.perClient?.header;
  if (header !== undefined) {
    return {
      action: { request_headers: { header_name: header.toLowerCase(), descriptor_key: "client" } },
      entry: { key: "client", value: "" },
    };
  }
  if (rule.perClient?.clientIP) {
    return { action: { remote_address: {} }, entry: { key: "remote_address", value: "" } };
  }
  return undefined;
}

/**
 * `:path` carries the query string, and the rule's path must match with or without one. So "path
 * matches" is a disjunction: `:path` is exactly P, or starts with `P?`. (A RE2 `safe_regex` could say
 * it in one matcher, but Envoy rejects regexes above `re2.max_program_size.error_level`, default 100,
 * so a long path would leave the filter NACKed while the RateLimit says Ready.)
 */
function pathMatchers(path: string): Matcher[] {
  return [
    { name: ":path", string_match: { exact: path } },
    { name: ":path", string_match: { prefix: `${path}?` } },
  ];
}

/** A rule as an OR of clauses, each an AND of header matchers. */
function clauses(rule: BucketRule): Matcher[][] {
  const headers = headerMatchers(rule);
  return rule.path === undefined ? [headers] : pathMatchers(rule.path).map((p) => [p, ...headers]);
}

/**
 * True when some request matches both rules: unless both have a path and the paths differ, or both
 * require one header (names compared case-insensitively) with different values, the request with
 * the path of either and the headers of both matches both. Skipping disjoint rules keeps the
 * filter small: with distinct paths, no rule needs to exclude another.
 */
export function canOverlap(a: BucketRule, b: BucketRule): boolean {
  if (a.path !== undefined && b.path !== undefined && a.path !== b.path) return false;
  const bHeaders = new Map(Object.entries(b.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  return Object.entries(a.headers ?? {}).every(([k, v]) => {
    const other = bHeaders.get(k.toLowerCase());
    return other === undefined || other === v;
  });
}

interface Entry {
  key: string;
  value: string;
}

/**
 * The actions of rule i's `rate_limits` entry and the descriptor they produce.
 *
 * Envoy builds one request descriptor per `rate_limits` entry, and only when every action of the
 * entry appends an entry; it then matches config descriptors verbatim (ordered, no partial match).
 * A `header_value_match` action appends its entry when all its matchers match (expect_match true)
 * or when they do not all match (expect_match false). So entry i requires:
 *   - rule i matches: its path, as `expect_match: false` over the two path matchers inverted
 *     (NOT(NOT exact AND NOT prefix) = exact OR prefix), and its headers, as one `expect_match: true`;
 *   - no earlier rule j matches: rule j is an OR of clauses, so NOT rule j = AND over its clauses of
 *     NOT clause, one `expect_match: false` action a clause. Only earlier rules that can match a
 *     request rule i matches need this (see `canOverlap`); for the others it always holds.
 * Hence at most one entry yields a descriptor, that of the first matching rule, and with
 * `always_consume_default_token_bucket: false` the default bucket is charged only when none does.
 */
function ruleEntry(rules: readonly BucketRule[], i: number): { actions: Json[]; entries: Entry[] } {
  const rule = rules[i];
  const actions: Json[] = [];
  const entries: Entry[] = [];
  const action = (key: string, value: string, headers: Matcher[], expectMatch: boolean) => {
    actions.push({
      header_value_match: {
        descriptor_key: key,
        descriptor_value: value,
        ...(expectMatch ? {} : { expect_match: false }),
        headers,
      },
    });
    entries.push({ key, value });
  };
  const own = headerMatchers(rule);
  if (rule.path !== undefined) {
    action(
      "rule",
      String(i),
      pathMatchers(rule.path).map((m) => ({ ...m, invert_match: true })),
      false,
    );
    if (own.length > 0) action("rule_headers", String(i), own, true);
  } else if (own.length > 0) {
    action("rule", String(i), own, true);
  } else {
    // Every request (a per-client rule by address alone): a fixed entry names the rule.
    actions.push({ generic_key: { descriptor_key: "rule", descriptor_value: String(i) } });
    entries.push({ key: "rule", value: String(i) });
  }
  for (let j = 0; j < i; j++) {
    if (!canOverlap(rules[j], rule)) continue;
    for (const clause of clauses(rules[j])) action("not_rule", String(j), clause, false);
  }
  const client = clientAction(rule);
  if (client) {
    actions.push(client.action);
    entries.push(client.entry);
  }
  return { actions, entries };
}

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
  rules.forEach((rule, i) => {
    const { actions, entries } = ruleEntry(rules, i);
    rateLimits.push({ actions });
    descriptors.push({ entries, token_bucket: tokenBucket(rule.bucket) });
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
