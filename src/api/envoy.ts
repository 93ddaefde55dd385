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
/**
 * The request header the upstream sees on a request a limit in shadow mode would have rejected
 * (`request_headers_to_add_when_not_enforced`).
 */
export const SHADOW_HEADER = "x-ratelimit-would-reject";
/** Its value. */
export const SHADOW_HEADER_VALUE = "true";
/** gRPC status codes a rejected gRPC call can get (grpc/grpc doc/statuscodes.md). */
export const GRPC_STATUS = { ResourceExhausted: 8, Unavailable: 14 } as const;

/** One entry of a rate limit descriptor (Envoy's `RateLimitDescriptor.Entry`): a key and its value. */
export interface DescriptorEntry {
  key: string;
  value: string;
}
