/** rateLimitController: watches, triggers, and the reconcile reading the cache. */
import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import {
  ENVOYFILTER_CRD,
  loadRateLimitReducer,
  rateLimitController,
} from "../../src/controllers/ratelimit.ts";
import { type KubeObject, objectKey, type ResourceType } from "../../src/api/object.ts";
import {
  type CacheReader,
  type ReconcileContext,
  triggersOf,
} from "../../src/runtime/controller_spec.ts";
import { FILTER_PROJECTION } from "../../src/controllers/ratelimit_cache.ts";
import { pod, rateLimit } from "./ratelimit_fixtures.ts";

// The reducer loads with a controller's preload; reconcile is called directly here.
await loadRateLimitReducer();

function cacheOf(objects: KubeObject[]): CacheReader {
  const of = (type: ResourceType) =>
    objects.filter((o) => o.kind === type.kind).sort((
      a,
      b,
    ) => (objectKey(a) < objectKey(b) ? -1 : 1));
  return {
    list: (type, namespace) =>
      of(type).filter((o) => namespace === undefined || o.metadata.namespace === namespace),
    get: (type, namespace, name) =>
      of(type).find((o) => o.metadata.name === name && o.metadata.namespace === namespace),
  };
}

const crd: KubeObject = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: ENVOYFILTER_CRD },
};
const ctx: ReconcileContext = {
  now: 1_700_000_000_000,
  namespace: "platform-system",
  images: {
    serverlessController: "",
    kedaOperator: "",
    kedaMetricsServer: "",
    kedaAdmissionWebhooks: "",
  },
};

Deno.test("watches EnvoyFilters (optional, unfiltered), Pods and CRDs", () => {
  assert.equal(rateLimitController.name, "ratelimit");
  assert.equal(rateLimitController.primary, RESOURCES.RateLimit);
  const { trigger: _, ...ef } = rateLimitController.watches.find((w) =>
    w.type === RESOURCES.EnvoyFilter
  )!;
  assert.deepEqual(ef, {
    type: RESOURCES.EnvoyFilter,
    optional: true,
    project: FILTER_PROJECTION,
  });
  assert.ok(rateLimitController.watches.some((w) => w.type === RESOURCES.Pod));
  assert.ok(rateLimitController.watches.some((w) => w.type === RESOURCES.CustomResourceDefinition));
});

Deno.test("triggers: peers of a namespace, the filter's owner, everyone on the mesh CRD", () => {
  const a = rateLimit({ name: "a" });
  const b = rateLimit({ name: "b" });
  const c = rateLimit({ name: "c", namespace: "other" });
  const cache = cacheOf([a, b, c]);
  const t = triggersOf(rateLimitController);
  assert.deepEqual(t(RESOURCES.RateLimit, a, cache), ["demo/a", "demo/b"]);
  // A Pod wakes the RateLimits that select it, not its whole namespace.
  assert.deepEqual(t(RESOURCES.Pod, pod("p", { app: "httpbin", x: "1" }), cache), [
    "demo/a",
    "demo/b",
  ]);
  assert.deepEqual(t(RESOURCES.Pod, pod("p", { app: "x" }), cache), []);
  assert.deepEqual(t(RESOURCES.Pod, pod("p", { app: "httpbin" }, "other"), cache), ["other/c"]);
  const ef = {
    apiVersion: "networking.istio.io/v1alpha3",
    kind: "EnvoyFilter",
    metadata: { name: "a", namespace: "demo" },
  };
  assert.deepEqual(t(RESOURCES.EnvoyFilter, ef, cache), ["demo/a"]);
  assert.deepEqual(t(RESOURCES.CustomResourceDefinition, crd, cache), [
    "demo/a",
    "demo/b",
    "other/c",
  ]);
  const otherCrd = { ...crd, metadata: { name: "functions.serverless.platform-project.io" } };
  assert.deepEqual(t(RESOURCES.CustomResourceDefinition, otherCrd, cache), []);
});

Deno.test("reconcile reads peers, pods, the filter and the CRD from the cache", () => {
  const older = rateLimit({ name: "a", created: "2024-01-01T00:00:00Z" });
  const newer = rateLimit({ name: "b", created: "2024-02-01T00:00:00Z" });
  const state = (objects: KubeObject[], key: string) =>
    (rateLimitController.reconcile(key, cacheOf(objects), ctx)?.status as {
      conditions: Array<{ type: string; reason: string }>;
    })
      .conditions.find((c) => c.type === "Ready")!.reason;
  assert.equal(state([crd, older, newer], "demo/a"), "Applied");
  assert.equal(state([crd, older, newer], "demo/b"), "Conflict");
  assert.equal(state([older], "demo/a"), "MeshMissing");
  assert.equal(rateLimitController.reconcile("demo/zzz", cacheOf([crd]), ctx), undefined);
  const plan = rateLimitController.reconcile("demo/a", cacheOf([crd, older]), ctx)!;
  assert.equal(plan.apply[0].metadata.name, "a");
});
