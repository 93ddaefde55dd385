/**
 * The mesh's rules that decide where a RateLimit's EnvoyFilter applies: Istio's config root
 * namespace (a filter there reaches matching workloads of every namespace) and the patch context
 * each kind of proxy applies (a gateway's router takes GATEWAY patches, a sidecar
 * SIDECAR_INBOUND ones). Shared by the reducer, the data-plane model and the simulator, so that
 * all three draw the same blast radius.
 */
import type { MeshProxy } from "./pod.ts";

/**
 * Istio's default config root namespace: `meshConfig.rootNamespace` defaults to istiod's own
 * namespace, `istio-system` (istio/istio pkg/config/mesh/mesh.go, DefaultMeshConfig).
 */
export const ISTIO_ROOT_NAMESPACE = "istio-system";

/** The EnvoyFilter patch contexts the operator writes: inbound sidecars and gateways. */
export type ProxyContext = "SIDECAR_INBOUND" | "GATEWAY";
/** Every context, in the order a filter lists its patches. */
export const PROXY_CONTEXTS: readonly ProxyContext[] = ["SIDECAR_INBOUND", "GATEWAY"];

/** The context whose patches a proxy of this kind applies. */
export function contextOf(proxy: MeshProxy): ProxyContext {
  return proxy === "router" ? "GATEWAY" : "SIDECAR_INBOUND";
}

/**
 * Selector labels that name an ingress gateway by convention: Istio's and Kyma's
 * `istio: ingressgateway`, Istio's `app: istio-ingressgateway`, this project's
 * `app: mesh-ingressgateway`. Read only while no selected Pod says what proxy it runs.
 */
export const CONVENTIONAL_GATEWAY_LABELS: readonly (readonly [string, string])[] = [
  ["istio", "ingressgateway"],
  ["app", "istio-ingressgateway"],
  ["app", "mesh-ingressgateway"],
];

/** True when a selector carries one of the conventional gateway labels. */
export function namesGateway(selector: Readonly<Record<string, string>>): boolean {
  return CONVENTIONAL_GATEWAY_LABELS.some(([k, v]) => selector[k] === v);
}

/** Where a namespace's EnvoyFilters apply: its own namespace, or every one (the root namespace). */
export function isMeshWide(namespace: string, rootNamespace: string): boolean {
  return namespace === rootNamespace;
}

/** True when a filter of `filterNamespace` reaches Pods of `podNamespace` (Istio's rule). */
export function reaches(filterNamespace: string, podNamespace: string, rootNamespace: string) {
  return filterNamespace === podNamespace || filterNamespace === rootNamespace;
}
