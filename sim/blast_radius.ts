/**
 * The simulated mesh's blast radius rule, as the checks read the world: an EnvoyFilter or RateLimit
 * in the mesh's root namespace reaches matching Pods of every namespace, and may reach only
 * ingress gateways (router proxies). Read from the cluster's own objects, not the operator's.
 */
import { isActivePod, meshProxyOf } from "../src/api/pod.ts";
import { RESOURCES } from "../src/api/resources.ts";
import { DEFAULT_MESH } from "../src/dataplane/mod.ts";
import { selects } from "../src/api/selector.ts";
import type { KubeObject } from "../src/api/object.ts";
import type { Store } from "./cluster/store.ts";

/** The simulated mesh's root namespace. */
export const ROOT_NAMESPACE = DEFAULT_MESH.rootNamespace;

/**
 * `namespace/name` of the Pods that a selector in `namespace` reaches though they are not gateways:
 * none outside the root namespace. `all`: count Pods being deleted or finished too.
 */
export function nonGatewaysReached(
  store: Store,
  namespace: string | undefined,
  selector: Record<string, string> | undefined,
  all = false,
): string[] {
  if (namespace !== ROOT_NAMESPACE || !selector) return [];
  return store.objects(RESOURCES.Pod)
    .filter((p: KubeObject) =>
      (all || isActivePod(p)) && selects(selector, p.metadata.labels ?? {}) &&
      meshProxyOf(p) !== "router"
    )
    .map((p) => `${p.metadata.namespace}/${p.metadata.name}`);
}
