/** The RateLimit controller's adapter: an EnvoyFilter watch that has not listed yet holds writes. */
import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { ENVOYFILTER_CRD, rateLimitController } from "../../src/controllers/ratelimit.ts";
import type { KubeObject, ResourceType } from "../../src/runtime/cluster.ts";
import type { CacheReader } from "../../src/runtime/controller.ts";
import { IMAGES, NOW } from "../reconcile/serverless_fixtures.ts";
import { pod, rateLimit } from "../reconcile/ratelimit_fixtures.ts";
import { fakeCache } from "../reconcile/singleton_world.ts";

const ctx = { now: NOW, images: IMAGES, namespace: "platform-system" };
const crd: KubeObject = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: ENVOYFILTER_CRD },
};

function cacheWith(objects: KubeObject[], notLive: ResourceType[]): CacheReader {
  return { ...fakeCache(objects), isLive: (type) => !notLive.includes(type) };
}

Deno.test("ratelimit: with the EnvoyFilter CRD present but its watch not live, nothing is written", () => {
  const objects = [rateLimit(), pod("httpbin-1", { app: "httpbin" }), crd];
  const held = rateLimitController.reconcile(
    "demo/httpbin",
    cacheWith(objects, [RESOURCES.EnvoyFilter]),
    ctx,
  )!;
  assert.deepEqual([held.apply, held.delete, held.status], [[], [], undefined]);
  assert.ok((held.requeueAfterMs ?? 0) > 0, "looks again soon");

  const live = rateLimitController.reconcile("demo/httpbin", cacheWith(objects, []), ctx)!;
  assert.equal(live.apply[0]?.kind, "EnvoyFilter", "applies the filter once the watch has listed");
});
