/**
 * Which Envoy the data-plane model follows. A Mesh, a preview run or a simulation names its Envoy
 * version; nothing here is global. What changed in the local rate limit, read in
 * envoyproxy/envoy (tags are the release commits on main):
 *
 * - v1.30.0: a timer per filter config adds `tokens_per_fill` at each `fill_interval`
 *   (`source/extensions/filters/common/local_ratelimit/local_ratelimit_impl.cc`, `onFillTimer`);
 *   descriptor buckets refill on every N-th tick, hence "local rate descriptor limit is not a
 *   multiple of token bucket fill timer". x-ratelimit-reset is the seconds to the next fill
 *   (`remainingFillInterval`); the headers describe the first request descriptor found in the
 *   config, else the default bucket (`descriptorHelper`).
 * - v1.31.0: `AtomicTokenBucketImpl` (`source/common/common/token_bucket_impl.h`, PR #34789)
 *   refills continuously and is the default behind the runtime guard
 *   `envoy.reloadable_features.no_timer_based_rate_limit_token_bucket` (PR #35207). Its
 *   `remainingFillInterval()` is empty, so no x-ratelimit-reset is sent. The headers describe the
 *   bucket that decided (`LocalRateLimiterImpl::requestAllowed` returns it).
 * - v1.34.0: the guard and the timer are gone (PR #38197), and with them the multiple-of check;
 *   dynamic descriptors (PR #36623): an entry with an empty value is a wildcard (dynamic.ts).
 * - v1.35.0: x-ratelimit-reset again, from the time to the next whole token
 *   (`RateLimitTokenBucket::resetSeconds`, `AtomicTokenBucketImpl::nextTokenAvailable`, PR #39501).
 * - v1.38.0: per-descriptor `x_ratelimit_option` (PR #43131); unset, the filter's setting holds.
 */

import { DYNAMIC_DESCRIPTORS_MINOR, ISTIO_ENVOY, NEWEST_ISTIO } from "../api/envoy.ts";

// The Istio-to-Envoy table and the first Envoy with dynamic descriptors are the reducer's too:
// they live in src/api/envoy.ts.
export { DYNAMIC_DESCRIPTORS_MINOR, ISTIO_ENVOY, NEWEST_ISTIO };

/** How buckets regain tokens: `interval` (Envoy ≤ 1.30's timer) or `continuous` (≥ 1.31). */
export type Refill = "interval" | "continuous";

/** What x-ratelimit-reset says: seconds to the next fill, nothing, or seconds to the next token. */
export type ResetHeader = "fill" | "none" | "token";

/** What one Envoy version does, as far as the model is concerned. */
export interface EnvoyBehaviour {
  /** `1.38`: major.minor (patch releases do not change the local rate limit). */
  readonly version: string;
  readonly minor: number;
  readonly refill: Refill;
  readonly reset: ResetHeader;
  /** Which bucket the x-ratelimit headers describe. */
  readonly headerBucket: "firstMatch" | "decided";
  /** Envoy ≤ 1.33 refuses a descriptor fill_interval that is not a multiple of the default's. */
  readonly multipleOfRule: boolean;
  /**
   * Envoy ≥ 1.34 reads a descriptor entry with an empty value as a wildcard (dynamic descriptors,
   * envoyproxy/envoy#36623, changelogs/1.34.0.yaml); older ones refuse the empty value.
   */
  readonly dynamicDescriptors: boolean;
  /**
   * Envoy ≤ 1.32 counts private addresses (RFC 1918, loopback) as internal when no
   * `internal_address_config` is set; from 1.33 none (`explicit_internal_address_config`, as
   * Istio's listener builder notes), and Istio sets none by default (connection_manager.ts).
   */
  readonly privateIsInternal: boolean;
}

/** The oldest and newest Envoy minor versions whose local rate limit source the model follows. */
export const OLDEST_ENVOY_MINOR = 30;
/** See {@link OLDEST_ENVOY_MINOR}. */
export const NEWEST_ENVOY_MINOR = 38;

/** The default Envoy of previews and simulations: the one the newest supported Istio ships. */
export const DEFAULT_ENVOY = ISTIO_ENVOY[NEWEST_ISTIO];

function behaviourOf(minor: number): EnvoyBehaviour {
  return {
    version: `1.${minor}`,
    minor,
    refill: minor <= 30 ? "interval" : "continuous",
    reset: minor <= 30 ? "fill" : minor <= 34 ? "none" : "token",
    headerBucket: minor <= 30 ? "firstMatch" : "decided",
    multipleOfRule: minor <= 33,
    dynamicDescriptors: minor >= DYNAMIC_DESCRIPTORS_MINOR,
    privateIsInternal: minor <= 32,
  };
}

/** The behaviour of an Envoy version (`1.38`, `1.38.2`, `v1.30.0`), or why it is not one. */
export function envoyBehaviour(
  text: string,
): { ok: true; value: EnvoyBehaviour } | { ok: false; error: string } {
  const m = /^v?1\.(\d{1,3})(?:\.\d{1,3})?$/.exec(text.trim());
  if (!m) {
    return {
      ok: false,
      error: `${JSON.stringify(text)} is not an Envoy version like 1.38 or 1.30`,
    };
  }
  const minor = Number(m[1]);
  if (minor < OLDEST_ENVOY_MINOR || minor > NEWEST_ENVOY_MINOR) {
    return {
      ok: false,
      error:
        `the model follows Envoy 1.${OLDEST_ENVOY_MINOR} to 1.${NEWEST_ENVOY_MINOR}, not ${text}` +
        (minor < OLDEST_ENVOY_MINOR ? ` (older Envoys also refill by timer: use 1.30)` : ""),
    };
  }
  return { ok: true, value: behaviourOf(minor) };
}

/** The behaviour of {@link DEFAULT_ENVOY}. */
export const DEFAULT_BEHAVIOUR: EnvoyBehaviour = behaviourOf(Number(DEFAULT_ENVOY.split(".")[1]));

/** The Istio releases that ship this Envoy, e.g. `Istio 1.30`; empty when none listed does. */
export function istioOf(b: EnvoyBehaviour): string[] {
  return Object.entries(ISTIO_ENVOY).filter(([, e]) => e === b.version).map(([i]) => `Istio ${i}`);
}

/** One line saying which behaviour a prediction shows, for tables and charts. */
export function describeBehaviour(b: EnvoyBehaviour): string {
  const istio = istioOf(b);
  const who = `Envoy ${b.version}${istio.length > 0 ? ` (${istio.join(", ")})` : ""}`;
  return b.refill === "continuous"
    ? `${who}: continuous refill, tokensPerFill / fillInterval a second, a request needs one whole token`
    : `${who}: interval refill, tokensPerFill at each whole fillInterval`;
}
