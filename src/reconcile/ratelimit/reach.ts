/**
 * Where a RateLimit's EnvoyFilter applies and which proxies take it. In the mesh's root namespace a
 * filter reaches matching Pods of every namespace (Istio's rule), so there only a limit on the
 * ingress gateway is allowed: one that would reach any other Pod is refused before it is applied.
 * Which patch context the filter uses comes from the Pods it selects: a gateway's proxy runs as a
 * router and applies GATEWAY patches only, a sidecar SIDECAR_INBOUND ones only.
 */
import { at, isObject } from "../../api/json.ts";
import type { KubeObject } from "../../api/object.ts";
import {
  contextOf,
  isMeshWide,
  namesGateway,
  PROXY_CONTEXTS,
  type ProxyContext,
  reaches,
} from "../../api/mesh.ts";
import { isActivePod, meshProxyOf, podName, podNamespace } from "../../api/pod.ts";
import { namedList, selectorText } from "./enforcement.ts";

/** Where a RateLimit's filter applies. */
export interface Reach {
  /** The RateLimit's (and its filter's) namespace. */
  namespace: string;
  /** The mesh's config root namespace. */
  rootNamespace: string;
  /** True in the root namespace: the filter reaches Pods of every namespace. */
  meshWide: boolean;
}

/** The reach of a filter in `namespace`. */
export function reachOf(namespace: string, rootNamespace: string): Reach {
  return { namespace, rootNamespace, meshWide: isMeshWide(namespace, rootNamespace) };
}

/** The Pods (any objects) of namespaces the reach covers; the rest are dropped unread. */
export function podsInReach(reach: Reach, pods: readonly unknown[]): readonly unknown[] {
  if (reach.meshWide) return pods;
  return pods.filter((p) => reaches(reach.namespace, podNamespace(p), reach.rootNamespace));
}

/**
 * The patch contexts for a filter whose selector selects `selected` (Pods in reach): those of the
 * proxies the active ones run, so each of them takes it. With no such Pod, the contexts of the
 * filter in place (`held`), so scaling a workload to zero rewrites nothing; else GATEWAY where
 * only a gateway may be limited (the root namespace) or the selector names a gateway by
 * convention, and SIDECAR_INBOUND otherwise.
 */
export function patchContexts(
  selected: readonly unknown[],
  selector: Readonly<Record<string, string>>,
  reach: Reach,
  held?: readonly ProxyContext[],
): ProxyContext[] {
  const found = new Set<ProxyContext>();
  for (const pod of selected) {
    const proxy = isActivePod(pod) ? meshProxyOf(pod) : undefined;
    if (proxy) found.add(contextOf(proxy));
  }
  if (found.size > 0) return PROXY_CONTEXTS.filter((c) => found.has(c));
  if (held && held.length > 0) return [...held];
  return reach.meshWide || namesGateway(selector) ? ["GATEWAY"] : ["SIDECAR_INBOUND"];
}

/** The contexts an EnvoyFilter's patches name (ours name one or both, never ANY). */
export function filterContexts(ef: KubeObject): ProxyContext[] {
  const patches = at(ef, "spec", "configPatches");
  if (!Array.isArray(patches)) return [];
  const named = new Set<unknown>();
  for (const p of patches) if (isObject(p)) named.add(at(p, "match", "context"));
  return PROXY_CONTEXTS.filter((c) => named.has(c));
}

/**
 * Of the Pods a mesh-wide filter selects, the active ones that are not gateways (`ns/name`,
 * sorted): Pods such a filter must not reach. Empty outside the root namespace.
 */
export function strayPods(reach: Reach, selected: readonly unknown[]): string[] {
  if (!reach.meshWide) return [];
  return selected
    .filter((p) => isActivePod(p) && meshProxyOf(p) !== "router")
    .map((p) => `${podNamespace(p)}/${podName(p)}`)
    .sort();
}

/** Why a root-namespace selector is refused: it reaches `strays`, which are not gateways. */
export function meshWideProblem(
  reach: Reach,
  selector: Readonly<Record<string, string>>,
  strays: readonly string[],
): string {
  return `spec.selectorLabels ${
    selectorText(selector)
  } selects Pods that are not ingress gateways (${
    namedList(strays)
  }); in ${reach.namespace}, the mesh's root namespace, an EnvoyFilter applies to every namespace, so only the ingress gateway may be limited here: create the RateLimit in the workload's own namespace`;
}
