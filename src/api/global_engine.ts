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

/**
 * The engine's Service: its name, namespace and ports, each the engine's own default
 * (envoyproxy/ratelimit src/settings/settings.go): `GRPC_PORT` 8081 (Envoy's calls), `PORT` 8080
 * (`/healthcheck`), `DEBUG_PORT` 6070 (`/rlconfig`, the configuration it has loaded); and the port
 * its Prometheus endpoint is given (`PROMETHEUS_ADDR`, the engine's default is 9090).
 */
export const GLOBAL_ENGINE_SERVICE = {
  name: "ratelimit-engine",
  namespace: "platform-ratelimit",
  grpcPort: 8081,
  httpPort: 8080,
  debugPort: 6070,
  metricsPort: 9090,
} as const;

/** The labels of the engine's Pods (and its Deployment's selector). */
export const GLOBAL_ENGINE_LABELS: Readonly<Record<string, string>> = {
  "app.kubernetes.io/name": "ratelimit-engine",
  "app.kubernetes.io/managed-by": "platform-operator",
};

/**
 * The operator's xDS server, from which every engine takes its configuration
 * (`CONFIG_TYPE=GRPC_XDS_SOTW`, docs/global-engine.md): the port each operator replica listens on
 * and the name of the Service in the operator's namespace that leads the engines to it.
 */
export const ENGINE_XDS = { port: 18001, serviceName: "platform-operator-xds" } as const;

/** The address the engines dial for their configuration: the xDS Service in the operator's namespace. */
export function engineXdsServerUrl(operatorNamespace: string): string {
  return `${ENGINE_XDS.serviceName}.${operatorNamespace}.svc:${ENGINE_XDS.port}`;
}

/**
 * The label that selects the operator's own Pods (deploy/deployment.yaml): what the engine's
 * NetworkPolicy lets reach its debug and health ports, and what the xDS Service leads to.
 */
export const OPERATOR_POD_LABELS: Readonly<Record<string, string>> = {
  "app.kubernetes.io/name": "platform-operator",
};

/** The engine Pods' container, ServiceAccount, PodDisruptionBudget and NetworkPolicy name. */
export const GLOBAL_ENGINE_CONTAINER = "ratelimit";

/**
 * The engine Pod template's annotation holding a digest of the Redis Secret's resourceVersion:
 * a rotated password or certificate changes it, so the Deployment rolls the engines, which read
 * the Secret only when they start.
 */
export const REDIS_SECRET_DIGEST_ANNOTATION = "ratelimit.platform-project.io/redis-secret-digest";

/**
 * The xDS type of the engine's configuration: one resource a domain
 * (envoyproxy/ratelimit api/ratelimit/config/ratelimit/v3/rls_conf.proto `RateLimitConfig`).
 */
export const ENGINE_CONFIG_TYPE =
  "type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig";

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

/**
 * Annotation on a RateLimit's EnvoyFilter: the engine's configuration of its domain, as JSON
 * (reconcile/ratelimit/engine_config.ts `EngineDomainConfig`), written by the same render as the
 * route entries whose descriptors it limits, and only when the global part is rendered. The
 * operator's xDS server hands the engines the set of these annotations on the filters it owns, so
 * an engine holds what the filters in place send (docs/global-engine.md).
 */
export const ENGINE_DOMAIN_ANNOTATION = "gateway.platform-project.io/ratelimit-engine-domain";
