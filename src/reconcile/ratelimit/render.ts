/**
 * What a valid RateLimit becomes: its EnvoyFilter (local token buckets, descriptors, the stats
 * its proxies export; the global filter and its route entries once the engine is Ready), and the
 * spec's judgement as a whole (parse, validate, render, size), kept for a frozen RateLimit.
 */
import {
  type GlobalSpec,
  parseRateLimit,
  type RateLimit,
  type RateLimitSpec,
} from "../../api/ratelimit.ts";
import {
  ENGINE_DOMAIN_ANNOTATION,
  GLOBAL_ENGINE_CLUSTER,
  GLOBAL_ENGINE_TIMEOUT,
  GLOBAL_STAGE,
  globalDomain,
  RATELIMIT_FILTER,
  RATELIMIT_TYPE,
} from "../../api/global_engine.ts";
import {
  HCM_TYPE,
  LOCAL_RATELIMIT_FILTER,
  LOCAL_RATELIMIT_TYPE,
  RATE_LIMITED_BODY,
  RATE_LIMITED_FLAG,
  ROUTE_METADATA_KEY,
  SHADOW_HEADER,
  SHADOW_HEADER_VALUE,
} from "../../api/envoy.ts";
import { protoFillInterval } from "../../api/duration.ts";
import { apiVersionOf, RESOURCES } from "../../api/resources.ts";
import type { KubeObject } from "../../api/object.ts";
import { namesGateway, type ProxyContext } from "../../api/mesh.ts";
import { managedLabels } from "../labels.ts";
import type { FilterLimits } from "./input.ts";
import { DEFAULT_MAX_CLIENTS } from "../../api/ratelimit_bounds.ts";
import { errorLines } from "../../api/issues.ts";
import { storedBytes } from "../../api/json.ts";
import { validateSpec } from "./validate.ts";
import { textDigest } from "../hash.ts";
import { globalEntries, type Json, ruleEntries } from "./entries.ts";
import { engineDomainOfEntries } from "./engine_config.ts";
import { STAT_PREFIX } from "./stats.ts";

// The stats live in stats.ts (the start-up graph needs them, not the renderer); their names stay
// importable from here.
export { exportsLimitStats, LIMIT_STATS, STAT_PREFIX, statsHint } from "./stats.ts";

// The entries live in entries.ts; their names stay importable from here.
export {
  canOverlap,
  GLOBAL_DEFAULT_RULE,
  globalEntries,
  type Json,
  ruleEntries,
} from "./entries.ts";

// The Istio EnvoyFilter a valid RateLimit becomes (docs/design.md "RateLimit bucket selection").
//
// Envoy APIs used, by file in envoyproxy/envoy:
// - `api/envoy/extensions/filters/http/local_ratelimit/v3/local_rate_limit.proto` (LocalRateLimit):
//   stat_prefix, token_bucket, filter_enabled / filter_enforced (RuntimeFractionalPercent, both 0%
//   by default "for safety"), descriptors, enable_x_ratelimit_headers (OFF | DRAFT_VERSION_03),
//   always_consume_default_token_bucket (default true), status (envoy.type.v3.HttpStatus),
//   request_headers_to_add_when_not_enforced (HeaderValueOption, at most 10),
//   rate_limited_as_resource_exhausted (field 15, envoyproxy/envoy#29279, in Envoy since 1.29).
// - `api/envoy/type/v3/token_bucket.proto`: max_tokens (uint32 > 0), tokens_per_fill, fill_interval
//   (Duration, protobuf JSON `"30s"`).
// - `api/envoy/extensions/common/ratelimit/v3/ratelimit.proto`: LocalRateLimitDescriptor.
// - `api/envoy/config/route/v3/route_components.proto`: Route.rate_limits, RateLimit.Action
//   .HeaderValueMatch {descriptor_key, descriptor_value, expect_match, headers}, HeaderMatcher
//   {name, string_match, invert_match}.

/**
 * Annotation on the EnvoyFilter: the RateLimit generation it was rendered from. The filter on the
 * cluster is the record of what is enforced, so after a restart the operator still knows which
 * generation a refused update left in force without keeping any state of its own.
 */
export const GENERATION_ANNOTATION = "gateway.platform-project.io/ratelimit-generation";

/**
 * Annotation on the EnvoyFilter: what it enforces, in short (`Shadow 10/30s 1/120s`: the mode,
 * then tokensPerFill/fill_interval of the default bucket and of each rule's), for people reading
 * the filter with kubectl. The operator does not read it back: the limits in force are read from
 * the filter's patches (input.ts `filterLimits`), which its cache keeps for that.
 */
export const LIMITS_ANNOTATION = "gateway.platform-project.io/ratelimit-limits";

/** The annotation's value for what a filter renders. */
export function limitsRecord(limits: FilterLimits): string {
  let text = limits.shadow ? "Shadow" : "Enforcing";
  for (const b of limits.buckets) text += ` ${b.tokensPerFill}/${b.fillInterval}`;
  return text;
}

/** The annotation's words for a global part: ` global Allow 100/Minute default 1000/Hour`. */
function globalRecord(global: GlobalSpec): string {
  let text = ` global ${global.failureMode}`;
  for (const r of global.rules ?? []) text += ` ${r.limit.requests}/${r.limit.unit}`;
  const d = global.default?.limit;
  return d ? `${text} default ${d.requests}/${d.unit}` : text;
}

/** The generation an EnvoyFilter was rendered from (its annotation), if it says. */
export function renderedGeneration(ef: KubeObject): number | undefined {
  const text = ef.metadata.annotations?.[GENERATION_ANNOTATION];
  if (text === undefined || !/^(0|[1-9][0-9]{0,15})$/.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}

type LocalSpec = NonNullable<RateLimitSpec["local"]>;

function tokenBucket(b: LocalSpec["defaultBucket"]): Json {
  return {
    max_tokens: b.maxTokens,
    tokens_per_fill: b.tokensPerFill,
    fill_interval: protoFillInterval(b.fillInterval),
  };
}

const ALWAYS = { numerator: 100, denominator: "HUNDRED" };

const NEVER = { numerator: 0, denominator: "HUNDRED" };

/** The LocalRateLimit config merged into the routes (typed, as Envoy loads an Any). */
function routeConfig(spec: RateLimitSpec, local: LocalSpec, descriptors: Json[]): Json {
  return {
    "@type": LOCAL_RATELIMIT_TYPE,
    stat_prefix: STAT_PREFIX,
    token_bucket: tokenBucket(local.defaultBucket),
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
    ...(local.buckets.some((r) => r.perClient !== undefined)
      ? { max_dynamic_descriptors: local.maxClients ?? DEFAULT_MAX_CLIENTS }
      : {}),
  };
}

// The global part (issue #43): Envoy's ratelimit filter, asking the engine over gRPC, and the
// route entries whose descriptors it sends.
//
// Envoy APIs used, by file in envoyproxy/envoy:
// - `api/envoy/extensions/filters/http/ratelimit/v3/rate_limit.proto` (RateLimit): domain, stage,
//   timeout (default 20ms), failure_mode_deny, rate_limited_as_resource_exhausted,
//   rate_limit_service, enable_x_ratelimit_headers (OFF | DRAFT_VERSION_03),
//   disable_x_envoy_ratelimited_header, filter_enforced (Envoy 1.34 and later, envoyproxy/envoy
//   #38653; before, the field is unknown to Envoy and dropped, so shadow mode must also reach the
//   engine's own `shadow_mode`).
// - `api/envoy/config/ratelimit/v3/rls.proto` (RateLimitServiceConfig): grpc_service,
//   transport_api_version V3.
// - `api/envoy/config/route/v3/route_components.proto`: RateLimit.stage (0 to 10), RateLimit.Action
//   .GenericKey, the same actions as the local rules'.
// Which route entries each filter reads: see GLOBAL_STAGE (src/api/global_engine.ts).

/** The ratelimit filter's config (listener level): which engine it asks, for which domain. */
function globalFilterConfig(spec: RateLimitSpec, global: GlobalSpec, domain: string): Json {
  return {
    "@type": RATELIMIT_TYPE,
    domain,
    stage: GLOBAL_STAGE,
    timeout: GLOBAL_ENGINE_TIMEOUT,
    failure_mode_deny: global.failureMode === "Deny",
    rate_limit_service: {
      grpc_service: { envoy_grpc: { cluster_name: GLOBAL_ENGINE_CLUSTER } },
      transport_api_version: "V3",
    },
    enable_x_ratelimit_headers: spec.enableResponseHeaders ? "DRAFT_VERSION_03" : "OFF",
    // A local refusal carries no x-envoy-ratelimited; a global one neither.
    disable_x_envoy_ratelimited_header: true,
    ...(spec.grpcStatus === "ResourceExhausted"
      ? { rate_limited_as_resource_exhausted: true }
      : {}),
    // Shadow mode: the engine is asked and counts, the filter rejects nothing.
    ...(spec.enforce ? {} : {
      filter_enforced: { runtime_key: "global_rate_limit_enforced", default_value: NEVER },
    }),
  };
}

/**
 * The patch giving a global refusal the body of a local one. Envoy's ratelimit filter answers 429
 * with the engine's `raw_body`, which envoyproxy/ratelimit never sets, so its body is empty where
 * local_ratelimit's is `local_rate_limited`; the connection manager's local reply mapper, matching
 * the response flag both filters set (RL: envoyproxy/envoy source/extensions/filters/http/
 * ratelimit/ratelimit.cc and local_ratelimit.cc `setResponseFlag`), writes that body for every
 * rate-limited local reply. Local replies only: an upstream's 429 is not touched.
 */
function globalBodyPatch(context: ProxyContext): Json {
  return {
    applyTo: "NETWORK_FILTER",
    match: {
      context,
      listener: {
        filterChain: { filter: { name: "envoy.filters.network.http_connection_manager" } },
      },
    },
    patch: {
      operation: "MERGE",
      value: {
        typed_config: {
          "@type": HCM_TYPE,
          local_reply_config: {
            mappers: [{
              filter: { response_flag_filter: { flags: [RATE_LIMITED_FLAG] } },
              body: { inline_string: RATE_LIMITED_BODY },
            }],
          },
        },
      },
    },
  };
}

/** The parts of a RateLimit the EnvoyFilter holds. */
export interface RenderParts {
  /** Render the global part (the engine is installed and Ready); otherwise it is left out. */
  global: boolean;
}

/** What a filter renders without the global part: the engine is not known to be Ready. */
export const LOCAL_ONLY: RenderParts = { global: false };

/** The patch inserting HTTP filter `name` with `config` before the router of `context`. */
function insertFilter(context: ProxyContext, name: string, config: Json): Json {
  return {
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
    patch: { operation: "INSERT_BEFORE", value: { name, typed_config: config } },
  };
}

/**
 * The digest a filter's route patch carries in the route's metadata (`ROUTE_METADATA_KEY`): of the
 * rest of that patch's value (its `rate_limits` and per-route local rate limit config), the
 * RateLimit's uid and the generation rendered, so a proxy whose config dump shows it holds exactly
 * what this render of this RateLimit merges into its routes, whatever changed (a rule's path or
 * headers, per-client or shared, descriptors, response headers) and whatever stayed (the same
 * buckets). `textDigest` (53 bits) of the JSON as rendered: the renderer writes its keys in one
 * order, so equal renders give equal text.
 */
export function routeDigest(rl: RateLimit, routeValue: Json): string {
  return textDigest(
    JSON.stringify([rl.metadata.uid ?? null, rl.metadata.generation ?? null, routeValue]),
  );
}

/**
 * `routeDigest` of a frozen RateLimit's render, kept in its `Known` (its route value depends only
 * on the object and whether the global part is rendered): a steady-state reconcile does not hash
 * the route again.
 */
function knownRouteDigest(
  rl: RateLimit,
  routeValue: Json,
  global: boolean,
  known: Known | undefined,
): string {
  if (known?.routeDigest !== undefined && (known.routeDigestGlobal === true) === global) {
    return known.routeDigest;
  }
  const digest = routeDigest(rl, routeValue);
  if (known) {
    known.routeDigest = digest;
    if (global) known.routeDigestGlobal = true;
    else delete known.routeDigestGlobal;
  }
  return digest;
}

/**
 * The EnvoyFilter of a valid RateLimit: same name and namespace, owned by it, patching each of
 * `contexts` (scope.ts `patchContexts` chooses them from the Pods; without, a selector that names
 * a gateway by convention gets GATEWAY and any other SIDECAR_INBOUND). Its global part only when
 * `parts.global` says the engine is there to ask.
 */
export function renderEnvoyFilter(
  rl: RateLimit,
  contexts: readonly ProxyContext[] = [
    namesGateway(rl.spec.selectorLabels) ? "GATEWAY" : "SIDECAR_INBOUND",
  ],
  parts: RenderParts = LOCAL_ONLY,
  known?: Known,
): KubeObject {
  const namespace = rl.metadata.namespace ?? "default";
  const spec = rl.spec;
  const local = spec.local;
  const global = parts.global ? spec.global : undefined;
  const rules = local?.buckets ?? [];
  const rateLimits: Json[] = [];
  const descriptors: Json[] = [];
  ruleEntries(rules).forEach(({ actions, entries }, i) => {
    rateLimits.push({ actions });
    descriptors.push({ entries, token_bucket: tokenBucket(rules[i].bucket) });
  });
  const globalLists = global ? globalEntries(global) : [];
  for (const { actions } of globalLists) rateLimits.push({ stage: GLOBAL_STAGE, actions });
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
    buckets: local
      ? [local.defaultBucket, ...rules.map((r) => r.bucket)].map((b, i) => ({
        bucket: i === 0 ? "default" : String(i - 1),
        maxTokens: b.maxTokens,
        tokensPerFill: b.tokensPerFill,
        fillInterval: protoFillInterval(b.fillInterval),
      }))
      : [],
  }) + (global ? globalRecord(global) : "");
  const domain = globalDomain(namespace, rl.metadata.name);
  const annotations = {
    annotations: {
      ...(generation !== undefined ? { [GENERATION_ANNOTATION]: String(generation) } : {}),
      [LIMITS_ANNOTATION]: limits,
      // The engine's configuration of this domain, from the same entries as the route actions.
      ...(global
        ? {
          [ENGINE_DOMAIN_ANNOTATION]: JSON.stringify(
            engineDomainOfEntries(domain, global, globalLists, !spec.enforce),
          ),
        }
        : {}),
    },
  };
  const routeValue: Json = {
    // No rules, no `rate_limits`: an entry with `actions: []` makes Envoy reject the whole route
    // config (Kyma api-gateway #2380).
    ...(rateLimits.length > 0 ? { route: { rate_limits: rateLimits } } : {}),
    ...(local
      ? {
        typed_per_filter_config: {
          [LOCAL_RATELIMIT_FILTER]: routeConfig(spec, local, descriptors),
        },
      }
      : {}),
  };
  // Last, so that the digest is of everything else the routes get (computed once a render).
  routeValue.metadata = {
    filter_metadata: {
      [ROUTE_METADATA_KEY]: { digest: knownRouteDigest(rl, routeValue, !!global, known) },
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
        // The local filter, inert at listener level (filter_enabled defaults to 0%); the route
        // config below turns it on. Inserted before the router, which must stay last.
        ...(local
          ? [insertFilter(context, LOCAL_RATELIMIT_FILTER, {
            "@type": LOCAL_RATELIMIT_TYPE,
            stat_prefix: STAT_PREFIX,
          })]
          : []),
        // After the local filter (inserted before the router after it, so between them): a
        // request the local limits refuse never reaches the engine, and is not counted.
        ...(global
          ? [
            insertFilter(context, RATELIMIT_FILTER, globalFilterConfig(spec, global, domain)),
            globalBodyPatch(context),
          ]
          : []),
        {
          // Forwarding routes only. A redirect or direct-response route has no `route` action;
          // merging `route: {rate_limits}` into it would give it a second action (or replace its
          // redirect with a route to no cluster), and Envoy would reject the whole route config.
          applyTo: "HTTP_ROUTE",
          match: { context, routeConfiguration: { vhost: { route: { action: "ROUTE" } } } },
          patch: { operation: "MERGE", value: routeValue },
        },
      ]),
    },
  };
}

// What a RateLimit's spec alone decides: whether it parses and validates, and the EnvoyFilter it
// renders to. Nothing else of the cluster goes in.
//
// The parsed spec and the rendered filter are not remembered between reconciles: keeping them
// (about 9 KB a RateLimit) for its life would cost about 90 MB at ten thousand RateLimits
// (bench/RESULTS.md, issue 14), more than the operator's whole memory target. What is remembered
// of a frozen RateLimit object is small (`Known`).

/**
 * The largest EnvoyFilter the operator applies, in bytes as the API server stores it: 1 MiB, two
 * thirds of etcd's default request limit (`--max-request-bytes`, 1.5 MiB), which the whole write
 * must fit, metadata and managedFields included. The CRD's bounds keep every valid RateLimit's
 * filter below it (tests/reconcile/ratelimit_bounds_test.ts); this is the defence if they did not.
 */
export const ENVOYFILTER_MAX_BYTES = 1024 * 1024;

/**
 * The stored bytes of a filter, or a bound above them (`exact` false): a character of its JSON
 * takes at most 6 bytes stored (`<` is written `\u003c`), so a filter of at most `maxBytes / 6`
 * characters fits without counting.
 */
interface StoredSize {
  bytes: number;
  exact: boolean;
}

function storedSize(desired: KubeObject, maxBytes: number): StoredSize {
  const bound = (JSON.stringify(desired) ?? "").length * 6;
  return bound <= maxBytes
    ? { bytes: bound, exact: false }
    : { bytes: storedBytes(desired), exact: true };
}

/**
 * What judging a frozen RateLimit object found that judging it again would find: its problems
 * (none, for a valid spec), and the stored size of the filter it last rendered with the namespace
 * and contexts it was rendered for. The cache hands out the objects it keeps deep-frozen and
 * replaces them on a change, never changes them, so a steady-state reconcile is given the object
 * the last one was. About 200 bytes a RateLimit (bench/RESULTS.md), gone with its object.
 */
export interface Known {
  problems: readonly string[];
  /** The namespace and contexts of the last filter rendered, and its size (flat: smaller). */
  namespace?: string;
  contexts?: readonly ProxyContext[];
  size?: StoredSize;
  /** True when the last filter rendered had its global part. */
  global?: true;
  /** The route digest of its last render (`routeDigest`), and whether that had the global part. */
  routeDigest?: string;
  routeDigestGlobal?: true;
}

/** By frozen RateLimit object: pure in effect, since a frozen object cannot change. */
const known = new WeakMap<object, Known>();

/** Problems of a valid spec, shared by every `Known`. */
const NONE: readonly string[] = Object.freeze([]);

/** `raw` when it may key `known`: an object frozen as the cache freezes what it keeps. */
function frozen(raw: unknown): object | undefined {
  return raw !== null && typeof raw === "object" && Object.isFrozen(raw) ? raw : undefined;
}

function sameContexts(
  a: readonly ProxyContext[] | undefined,
  b: readonly ProxyContext[] | undefined,
): boolean {
  return a === b || (a !== undefined && b !== undefined && a.length === b.length &&
    a.every((c, i) => c === b[i]));
}

/**
 * Why `desired`, rendered into `namespace` for `contexts`, cannot be applied for its size (over
 * `maxBytes` as stored), or undefined. A frozen RateLimit's size is kept (`Known`).
 */
function sizeProblem(
  desired: KubeObject,
  maxBytes: number,
  memo: Known | undefined,
  namespace: string,
  contexts: readonly ProxyContext[] | undefined,
  parts: RenderParts,
): string | undefined {
  const kept = memo && memo.namespace === namespace && sameContexts(memo.contexts, contexts) &&
      (memo.global === true) === parts.global
    ? memo.size
    : undefined;
  const size = kept && (kept.exact || kept.bytes <= maxBytes)
    ? kept
    : storedSize(desired, maxBytes);
  if (memo && size !== kept) {
    memo.namespace = namespace;
    memo.contexts = contexts && [...contexts];
    memo.size = size;
    if (parts.global) memo.global = true;
    else delete memo.global;
  }
  return size.exact && size.bytes > maxBytes
    ? `spec: the EnvoyFilter it renders has ${size.bytes} bytes, over the limit of ${maxBytes} (etcd stores at most 1.5 MiB an object)`
    : undefined;
}

/** A spec that cannot be applied (and why), or the parsed RateLimit and its EnvoyFilter. */
export type SpecVerdict =
  | { ok: false; problems: string[] }
  | { ok: true; rl: RateLimit; desired: KubeObject };

/** A RateLimit parsed and valid, or why not: the first half of judging a spec (`parseSpec`). */
export type ParsedSpec =
  | { ok: false; problems: string[] }
  | {
    ok: true;
    rl: RateLimit;
    /** What is kept of its object, when that is frozen (`Known`), for `renderSpec`. */
    known?: Known;
  };

/**
 * Parses `raw` and validates it (unless a frozen `raw` is known to be valid): the parsed
 * RateLimit, or its problems.
 */
export function parseSpec(raw: unknown): ParsedSpec {
  const key = frozen(raw);
  const memo = key && known.get(key);
  if (memo && memo.problems.length > 0) return { ok: false, problems: [...memo.problems] };
  // Status is the operator's own output: judging it would make the verdict depend on itself.
  // A spec field this operator does not know (a CRD newer than the operator) is refused: ignored,
  // a rule's narrowing field (methods, say) would leave a broader limit than meant. A frozen
  // object known valid was looked at for them already.
  const parsed = parseRateLimit(
    raw !== null && typeof raw === "object" && !Array.isArray(raw)
      ? { ...raw, status: undefined }
      : raw,
    { unknown: memo ? "strip" : "spec" },
  );
  const problems = !parsed.ok
    ? errorLines(parsed.errors)
    : memo
    ? NONE
    : validateSpec(parsed.value.spec);
  let kept = memo;
  if (key && !kept) {
    kept = {
      problems: problems.length > 0 ? problems : NONE,
      namespace: undefined,
      contexts: undefined,
      size: undefined,
    };
    known.set(key, kept);
  }
  if (!parsed.ok || problems.length > 0) return { ok: false, problems: [...problems] };
  return kept ? { ok: true, rl: parsed.value, known: kept } : { ok: true, rl: parsed.value };
}

/**
 * Renders a parsed RateLimit's EnvoyFilter into `namespace`, patching `contexts` (scope.ts
 * `patchContexts` chooses them from the Pods; default as `renderEnvoyFilter` chooses without
 * Pods); a filter over `maxBytes` (default `ENVOYFILTER_MAX_BYTES`) is refused.
 */
export function renderSpec(
  parsed: { rl: RateLimit; known?: Known },
  namespace: string,
  contexts?: readonly ProxyContext[],
  maxBytes: number = ENVOYFILTER_MAX_BYTES,
  parts: RenderParts = LOCAL_ONLY,
): SpecVerdict {
  const { rl } = parsed;
  const desired = renderEnvoyFilter(
    { ...rl, metadata: { ...rl.metadata, namespace } },
    contexts,
    parts,
    parsed.known,
  );
  const tooLarge = sizeProblem(desired, maxBytes, parsed.known, namespace, contexts, parts);
  return tooLarge === undefined ? { ok: true, rl, desired } : { ok: false, problems: [tooLarge] };
}

/**
 * Parses, validates and renders a RateLimit (`parseSpec`, then `renderSpec` with the default
 * contexts): for a caller without Pods.
 */
export function judgeSpec(raw: unknown, namespace: string, maxBytes?: number): SpecVerdict {
  const parsed = parseSpec(raw);
  return parsed.ok ? renderSpec(parsed, namespace, undefined, maxBytes) : parsed;
}
