/**
 * The RateLimit controller: what the runtime watches for RateLimits, which keys a change wakes,
 * and the reconcile that reads the cache into `reconcileRateLimit`'s input.
 */
import { RESOURCES } from "../api/resources.ts";
import type { KubeObject, ResourceType } from "../runtime/cluster.ts";
import { objectKey } from "../runtime/cluster.ts";
import type { CacheReader, ControllerSpec } from "../runtime/controller.ts";
import { emptyPlan } from "../reconcile/plan.ts";
import { crdName, isUnknown } from "./unknown.ts";
import { reconcileRateLimit } from "../reconcile/ratelimit.ts";

/** The CRD whose presence means the mesh is installed. */
export const ENVOYFILTER_CRD = crdName(RESOURCES.EnvoyFilter);
/** How soon to look again while the EnvoyFilter watch has not listed yet. */
const UNKNOWN_FILTERS_REQUEUE_MS = 1000;

function allIn(cache: CacheReader, namespace: string | undefined): string[] {
  return cache.list(RESOURCES.RateLimit, namespace).map(objectKey);
}

/** The RateLimit controller (ControllerSpec for the runtime). */
export const rateLimitController: ControllerSpec = {
  name: "ratelimit",
  primary: RESOURCES.RateLimit,
  watches: [
    // Every EnvoyFilter, not only managed ones: a filter of the same name that someone else made
    // must be seen, so the operator neither overwrites nor deletes it.
    { type: RESOURCES.EnvoyFilter, optional: true },
    // Pods decide conflicts between RateLimits whose selectors only partly overlap.
    { type: RESOURCES.Pod },
    { type: RESOURCES.CustomResourceDefinition },
  ],
  triggers(type: ResourceType, obj: KubeObject, cache: CacheReader): string[] {
    const ns = obj.metadata.namespace;
    switch (type.kind) {
      // A RateLimit's peers' conflicts depend on it: wake its whole namespace.
      case "RateLimit":
      // A Pod's old labels are not known here, so every RateLimit of its namespace looks again.
      case "Pod":
        return allIn(cache, ns);
      case "EnvoyFilter":
        return ns ? [`${ns}/${obj.metadata.name}`] : [];
      case "CustomResourceDefinition":
        return obj.metadata.name === ENVOYFILTER_CRD ? allIn(cache, undefined) : [];
      default:
        return [];
    }
  },
  reconcile(key, cache, ctx) {
    const slash = key.indexOf("/");
    const namespace = key.slice(0, slash);
    const name = key.slice(slash + 1);
    const rateLimit = cache.get(RESOURCES.RateLimit, namespace, name);
    if (!rateLimit) return undefined;
    const meshInstalled =
      cache.get(RESOURCES.CustomResourceDefinition, undefined, ENVOYFILTER_CRD) !== undefined;
    // With the CRD present but its watch not listed yet, "no EnvoyFilter seen" is not "none": the
    // reducer would apply over a filter of the same name someone else made. Write nothing; look again.
    if (isUnknown(cache, RESOURCES.EnvoyFilter)) {
      return { ...emptyPlan(), requeueAfterMs: UNKNOWN_FILTERS_REQUEUE_MS };
    }
    return reconcileRateLimit({
      rateLimit,
      peers: cache.list(RESOURCES.RateLimit, namespace),
      pods: cache.list(RESOURCES.Pod, namespace),
      envoyFilter: cache.get(RESOURCES.EnvoyFilter, namespace, name),
      meshInstalled,
      now: ctx.now,
      lastOutcome: ctx.lastOutcome,
    });
  },
};
