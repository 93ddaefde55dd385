/**
 * The rate limit config of one proxy, combined from the EnvoyFilters that reach it, and compiled
 * once for the decisions of `proxy.ts`.
 */
import type { LocalRateLimit, RouteRateLimit } from "./envoyconfig.ts";
import type { GlobalRateLimit } from "./global_filter.ts";
import type { ProxyContext } from "../api/mesh.ts";
import type { ContextPatches, EnvoyFilterModel } from "./envoyfilter.ts";
import { type CompiledDescriptor, compileDescriptor, sameDescriptor } from "./matchers.ts";

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
  /**
   * The global rate limit filters in the chain, in order, each placed after `position` local
   * filters (empty: no global limit).
   */
  globalFilters: GlobalRateLimit[];
  /** The body of a rate-limited local reply from the connection manager's mapper, when set. */
  rateLimitedBody?: string;
}

/** A proxy without any rate limit. */
export const NO_LIMIT: ProxyConfig = {
  filters: [],
  rateLimits: [],
  sources: [],
  globalFilters: [],
};

/**
 * Combines the EnvoyFilters that apply to a proxy, given in Istio's order of application: filters
 * are appended to the chain, route merges of the same per-filter key replace the earlier one, and
 * `rate_limits` lists are concatenated (proto merge of a repeated field).
 */
export function proxyConfig(
  filters: readonly EnvoyFilterModel[],
  context: ProxyContext,
): ProxyConfig {
  const out: ProxyConfig = { filters: [], rateLimits: [], sources: [], globalFilters: [] };
  for (const f of filters) {
    const p: ContextPatches | undefined = f.contexts[context];
    if (!p) continue;
    // Each filter goes before the router, so after every filter of the EnvoyFilters before.
    const before = out.filters.length;
    for (const g of p.globalFilters) {
      out.globalFilters.push({ ...g, position: before + g.position });
    }
    if (p.rateLimitedBody !== undefined) out.rateLimitedBody = p.rateLimitedBody;
    out.filters.push(...p.filters);
    if (p.routeConfig) out.routeConfig = p.routeConfig;
    out.rateLimits.push(...p.rateLimits);
    out.sources.push(`${f.namespace}/${f.name}`);
  }
  return out;
}

/** A route `rate_limits` entry compiled for one filter instance. */
export interface CompiledLimit {
  descriptor: CompiledDescriptor;
  /** For a fixed descriptor: the index of the config descriptor it equals, or -1. */
  fixedIndex?: number;
}

/** One filter instance's config, compiled once a ProxyConfig: its entries, bucket keys and rates. */
export interface CompiledInstance {
  /** The route `rate_limits` entries of this instance's stage, in order. */
  limits: CompiledLimit[];
  /** Bucket keys in the scope: the descriptor index, and `default`. */
  keys: string[];
  /** The listener-level scope `filter<k>`; undefined when the per-route config applies. */
  scope?: string;
}

const compiledConfigs = new WeakMap<ProxyConfig, CompiledInstance[]>();
const compiledWithoutRoute = new WeakMap<ProxyConfig, CompiledInstance[]>();

/**
 * The filter instances of `config` compiled, with the per-route config in force or not (once a
 * config; configs are not changed after use).
 */
export function compiledOf(config: ProxyConfig, onRoute: boolean): CompiledInstance[] {
  const cache = onRoute ? compiledConfigs : compiledWithoutRoute;
  let out = cache.get(config);
  if (out) return out;
  const descriptors = config.rateLimits.map((r) => compileDescriptor(r.actions));
  const routeConfig = onRoute ? config.routeConfig : undefined;
  out = config.filters.map((instance, k) => {
    const cfg = routeConfig ?? instance;
    const scope = routeConfig ? undefined : `filter${k}`;
    const limits = config.rateLimits.flatMap((r, j): CompiledLimit[] => {
      // `getApplicableRateLimit(stage)`, then `Filter::populateDescriptors`
      // (source/extensions/filters/http/local_ratelimit/local_ratelimit.cc) skips every entry
      // whose `disable_key` is not empty, with no runtime lookup (the global rate limit filter's
      // `ratelimit.<disable_key>.http_filter_enabled` check is not in the local one).
      if (r.stage !== cfg.stage || r.disableKey !== undefined) return [];
      const d = descriptors[j];
      const fixed = d.fixed;
      return [{
        descriptor: d,
        ...(fixed
          ? { fixedIndex: cfg.descriptors.findIndex((c) => sameDescriptor(c.entries, fixed)) }
          : {}),
      }];
    });
    return { limits, keys: cfg.descriptors.map((_, i) => String(i)), scope };
  });
  cache.set(config, out);
  return out;
}
