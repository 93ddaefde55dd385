/**
 * One Envoy proxy's local rate limiting: the config the EnvoyFilters give it, its buckets, and the
 * decision for each request (`source/extensions/filters/http/local_ratelimit/local_ratelimit.cc` and
 * `filters/common/local_ratelimit/local_ratelimit_impl.cc`), for the Envoy version of the proxy.
 *
 * Bucket scope, as in Envoy: a listener-level filter config has one limiter, shared by every route
 * of the proxy; the per-route config (`typed_per_filter_config`) is built once for each route entry
 * it is merged into, so each route entry has its own limiter and buckets.
 */
import { type BucketSpec, fillRate } from "./bucket.ts";
import { DEFAULT_BEHAVIOUR, type EnvoyBehaviour } from "./envoy.ts";
import type { LocalRateLimit } from "./envoyconfig.ts";
import { makeBucket, type RateBucket } from "./limiter.ts";
import {
  type CompiledDescriptor,
  compileDescriptor,
  type HeaderLookup,
  sameDescriptor,
} from "./matchers.ts";
import { type CompiledInstance, compiledOf, type ProxyConfig } from "./proxyconfig.ts";
import { type Request, requestHeaders, type Response } from "./request.ts";
import { admit, type Admitted, requestIdOf } from "./connection_manager.ts";
import { type DynamicDescriptor, isWildcard, wildcardBucket } from "./dynamic.ts";
import {
  addRequestHeaders,
  GRPC_CONTENT_TYPE,
  isGrpcRequest,
  isHeadRequest,
  RESOURCE_EXHAUSTED,
  UNAVAILABLE,
} from "./local_reply.ts";
import { type DescriptorEntry, RATE_LIMITED_BODY } from "../api/envoy.ts";
import { closestToLimit, type GlobalDecision, type GlobalRateLimit } from "./global_filter.ts";
import type { EngineClient } from "./engine.ts";

export { RATE_LIMITED_BODY };

/** The route entry of a sidecar's inbound listener (the model has one port a workload). */
export const INBOUND_ROUTE = "inbound";

/** A proxy's live state: its config and buckets, started when the config was applied. */
export interface ProxyState {
  readonly config: ProxyConfig;
  readonly startMs: number;
  /** The Envoy this proxy runs: how its buckets refill and which headers it sends. */
  readonly envoy: EnvoyBehaviour;
  /** Buckets of listener-level configs, by `filter<k>`, then by `default` or descriptor index. */
  readonly buckets: Map<string, Map<string, RateBucket>>;
  /** Buckets of the per-route config, by route entry name, then as above. */
  readonly routes: Map<string, Map<string, RateBucket>>;
  /** A router (gateway) trusts the connection's peer; a sidecar x-forwarded-for (request.ts). */
  readonly router: boolean;
  /** The wildcard descriptors' buckets of each scope above, by descriptor index. */
  readonly dynamic: WeakMap<Map<string, RateBucket>, Map<number, DynamicDescriptor>>;
  /** The rate limit engine its global filters ask; none: every call fails (the failure mode). */
  readonly engine?: EngineClient;
  /** How many x-request-id values its connection manager made (connection_manager.ts). */
  readonly requestIds: { count: number };
}

/** A fresh proxy state: every bucket full as of `startMs`. */
export function newProxyState(
  config: ProxyConfig,
  startMs: number,
  envoy: EnvoyBehaviour = DEFAULT_BEHAVIOUR,
  router = false,
  engine?: EngineClient,
): ProxyState {
  return {
    config,
    startMs,
    envoy,
    buckets: new Map(),
    routes: new Map(),
    router,
    dynamic: new WeakMap(),
    requestIds: { count: 0 },
    ...(engine ? { engine } : {}),
  };
}

/**
 * The request as this proxy's connection manager hands it to the filters, with the client
 * address it trusts (connection_manager.ts): a router as Istio sets up a gateway, else as a
 * sidecar's inbound listener. Counts a request id when it makes one.
 */
export function admitted(state: ProxyState, request: Request): Admitted {
  const downstream = {
    useRemoteAddress: state.router,
    xffNumTrustedHops: 0,
    privateIsInternal: state.envoy.privateIsInternal,
  };
  return admit(request, downstream, () => requestIdOf(++state.requestIds.count));
}

/** Which bucket decided: `"default"` or the index of the descriptor (= the RateLimit rule). */
export type BucketId = "default" | number;

/** The model's answer to one request at one proxy. */
export interface Decision extends Response {
  /** The bucket that limited the request (the rejecting one, else the chosen one); none when unlimited. */
  bucket?: BucketId;
  /** That bucket's maxTokens. */
  limit?: number;
  /** Tokens left in that bucket after the request (0 on a rejection). */
  remaining?: number;
  /** True when the proxy rejected it (a gRPC call's rejection has HTTP status 200). */
  rejected?: boolean;
  /**
   * True when a local filter not enforcing (shadow mode) would have rejected the request (the
   * global filter's shadow mode: `global.notEnforced`, `global.shadowOverLimit`).
   */
  wouldReject?: boolean;
  /** For a wildcard descriptor's bucket: the values its empty entries took (the client). */
  client?: string;
  /** Request headers a filter set on the way to the upstream (names lower case, final values). */
  upstreamHeaders?: Record<string, string>;
  /** What the global filter did, when one asked the engine (the last one that did). */
  global?: GlobalDecision;
  /** Set when the global filter, not a local one, refused the request (OVER_LIMIT or a failure). */
  globalRejected?: true;
}

interface Chosen {
  id: BucketId;
  state: RateBucket;
  client?: string;
}

interface Limited {
  allowed: boolean;
  /** The bucket that decided: the refusing one, else the first matched, else the default. */
  bucket?: Chosen;
  /** Envoy 1.30's header bucket: the first request descriptor found in the config. */
  firstMatch?: Chosen;
}

/** The value of `key` in `map`, made and kept on first use. */
function kept<K, V>(
  map: { get(key: K): V | undefined; set(key: K, value: V): unknown },
  key: K,
  make: () => V,
): V {
  let v = map.get(key);
  if (v === undefined) {
    v = make();
    map.set(key, v);
  }
  return v;
}

/** The buckets of one scope: a listener-level config's, or a route entry's. */
function scopeOf(
  scopes: Map<string, Map<string, RateBucket>>,
  name: string,
): Map<string, RateBucket> {
  return kept(scopes, name, () => new Map());
}

/** The bucket of `spec` under `key`, made full as of the proxy's start on first use. */
function bucketFor(
  state: ProxyState,
  scope: Map<string, RateBucket>,
  key: string,
  spec: BucketSpec,
): RateBucket {
  return kept(scope, key, () => makeBucket(spec, state.startMs, state.envoy));
}

const NONE: Chosen[] = [];

/** The scope's wildcard buckets, by descriptor index. */
function keptOf(state: ProxyState, scope: Map<string, RateBucket>): Map<number, DynamicDescriptor> {
  return kept(state.dynamic, scope, () => new Map());
}

/**
 * The bucket of a request descriptor: the config descriptor equal to it (`descriptors_.find`),
 * else, from Envoy 1.34, a wildcard's bucket for it (dynamic.ts). Undefined when none.
 */
function bucketOf(
  state: ProxyState,
  scope: Map<string, RateBucket>,
  c: CompiledInstance,
  cfg: LocalRateLimit,
  d: readonly DescriptorEntry[],
  fixedIndex: number | undefined,
  nowMs: number,
): Chosen | undefined {
  const i = fixedIndex ??
    cfg.descriptors.findIndex((x) => !isWildcard(x.entries) && sameDescriptor(x.entries, d));
  if (i >= 0) {
    return { id: i, state: bucketFor(state, scope, c.keys[i], cfg.descriptors[i].bucket) };
  }
  if (!state.envoy.dynamicDescriptors) return undefined;
  const w = wildcardBucket(
    keptOf(state, scope),
    cfg.descriptors,
    cfg.maxDynamicDescriptors,
    state.envoy,
    d,
    nowMs,
  );
  return w && { id: w.id, state: w.bucket, client: w.client };
}

/** `LocalRateLimiterImpl::requestAllowed` for one filter instance, in the buckets of `scope`. */
function requestAllowed(
  state: ProxyState,
  scope: Map<string, RateBucket>,
  c: CompiledInstance,
  cfg: LocalRateLimit,
  headers: HeaderLookup,
  nowMs: number,
): Limited {
  // One bucket a matching request descriptor, duplicates kept, lowest fill rate first (v1.31.0 and
  // later). Envoy's std::sort is not stable; the model keeps config order among equal rates.
  // v1.30.0 walked its config descriptors sorted by whole tokens a second, each charged once:
  // the same for generated filters, whose requests match at most one descriptor.
  let matched = NONE;
  for (const l of c.limits) {
    const d = l.descriptor.of(headers);
    if (d === undefined) continue;
    const chosen = bucketOf(state, scope, c, cfg, d, l.fixedIndex, nowMs);
    if (!chosen) continue;
    if (matched === NONE) matched = [];
    matched.push(chosen);
  }
  const firstMatch = matched[0];
  if (matched.length > 1) {
    matched.sort((a, b) => fillRate(a.state.spec) - fillRate(b.state.spec));
  }
  for (const m of matched) {
    if (!m.state.consume(nowMs)) return { allowed: false, bucket: m, firstMatch };
  }
  if (matched.length > 0 && !cfg.alwaysConsumeDefault) {
    return { allowed: true, bucket: matched[0], firstMatch };
  }
  if (!cfg.tokenBucket) return { allowed: true, bucket: matched[0], firstMatch };
  const def: Chosen = { id: "default", state: bucketFor(state, scope, "default", cfg.tokenBucket) };
  const shown = firstMatch ?? def;
  if (!def.state.consume(nowMs)) return { allowed: false, bucket: def, firstMatch: shown };
  return { allowed: true, bucket: matched[0] ?? def, firstMatch: shown };
}

function addHeader(headers: Record<string, string>, name: string, value: string): void {
  headers[name] = headers[name] === undefined ? value : `${headers[name]},${value}`;
}

/** The x-ratelimit headers of one filter instance, for the bucket this Envoy reports. */
function rateLimitHeaders(
  out: Record<string, string>,
  envoy: EnvoyBehaviour,
  result: Limited,
  nowMs: number,
): void {
  const b = envoy.headerBucket === "firstMatch" ? result.firstMatch : result.bucket;
  if (!b) return;
  addHeader(out, "x-ratelimit-limit", String(b.state.spec.maxTokens));
  addHeader(out, "x-ratelimit-remaining", String(b.state.remaining(nowMs)));
  const reset = b.state.reset(nowMs);
  if (reset !== undefined) addHeader(out, "x-ratelimit-reset", String(reset));
}

/**
 * Decides one request at `nowMs` on the route entry `route` (null: no route matched, so only
 * listener-level configs apply): each local_ratelimit filter in the chain charges its buckets in
 * turn, and the first enforced rejection answers with Envoy's local reply: 429
 * `local_rate_limited` (text/plain; docs/design.md's shape, so without the `x-envoy-ratelimited`
 * header older Envoy docs mention), or for a gRPC request a trailers-only HTTP 200 with
 * `grpc-status` 8 (rate_limited_as_resource_exhausted) or 14 (429 mapped) and `grpc-message`
 * (`Http::Utility::sendLocalReply`); to a `HEAD` request, headers only (no body, no
 * `grpc-message`). A rejection not enforced (shadow mode) lets the request on
 * with `request_headers_to_add_when_not_enforced` and marks it `wouldReject`. Admitted requests
 * get the upstream's 200. With x-ratelimit headers on, every filter that ran adds
 * `x-ratelimit-limit` (maxTokens), `x-ratelimit-remaining` (whole tokens left) and, where this
 * Envoy sends it, `x-ratelimit-reset`, all computed after the request took its token, as Envoy's
 * `encodeHeaders` does. The filters see the request as the connection manager admitted it
 * (`seen`, {@link admitted} of `sent` unless given). Mutates the buckets in `state`.
 */
export function decide(
  state: ProxyState,
  sent: Request,
  nowMs: number,
  route: string | null = INBOUND_ROUTE,
  seen: Admitted = admitted(state, sent),
): Decision {
  const request = seen.request;
  const headers = requestHeaders(request, seen.remoteAddress);
  const out: Record<string, string> = {};
  let upstream: Record<string, string> | undefined;
  let reported: Limited | undefined;
  const { filters } = state.config;
  const routeConfig = route === null ? undefined : state.config.routeConfig;
  const compiled = filters.length > 0 ? compiledOf(state.config, routeConfig !== undefined) : [];
  const globals = state.config.globalFilters;
  let global: GlobalDecision | undefined;
  for (let k = 0; k <= filters.length; k++) {
    // The global filters placed here (after k local ones) run, then the k-th local filter.
    for (const g of globals) {
      if (g.position !== k && !(k === filters.length && g.position > k)) continue;
      const step = globalStep(state, g, headers, request, nowMs);
      if (!step) continue;
      global = step.decision;
      if (step.reply) {
        const b = reported?.bucket;
        return {
          ...step.reply,
          rejected: true,
          globalRejected: true,
          global,
          ...(b
            ? { bucket: b.id, limit: b.state.spec.maxTokens, remaining: b.state.remaining(nowMs) }
            : {}),
        };
      }
    }
    if (k === filters.length) break;
    const cfg = routeConfig ?? filters[k];
    if (!cfg.enabled) continue;
    const c = compiled[k];
    const scope = c.scope === undefined
      ? scopeOf(state.routes, route ?? "") // the per-route config applies on a route only
      : scopeOf(state.buckets, c.scope);
    const result = requestAllowed(state, scope, c, cfg, headers, nowMs);
    if (cfg.xRateLimitHeaders) rateLimitHeaders(out, state.envoy, result, nowMs);
    if (result.bucket && (!reported?.bucket || !result.allowed)) reported = result;
    if (result.allowed) continue;
    if (!cfg.enforced) {
      addRequestHeaders(upstream ??= {}, cfg, headers);
      continue;
    }
    for (const h of cfg.responseHeadersToAdd) addHeader(out, h.key.toLowerCase(), h.value);
    if (isGrpcRequest(request)) {
      out["content-type"] = GRPC_CONTENT_TYPE;
      out["grpc-status"] = String(cfg.grpcResourceExhausted ? RESOURCE_EXHAUSTED : UNAVAILABLE);
      if (!isHeadRequest(request)) out["grpc-message"] = RATE_LIMITED_BODY;
      return answer(200, out, "", reported, nowMs, { rejected: true });
    }
    out["content-type"] = "text/plain";
    const body = isHeadRequest(request) ? "" : RATE_LIMITED_BODY;
    return answer(cfg.status, out, body, reported, nowMs, { rejected: true });
  }
  // A local filter's; the global filter's is in `global` (notEnforced, shadowOverLimit).
  const wouldReject = reported !== undefined && !reported.allowed;
  const admitted = answer(200, out, "", reported, nowMs, {
    rejected: false,
    wouldReject,
    upstream,
  });
  return global ? { ...admitted, global } : admitted;
}

/** The descriptors of each `rate_limits` stage of a config, compiled once a config. */
const stageDescriptors = new WeakMap<ProxyConfig, Map<number, CompiledDescriptor[]>>();

function descriptorsOfStage(config: ProxyConfig, stage: number): CompiledDescriptor[] {
  const byStage = kept(stageDescriptors, config, () => new Map<number, CompiledDescriptor[]>());
  return kept(byStage, stage, () =>
    // `getApplicableRateLimit(stage)`; a disable_key's runtime key is at its default (enabled).
    config.rateLimits.filter((r) => r.stage === stage).map((r) => compileDescriptor(r.actions)));
}

/** Envoy's `Grpc::Utility::httpToGrpcStatus` for the statuses a rate limit filter replies with. */
function grpcStatusOf(http: number): number {
  if (http === 400) return 13;
  if (http === 401) return 16;
  if (http === 403) return 7;
  if (http === 404) return 12;
  if (http === 429 || http === 502 || http === 503 || http === 504) return UNAVAILABLE;
  return 2;
}

/**
 * One global filter on a request: the descriptors of its stage (none: it asks nothing), the
 * engine's answer, and the local reply when it refuses (see global_filter.ts).
 */
function globalStep(
  state: ProxyState,
  g: GlobalRateLimit,
  headers: HeaderLookup,
  request: Request,
  nowMs: number,
): { decision: GlobalDecision; reply?: Response } | undefined {
  if (!g.enabled) return undefined;
  const descriptors: (readonly DescriptorEntry[])[] = [];
  for (const d of descriptorsOfStage(state.config, g.stage)) {
    const entries = d.of(headers);
    if (entries) descriptors.push(entries);
  }
  if (descriptors.length === 0) return undefined;
  const result = state.engine
    ? state.engine.ask({ domain: g.domain, descriptors }, nowMs, g.timeoutMs, g.cluster)
    : { ok: false as const, error: "no rate limit engine" };
  const reply = (status: number, body: string, extra: Record<string, string>): Response => {
    const headers: Record<string, string> = { ...extra };
    if (isGrpcRequest(request)) {
      headers["content-type"] = GRPC_CONTENT_TYPE;
      headers["grpc-status"] = String(
        status === 429 && g.grpcResourceExhausted ? RESOURCE_EXHAUSTED : grpcStatusOf(status),
      );
      if (body !== "" && !isHeadRequest(request)) headers["grpc-message"] = body;
      return { status: 200, headers, body: "" };
    }
    if (body !== "") headers["content-type"] = "text/plain";
    return { status, headers, body: isHeadRequest(request) ? "" : body };
  };
  if (!result.ok) {
    const decision: GlobalDecision = { domain: g.domain, code: "ERROR", error: result.error };
    if (g.failureModeDeny) return { decision, reply: reply(g.statusOnError, "", {}) };
    return { decision: { ...decision, failedOpen: true } };
  }
  const decision: GlobalDecision = {
    domain: g.domain,
    code: result.answer.overallCode,
    ...closestToLimit(result),
    keys: result.answer.keys,
    ...(result.answer.statuses.some((s) => s.shadowOverLimit) ? { shadowOverLimit: true } : {}),
  };
  if (result.answer.overallCode !== "OVER_LIMIT") return { decision };
  if (!g.enforced) return { decision: { ...decision, notEnforced: true } };
  const extra: Record<string, string> = g.xEnvoyRateLimited
    ? { "x-envoy-ratelimited": "true" }
    : {};
  return { decision, reply: reply(g.rateLimitedStatus, state.config.rateLimitedBody ?? "", extra) };
}

/** The Decision, with the reported bucket's id, limit and remaining tokens when there is one. */
function answer(
  status: number,
  headers: Record<string, string>,
  body: string,
  r: Limited | undefined,
  nowMs: number,
  how: { rejected: boolean; wouldReject?: boolean; upstream?: Record<string, string> },
): Decision {
  const b = r?.bucket;
  const marks = {
    ...(how.rejected ? { rejected: true } : {}),
    ...(how.wouldReject ? { wouldReject: true } : {}),
    ...(how.upstream ? { upstreamHeaders: how.upstream } : {}),
  };
  if (!b) return { status, headers, body, ...marks };
  return {
    status,
    headers,
    body,
    ...marks,
    ...(b.client !== undefined ? { client: b.client } : {}),
    bucket: b.id,
    limit: b.state.spec.maxTokens,
    remaining: b.state.remaining(nowMs),
  };
}

/**
 * Tokens at `nowMs` in one bucket of the proxy's effective config on `route` (for charts),
 * fractional between fills of a continuous bucket; nothing is taken.
 */
export function bucketTokens(
  state: ProxyState,
  id: BucketId,
  nowMs: number,
  route: string = INBOUND_ROUTE,
  client?: string,
): number | undefined {
  const cfg = state.config.routeConfig ?? state.config.filters[0];
  if (!cfg) return undefined;
  const spec = id === "default" ? cfg.tokenBucket : cfg.descriptors[id]?.bucket;
  if (!spec) return undefined;
  const scope = state.config.routeConfig
    ? scopeOf(state.routes, route)
    : scopeOf(state.buckets, "filter0");
  if (id !== "default" && isWildcard(cfg.descriptors[id].entries)) {
    // A client's bucket if kept; one not (yet, or no longer) kept is full, as it would start.
    return keptOf(state, scope).get(id)?.peek(client ?? "")?.tokensAt(nowMs) ?? spec.maxTokens;
  }
  return bucketFor(state, scope, String(id), spec).tokensAt(nowMs);
}
