/**
 * One Envoy proxy's local rate limiting: the config the EnvoyFilters give it, its buckets, and the
 * decision for each request (`source/extensions/filters/http/local_ratelimit/local_ratelimit.cc` and
 * `filters/common/local_ratelimit/local_ratelimit_impl.cc`, with DESIGN.md's discrete buckets).
 */
import {
  type BucketSpec,
  consume,
  fillRate,
  newBucket,
  type TokenBucket,
  tokensAt,
} from "./bucket.ts";
import type { LocalRateLimit, RouteRateLimit } from "./envoyconfig.ts";
import type { ContextPatches, EnvoyFilterModel, ProxyContext } from "./envoyfilter.ts";
import {
  type CompiledDescriptor,
  compileDescriptor,
  type HeaderLookup,
  sameDescriptor,
} from "./matchers.ts";
import { type Request, requestHeaders, type Response } from "./request.ts";

/** Body of a rate-limited reply (`sendLocalReply(..., "local_rate_limited", ...)`). */
export const RATE_LIMITED_BODY = "local_rate_limited";

/** The rate limit config of one proxy: what all EnvoyFilters applied to it add up to. */
export interface ProxyConfig {
  /** The local_ratelimit filter instances in the HTTP filter chain, in order. */
  filters: LocalRateLimit[];
  /** The per-route config; when set, every instance uses it (and its buckets) instead of its own. */
  routeConfig?: LocalRateLimit;
  /** The route's `rate_limits`. */
  rateLimits: RouteRateLimit[];
  /** `namespace/name` of the EnvoyFilters that contributed, in the order they were applied. */
  sources: string[];
}

/** A proxy without any local rate limit. */
export const NO_LIMIT: ProxyConfig = { filters: [], rateLimits: [], sources: [] };

/**
 * Combines the EnvoyFilters that apply to a proxy, given in Istio's order of application: filters
 * are appended to the chain, route merges of the same per-filter key replace the earlier one, and
 * `rate_limits` lists are concatenated (proto merge of a repeated field).
 */
export function proxyConfig(
  filters: readonly EnvoyFilterModel[],
  context: ProxyContext,
): ProxyConfig {
  const out: ProxyConfig = { filters: [], rateLimits: [], sources: [] };
  for (const f of filters) {
    const p: ContextPatches | undefined = f.contexts[context];
    if (!p) continue;
    out.filters.push(...p.filters);
    if (p.routeConfig) out.routeConfig = p.routeConfig;
    out.rateLimits.push(...p.rateLimits);
    out.sources.push(`${f.namespace}/${f.name}`);
  }
  return out;
}

/** A proxy's live state: its config and buckets, started when the config was applied. */
export interface ProxyState {
  readonly config: ProxyConfig;
  readonly startMs: number;
  /** Buckets by `<scope>/<default|index>`; made on first use, full, as of `startMs`. */
  readonly buckets: Map<string, TokenBucket>;
}

/** A fresh proxy state: every bucket full as of `startMs`. */
export function newProxyState(config: ProxyConfig, startMs: number): ProxyState {
  return { config, startMs, buckets: new Map() };
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
}

interface Limited {
  allowed: boolean;
  bucket?: { id: BucketId; state: TokenBucket };
}

/** The bucket of `spec` under `key`, made full as of the proxy's start on first use. */
function bucketFor(state: ProxyState, key: string, spec: BucketSpec): TokenBucket {
  let b = state.buckets.get(key);
  if (!b) {
    b = newBucket(spec, state.startMs);
    state.buckets.set(key, b);
  }
  return b;
}

/** A route `rate_limits` entry compiled for one filter instance. */
interface CompiledLimit {
  descriptor: CompiledDescriptor;
  /** For a fixed descriptor: the index of the config descriptor it equals, or -1. */
  fixedIndex?: number;
}

/** One filter instance's config, compiled once a ProxyConfig: its entries, bucket keys and rates. */
interface CompiledInstance {
  /** The route `rate_limits` entries of this instance's stage, in order. */
  limits: CompiledLimit[];
  /** Bucket keys: `<scope>/<descriptor index>`, and `<scope>/default`. */
  keys: string[];
  defaultKey: string;
}

const compiledConfigs = new WeakMap<ProxyConfig, CompiledInstance[]>();

/** The filter instances of `config` compiled (once a config; configs are not changed after use). */
function compiledOf(config: ProxyConfig): CompiledInstance[] {
  let out = compiledConfigs.get(config);
  if (out) return out;
  const descriptors = config.rateLimits.map((r) => compileDescriptor(r.actions));
  out = config.filters.map((instance, k) => {
    const cfg = config.routeConfig ?? instance;
    const scope = config.routeConfig ? "route" : `filter${k}`;
    const limits = config.rateLimits.flatMap((r, j): CompiledLimit[] => {
      if (r.stage !== cfg.stage) return [];
      const d = descriptors[j];
      const fixed = d.fixed;
      return [{
        descriptor: d,
        ...(fixed
          ? { fixedIndex: cfg.descriptors.findIndex((c) => sameDescriptor(c.entries, fixed)) }
          : {}),
      }];
    });
    return {
      limits,
      keys: cfg.descriptors.map((_, i) => `${scope}/${i}`),
      defaultKey: `${scope}/default`,
    };
  });
  compiledConfigs.set(config, out);
  return out;
}

const NONE: { id: BucketId; state: TokenBucket }[] = [];

/** `LocalRateLimiterImpl::requestAllowed` for one filter instance. */
function requestAllowed(
  state: ProxyState,
  c: CompiledInstance,
  cfg: LocalRateLimit,
  headers: HeaderLookup,
  nowMs: number,
): Limited {
  // One bucket a matching request descriptor, duplicates kept, lowest fill rate first. Envoy's
  // std::sort is not stable; the model keeps config order among equal rates.
  let matched = NONE;
  for (const l of c.limits) {
    const d = l.descriptor.of(headers);
    if (d === undefined) continue;
    const i = l.fixedIndex ?? cfg.descriptors.findIndex((x) => sameDescriptor(x.entries, d));
    if (i < 0) continue;
    if (matched === NONE) matched = [];
    matched.push({ id: i, state: bucketFor(state, c.keys[i], cfg.descriptors[i].bucket) });
  }
  if (matched.length > 1) {
    matched.sort((a, b) => fillRate(a.state.spec) - fillRate(b.state.spec));
  }
  for (const m of matched) {
    if (!consume(m.state, nowMs)) return { allowed: false, bucket: m };
  }
  if (matched.length === 0 || cfg.alwaysConsumeDefault) {
    if (!cfg.tokenBucket) return { allowed: true, bucket: matched[0] };
    const def = {
      id: "default" as const,
      state: bucketFor(state, c.defaultKey, cfg.tokenBucket),
    };
    if (!consume(def.state, nowMs)) return { allowed: false, bucket: def };
    return { allowed: true, bucket: matched[0] ?? def };
  }
  return { allowed: true, bucket: matched[0] };
}

function addHeader(headers: Record<string, string>, name: string, value: string): void {
  headers[name] = headers[name] === undefined ? value : `${headers[name]},${value}`;
}

/**
 * Decides one request at `nowMs`: each local_ratelimit filter in the chain charges its buckets in
 * turn, and the first enforced rejection answers 429 `local_rate_limited` (text/plain; SPEC.md's
 * shape, so without the `x-envoy-ratelimited` header older Envoy docs mention). Admitted
 * requests get the upstream's 200. With x-ratelimit headers on, every filter that ran adds
 * `x-ratelimit-limit` (maxTokens of the bucket used) and `x-ratelimit-remaining` (tokens left).
 * Mutates the buckets in `state`.
 */
export function decide(state: ProxyState, request: Request, nowMs: number): Decision {
  const headers = requestHeaders(request);
  const out: Record<string, string> = {};
  let reported: Limited | undefined;
  const { filters, routeConfig } = state.config;
  const compiled = filters.length > 0 ? compiledOf(state.config) : [];
  for (let k = 0; k < filters.length; k++) {
    const cfg = routeConfig ?? filters[k];
    if (!cfg.enabled) continue;
    const result = requestAllowed(state, compiled[k], cfg, headers, nowMs);
    const b = result.bucket;
    if (cfg.xRateLimitHeaders && b) {
      addHeader(out, "x-ratelimit-limit", String(b.state.spec.maxTokens));
      addHeader(out, "x-ratelimit-remaining", String(Math.floor(tokensAt(b.state, nowMs))));
    }
    if (b && (!reported?.bucket || !result.allowed)) reported = result;
    if (!result.allowed && cfg.enforced) {
      for (const h of cfg.responseHeadersToAdd) addHeader(out, h.key.toLowerCase(), h.value);
      out["content-type"] = "text/plain";
      return answer(cfg.status, out, RATE_LIMITED_BODY, reported, nowMs);
    }
  }
  return answer(200, out, "", reported, nowMs);
}

/** The Decision, with the reported bucket's id, limit and remaining tokens when there is one. */
function answer(
  status: number,
  headers: Record<string, string>,
  body: string,
  r: Limited | undefined,
  nowMs: number,
): Decision {
  const b = r?.bucket;
  if (!b) return { status, headers, body };
  return {
    status,
    headers,
    body,
    bucket: b.id,
    limit: b.state.spec.maxTokens,
    remaining: Math.floor(tokensAt(b.state, nowMs)),
  };
}

/** Tokens left at `nowMs` in one bucket of the proxy's effective config (for charts); fills only. */
export function bucketTokens(state: ProxyState, id: BucketId, nowMs: number): number | undefined {
  const cfg = state.config.routeConfig ?? state.config.filters[0];
  if (!cfg) return undefined;
  const spec = id === "default" ? cfg.tokenBucket : cfg.descriptors[id]?.bucket;
  if (!spec) return undefined;
  const scope = state.config.routeConfig ? "route" : "filter0";
  return tokensAt(bucketFor(state, `${scope}/${id}`, spec), nowMs);
}
