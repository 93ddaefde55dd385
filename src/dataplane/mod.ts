/**
 * Envoy's local rate limiting as a pure model (DESIGN.md "src/dataplane"). It reads EnvoyFilter
 * objects, never RateLimits, so a wrong generated filter gives wrong answers here too.
 *
 * - `Mesh`: Pods and EnvoyFilters in, `send(request, nowMs)` out; round-robin over ready Pods, one
 *   proxy (and set of buckets) a Pod, the ingress gateway as a target.
 * - `readEnvoyFilter`, `proxyConfig`, `newProxyState`, `decide`: one proxy, step by step.
 * - `patchRouteConfiguration`, `routeConfigurationErrors`: a whole route configuration (forwarding,
 *   redirect and direct-response routes) after the filters' route merges, and what Envoy refuses.
 * - `newBucket`, `consume`, `tokensAt`: the discrete token bucket.
 */
export { DEFAULT_MESH, Mesh, meshPodOf, selects } from "./mesh.ts";
export type {
  MeshOptions,
  MeshPod,
  MeshRequest,
  MeshResponse,
  MeshTarget,
  Rejection,
} from "./mesh.ts";
export {
  bucketTokens,
  decide,
  newProxyState,
  NO_LIMIT,
  proxyConfig,
  RATE_LIMITED_BODY,
} from "./proxy.ts";
export type { BucketId, Decision, ProxyConfig, ProxyState } from "./proxy.ts";
export { readEnvoyFilter } from "./envoyfilter.ts";
export type {
  EnvoyFilterModel,
  EnvoyFilterResult,
  ProxyContext,
  RouteAction,
  RoutePatch,
} from "./envoyfilter.ts";
export { patchRouteConfiguration, routeConfigurationErrors, routeReached } from "./routes.ts";
export {
  LOCAL_RATELIMIT_FILTER,
  LOCAL_RATELIMIT_TYPE,
  MIN_FILL_INTERVAL_MS,
} from "./envoyconfig.ts";
export { consume, fillsDue, newBucket, nextFillAt, refill, tokensAt } from "./bucket.ts";
export type { BucketSpec, TokenBucket } from "./bucket.ts";
export type { Request, Response } from "./request.ts";
