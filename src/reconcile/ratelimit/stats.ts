/**
 * The stats our filters make Envoy count, and whether a Pod's proxy exports them: apart from the
 * renderer (render.ts re-exports them) so that what the operator reads at start (the Pod cache's
 * projection, the istiod poller) loads none of the RateLimit reducer, which loads with the first
 * RateLimit (src/controllers/ratelimit.ts).
 */
import { podExportsStat, STATS_INCLUSION_ANNOTATIONS } from "../../api/stats_inclusion.ts";

/**
 * The `stat_prefix` of every filter we generate: Envoy counts its requests under
 * `<prefix>.http_local_rate_limit.*`, which the monitoring dashboard reads.
 */
export const STAT_PREFIX = "http_local_rate_limiter";

// The hint an enforced RateLimit's status gives when its Pods' proxies do not export Envoy's local
// rate limit stats: Istio hides them unless the proxy's stats inclusion names them, and then the
// dashboard's Envoy panels stay empty although the limit works (docs/operations.md, "Envoy's rate
// limit stats"). A hint in the Enforced message, not a state: the limit bites either way, and a
// mesh-wide `proxyStatsMatcher` (which no Pod shows) may export them after all.

/** The counters of our filters that the dashboard reads: admitted, rejected, over the limit. */
export const LIMIT_STATS: readonly string[] = ["ok", "enforced", "rate_limited"].map((c) =>
  `${STAT_PREFIX}.http_local_rate_limit.${c}`
);

/** True when the Pod's annotations make its proxy export every counter the dashboard reads. */
export function exportsLimitStats(pod: unknown): boolean {
  return LIMIT_STATS.every((stat) => podExportsStat(pod, stat));
}

/**
 * `; …`: what to append to the Enforced message when `hidden` (names, already cut to a few by the
 * caller's `listed`) of the `total` enforced Pods do not export the stats; "" when none.
 */
export function statsHint(hidden: number, total: number, listed: string): string {
  if (hidden === 0) return "";
  const who = total === 1 ? "its proxy does" : `${hidden} of them (${listed}) do`;
  return `; ${who} not export Envoy's rate limit stats (${STAT_PREFIX}) unless the mesh-wide ` +
    `proxyStatsMatcher names them: to see them, annotate the Pod template with ` +
    `${STATS_INCLUSION_ANNOTATIONS.Prefixes}: ${STAT_PREFIX}`;
}
