/**
 * Envoy's local rate limiting as a pure model (docs/design.md "src/dataplane"). It reads EnvoyFilter
 * objects, never RateLimits, so a wrong generated filter gives wrong answers here too.
 *
 * - `Mesh`: Pods and EnvoyFilters in, `send(request, nowMs)` out; round-robin over ready Pods, one
 *   proxy (and set of buckets) a Pod, the ingress gateway as a target.
 * - `readEnvoyFilter`, `proxyConfig`, `newProxyState`, `decide`: one proxy, step by step.
 * - `patchRouteConfiguration`, `routeConfigurationErrors`: a whole route configuration (forwarding,
 *   redirect and direct-response routes) after the filters' route merges, and what Envoy refuses.
 * - `newBucket`, `consume`, `tokensAt`: the interval token bucket of Envoy ≤ 1.30;
 *   `newContinuousBucket`: the continuous one of Envoy ≥ 1.31; `makeBucket`: either, by version.
 * - `envoyBehaviour`: what an Envoy version does; every Mesh and proxy state has one.
 * - `EngineModel`, `shouldRateLimit`, `EngineConfig`, `EngineCounters`: the global rate limit
 *   engine (envoyproxy/ratelimit) and its fixed windows, which a proxy's
 *   `envoy.filters.http.ratelimit` asks after its local filters (global_filter.ts).
 */
export { DEFAULT_MESH, GATEWAY_ROUTE, Mesh, meshPodOf } from "./mesh.ts";
export { gatewayRoutes, routeOf } from "./routes.ts";
export type { GatewayRoute } from "./routes.ts";
export type {
  MeshOptions,
  MeshPod,
  MeshRequest,
  MeshResponse,
  MeshTarget,
  Rejection,
} from "./mesh.ts";
export {
  admitted,
  bucketTokens,
  decide,
  INBOUND_ROUTE,
  newProxyState,
  RATE_LIMITED_BODY,
} from "./proxy.ts";
export type { BucketId, Decision, ProxyState } from "./proxy.ts";
export { NO_LIMIT, proxyConfig } from "./proxyconfig.ts";
export type { ProxyConfig } from "./proxyconfig.ts";
export { readEnvoyFilter } from "./envoyfilter.ts";
export type { ProxyContext } from "../api/mesh.ts";
export type {
  EnvoyFilterModel,
  EnvoyFilterResult,
  RouteAction,
  RoutePatch,
} from "./envoyfilter.ts";
export { patchRouteConfiguration, routeConfigurationErrors, routeReached } from "./route_config.ts";
export {
  LOCAL_RATELIMIT_FILTER,
  LOCAL_RATELIMIT_TYPE,
  MIN_FILL_INTERVAL_MS,
} from "./envoyconfig.ts";
export {
  consume,
  fillResetSeconds,
  fillsDue,
  newBucket,
  nextFillAt,
  refill,
  tokensAt,
} from "./bucket.ts";
export type { BucketSpec, TokenBucket } from "./bucket.ts";
export { newContinuousBucket } from "./continuous.ts";
export type { ContinuousBucket } from "./continuous.ts";
export { makeBucket } from "./limiter.ts";
export type { RateBucket } from "./limiter.ts";
export {
  DEFAULT_BEHAVIOUR,
  DEFAULT_ENVOY,
  describeBehaviour,
  DYNAMIC_DESCRIPTORS_MINOR,
  envoyBehaviour,
  ISTIO_ENVOY,
  istioOf,
  NEWEST_ISTIO,
} from "./envoy.ts";
export type { EnvoyBehaviour, Refill, ResetHeader } from "./envoy.ts";
export type { Request, Response } from "./request.ts";
export { canonicalAddress } from "./address.ts";
export { admit, withoutFragment } from "./connection_manager.ts";
export type { Admitted, Downstream } from "./connection_manager.ts";
export {
  counterKey,
  EngineConfig,
  engineConfigOfFilters,
  EngineCounters,
  EngineModel,
  engineSeconds,
  loadEngineDomain,
  shouldRateLimit,
  UNIT_SECONDS,
  WINDOW_UNITS,
  windowStart,
} from "./engine.ts";
export type {
  DescriptorAnswer,
  EngineAnswer,
  EngineClient,
  EngineReplica,
  EngineRequest,
  EngineResult,
  FiltersConfig,
  ModelDescriptor,
  ModelDomain,
  ModelDomainLoad,
  ModelLimit,
  WindowUnit,
} from "./engine.ts";
export { closestToLimit, DEFAULT_GLOBAL_TIMEOUT_MS, loadGlobalRateLimit } from "./global_filter.ts";
export type { GlobalDecision, GlobalRateLimit } from "./global_filter.ts";
