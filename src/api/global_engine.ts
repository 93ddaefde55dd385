/**
 * The global rate limit engine (envoyproxy/ratelimit, docs/global-engine.md) as the proxies reach
 * it, and the names of Envoy's filter that asks it: one place for the Service the engine's
 * deployment (a later step of issue #43) will create and the filters point at.
 */

/** Name of Envoy's global rate limit HTTP filter. */
export const RATELIMIT_FILTER = "envoy.filters.http.ratelimit";
/** Type URL of its config (`envoy.extensions.filters.http.ratelimit.v3.RateLimit`). */
export const RATELIMIT_TYPE =
  "type.googleapis.com/envoy.extensions.filters.http.ratelimit.v3.RateLimit";

/** The engine's Service: its name, namespace and gRPC port (the engine's `GRPC_PORT` default). */
export const GLOBAL_ENGINE_SERVICE = {
  name: "ratelimit-engine",
  namespace: "platform-ratelimit",
  grpcPort: 8081,
} as const;

/** The DNS domain of the cluster's Services, as Istio names its outbound clusters. */
export const CLUSTER_DOMAIN = "cluster.local";

/** The engine Service's host name in the mesh's registry. */
export const GLOBAL_ENGINE_HOST =
  `${GLOBAL_ENGINE_SERVICE.name}.${GLOBAL_ENGINE_SERVICE.namespace}.svc.${CLUSTER_DOMAIN}`;

/**
 * The Envoy cluster Istio makes for the engine's gRPC port on every proxy that sees the Service:
 * `outbound|<port>||<host>` (istio.io/istio pilot/pkg/model `BuildSubsetKey` with an empty
 * subset).
 */
export const GLOBAL_ENGINE_CLUSTER =
  `outbound|${GLOBAL_ENGINE_SERVICE.grpcPort}||${GLOBAL_ENGINE_HOST}`;

/**
 * How long a proxy waits for the engine's answer before the failure mode applies. Envoy's default
 * is 20 ms; 100 ms leaves room for the engine's Redis round trip across nodes under load, and keeps
 * what a slow or unreachable engine adds to a request small. Not measured against a real mesh yet.
 */
export const GLOBAL_ENGINE_TIMEOUT = "0.1s";

/**
 * The route `rate_limits` stage of global entries. local_ratelimit reads only the entries of its
 * own stage (0, its default) and the ratelimit filter only those of its `stage`: each filter
 * takes `getApplicableRateLimit(stage)` of the route's policy (envoyproxy/envoy
 * source/extensions/filters/http/local_ratelimit/local_ratelimit.cc and
 * source/extensions/filters/http/ratelimit/ratelimit.cc `populateRateLimitDescriptors`), so no
 * local descriptor reaches the engine and no global one a local bucket.
 */
export const GLOBAL_STAGE = 1;

/** The engine's domain of a RateLimit: `<namespace>/<name>` (docs/global-engine.md "Metrics"). */
export function globalDomain(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}
