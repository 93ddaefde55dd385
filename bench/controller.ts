/**
 * The RateLimit controller's reconcile as the runtime calls it: cache reads (peers, Pods, the
 * EnvoyFilter, the mesh CRD) plus the reducer, with many RateLimits cached across namespaces.
 * This is the cost of each no-op reconcile in a wave (a resync, a new leadership term), which
 * runs back to back without I/O.
 */
import { parseRateLimit } from "../src/api/ratelimit.ts";
import { RESOURCES } from "../src/api/resources.ts";
import { ENVOYFILTER_CRD, loadRateLimitReducer } from "../src/controllers/ratelimit.ts";
import { CONTROLLERS } from "../src/controllers/registry.ts";
import { Cache } from "../src/runtime/mod.ts";
import type { KubeObject, ResourceType } from "../src/api/object.ts";
import type { ReconcileContext } from "../src/runtime/mod.ts";
import { reconcileRateLimit } from "../src/reconcile/ratelimit/mod.ts";
import { podObject, rateLimitObject } from "./fixtures.ts";
import type { Loop } from "./stats.ts";
import { IMAGES, NOW, stored } from "./worlds.ts";

// The reducer loads with a controller's preload; reconcile is called directly here.
await loadRateLimitReducer();

const rateLimitController = CONTROLLERS.ratelimit;

/** Namespaces of `perNamespace` RateLimits (4 rules) and Pods each, steady, in a runtime Cache. */
export function filledCache(
  namespaces: number,
  perNamespace: number,
): { cache: Cache; keys: string[] } {
  const cache = new Cache();
  // As the Manager does: the controller's indexes before any object arrives.
  for (const ix of rateLimitController.indexes ?? []) cache.addIndex(ix.type, ix.name, ix.keys);
  const fill = (type: ResourceType, objects: KubeObject[]) => {
    const watch = rateLimitController.watches.find((w) => w.type === type);
    const store = cache.store(type, undefined, watch?.project);
    store.handle({ type: "init" });
    for (const object of objects) store.handle({ type: "init-apply", object });
    store.handle({ type: "init-done" });
  };
  const rls: KubeObject[] = [];
  const pods: KubeObject[] = [];
  const efs: KubeObject[] = [];
  for (let n = 0; n < namespaces; n++) {
    const namespace = `bench-${n}`;
    const objects = Array.from(
      { length: perNamespace },
      (_, i) => rateLimitObject({ i, rules: 4, namespace, stored: true }),
    );
    const nsPods = objects.map((_, i) => podObject(i, { namespace }));
    for (const rateLimit of objects) {
      const plan = reconcileRateLimit({
        rateLimit,
        peers: [rateLimit],
        pods: [],
        meshInstalled: true,
        now: NOW,
      });
      rls.push({ ...rateLimit, status: plan.status });
      efs.push(stored(plan.apply[0]));
    }
    pods.push(...nsPods);
  }
  fill(RESOURCES.RateLimit, rls);
  fill(RESOURCES.Pod, pods);
  fill(RESOURCES.EnvoyFilter, efs);
  fill(RESOURCES.CustomResourceDefinition, [{
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: ENVOYFILTER_CRD, resourceVersion: "1" },
  }]);
  return { cache, keys: rls.map((o) => `${o.metadata.namespace}/${o.metadata.name}`) };
}

/**
 * Subject (controller reconcile from the cache) and baseline (cache get and parse of the primary)
 * loops. The parse is the least a reconcile does with its primary; a cache get alone (under a
 * microsecond) read 79 to 175 times cheaper than the reconcile from one fresh process to the next
 * on one quiet machine, too loose a yardstick for the ratio guard.
 */
export function controllerLoops(
  cache: Cache,
  keys: readonly string[],
): { subject: Loop; baseline: Loop } {
  const ctx = (i: number): ReconcileContext => ({
    now: NOW + i,
    images: IMAGES,
    namespace: "platform-system",
  });
  // Each loop goes on through the keys where its last call stopped: a run that calls it again
  // (stats.ts `minMs`) reads other RateLimits, not the same few again.
  let nextSubject = 0;
  let nextBaseline = 0;
  return {
    subject: (n) => {
      let writes = 0;
      for (let i = 0; i < n; i++, nextSubject++) {
        const key = keys[nextSubject % keys.length];
        writes += rateLimitController.reconcile(key, cache, ctx(nextSubject))?.apply.length ?? 0;
      }
      return writes;
    },
    baseline: (n) => {
      let found = 0;
      for (let i = 0; i < n; i++, nextBaseline++) {
        const key = keys[nextBaseline % keys.length];
        const slash = key.indexOf("/");
        const object = cache.get(RESOURCES.RateLimit, key.slice(0, slash), key.slice(slash + 1));
        if (object && parseRateLimit({ ...object, status: undefined }).ok) found++;
      }
      return found;
    },
  };
}
