/** Envoy names and limits the RateLimit API, its reducer and the data-plane model share. */

/** Type URL of the LocalRateLimit message. */
export const LOCAL_RATELIMIT_TYPE =
  "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit";
/** Name of the local rate limit HTTP filter. */
export const LOCAL_RATELIMIT_FILTER = "envoy.filters.http.local_ratelimit";
/** The largest value of a protobuf uint32 field, such as a token bucket's counts. */
export const UINT32_MAX = 4294967295;
/** Envoy's floor for any fill interval ("fill timer must be >= 50ms"). */
export const MIN_FILL_INTERVAL_MS = 50;
