/** A runtime Cache as the manager makes it for the RateLimit controller, for controller tests. */
import { RESOURCES } from "../../src/api/resources.ts";
import { PROXY_STATUS } from "../../src/api/istiod.ts";
import { ENGINE_STATUS } from "../../src/api/engine_status.ts";
import { ENVOYFILTER_CRD, rateLimitController } from "../../src/controllers/ratelimit.ts";
import { IMAGES, NOW } from "../reconcile/serverless_fixtures.ts";
import { Cache } from "../../src/runtime/cache/mod.ts";
import type { KubeObject, ResourceType } from "../../src/api/object.ts";

/**
 * The types the controller watches (ProxyStatus only when it asks istiod, EngineStatus only when it
 * reads the engine back).
 */
export const TYPES: ResourceType[] = [
  RESOURCES.RateLimit,
  RESOURCES.EnvoyFilter,
  RESOURCES.Pod,
  RESOURCES.CustomResourceDefinition,
  PROXY_STATUS,
  ENGINE_STATUS,
];

/**
 * A Cache with the controller's indexes, listing `objects` (every watched type live), Pods and
 * EnvoyFilters projected to what the controller reads.
 */
export function cacheOf(objects: readonly KubeObject[]): Cache {
  const cache = new Cache();
  for (const ix of rateLimitController.indexes ?? []) cache.addIndex(ix.type, ix.name, ix.keys);
  for (const type of TYPES) {
    const watch = rateLimitController.watches.find((w) => w.type === type);
    const store = cache.store(type, undefined, watch?.project);
    store.handle({ type: "init" });
    for (const object of objects.filter((o) => o.kind === type.kind)) {
      store.handle({ type: "init-apply", object });
    }
    store.handle({ type: "init-done" });
  }
  return cache;
}

/** What the runtime hands the controller's reconcile in these tests. */
export const CTX = { now: NOW, images: IMAGES, namespace: "platform-system" };

/** The EnvoyFilter CRD: the mesh is installed. */
export const MESH_CRD: KubeObject = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: ENVOYFILTER_CRD },
};
