/**
 * The RateLimit controller's adapter: an EnvoyFilter watch that has not listed yet holds writes;
 * Pods reach RateLimits through the indexes; the reconcile's input comes from them.
 */
import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import {
  ENVOYFILTER_CRD,
  loadRateLimitReducer,
  rateLimitController,
} from "../../src/controllers/ratelimit.ts";
import { cacheOf } from "./ratelimit_cache_fixtures.ts";
import type { KubeObject, ResourceType } from "../../src/api/object.ts";
import { type CacheReader, triggersOf } from "../../src/runtime/controller_spec.ts";
import { IMAGES, NOW } from "../reconcile/serverless_fixtures.ts";
import { pod, rateLimit } from "../reconcile/ratelimit_fixtures.ts";
import { fakeCache } from "../reconcile/module_fixtures.ts";

// The reducer loads with a controller's preload; reconcile is called directly here.
await loadRateLimitReducer();

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

function counting(cache: CacheReader): { reader: CacheReader; lists: string[] } {
  const lists: string[] = [];
  const reader: CacheReader = {
    list: (type, ns) => {
      lists.push(type.kind);
      return cache.list(type, ns);
    },
    get: (type, ns, name) => cache.get(type, ns, name),
    isLive: (type) => cache.isLive?.(type) ?? true,
    byIndex: (type, index, value) => cache.byIndex!(type, index, value),
  };
  return { reader, lists };
}

function sidecarPod(name: string, labels: Record<string, string>, sidecar: boolean): KubeObject {
  return {
    ...pod(name, labels),
    spec: { containers: [{ name: "app" }, ...(sidecar ? [{ name: "istio-proxy" }] : [])] },
  };
}

function filterOf(rl: KubeObject): KubeObject {
  const plan = rateLimitController.reconcile(objectKeyOf(rl), cacheOf([crd, rl]), ctx)!;
  return plan.apply[0];
}

function objectKeyOf(o: KubeObject): string {
  return `${o.metadata.namespace}/${o.metadata.name}`;
}

Deno.test("ratelimit: a Pod event finds its RateLimits by index, without listing a namespace", () => {
  const many = Array.from(
    { length: 500 },
    (_, i) => rateLimit({ name: `rl-${i}`, selectorLabels: { app: `app-${i}`, tier: "web" } }),
  );
  const target = rateLimit({ name: "target", selectorLabels: { app: "httpbin" } });
  // `kept` selects other Pods now, but its EnvoyFilter still holds app=httpbin: it is woken too.
  const kept = rateLimit({ name: "kept", selectorLabels: { app: "moved" } });
  const keptFilter = filterOf(rateLimit({ name: "kept", selectorLabels: { app: "httpbin" } }));
  const cache = cacheOf([crd, ...many, target, kept, keptFilter]);
  const { reader, lists } = counting(cache);
  const p = sidecarPod("httpbin-1", { app: "httpbin", tier: "web" }, true);
  assert.deepEqual(triggersOf(rateLimitController)(RESOURCES.Pod, p, reader).sort(), [
    "demo/kept",
    "demo/target",
  ]);
  assert.deepEqual(
    triggersOf(rateLimitController)(
      RESOURCES.Pod,
      sidecarPod("x", { app: "app-7", tier: "web" }, true),
      reader,
    ),
    ["demo/rl-7"],
  );
  assert.deepEqual(lists, [], "no list of RateLimits or Pods on a Pod event");
});

Deno.test("ratelimit: reconcile counts the selected Pods and their sidecars from the index", () => {
  const rl = rateLimit({ selectorLabels: { app: "httpbin" } });
  const objects = [
    crd,
    rl,
    sidecarPod("a", { app: "httpbin" }, true),
    sidecarPod("b", { app: "httpbin" }, false),
    sidecarPod("c", { app: "other" }, false),
  ];
  for (const cache of [cacheOf(objects), fakeCache(objects)]) {
    const status = rateLimitController.reconcile("demo/httpbin", cache, ctx)!.status as {
      podsSelected: number;
      podsWithSidecar: number;
      conditions: { type: string; reason: string; message: string }[];
    };
    assert.deepEqual([status.podsSelected, status.podsWithSidecar], [2, 1]);
    const enforced = status.conditions.find((c) => c.type === "Enforced")!;
    assert.equal(enforced.reason, "SidecarMissing");
    assert.match(enforced.message, /1 of 2 Pods with app=httpbin has no mesh sidecar.*: b;/);
  }
});

Deno.test("ratelimit: an older RateLimit's kept EnvoyFilter holds its Pods against a newer one", () => {
  // `older` was valid with app=httpbin, then edited to app=moved and refused: its filter stays.
  const older = rateLimit({
    name: "older",
    created: "2024-01-01T00:00:00Z",
    selectorLabels: { app: "moved" },
    buckets: [{ path: "/x", bucket: { maxTokens: 1, tokensPerFill: 1, fillInterval: "45s" } }],
    generation: 2,
  });
  const olderFilter = filterOf(
    rateLimit({
      name: "older",
      created: "2024-01-01T00:00:00Z",
      selectorLabels: { app: "httpbin" },
    }),
  );
  const newer = rateLimit({ name: "newer", created: "2024-02-01T00:00:00Z" });
  const objects = [crd, older, olderFilter, newer, sidecarPod("a", { app: "httpbin" }, true)];
  const plan = (key: string) => rateLimitController.reconcile(key, cacheOf(objects), ctx)!;
  const ready = (key: string) =>
    (plan(key).status as { conditions: { type: string; reason: string }[] }).conditions
      .find((c) => c.type === "Ready")!.reason;
  assert.equal(ready("demo/older"), "InvalidSpec");
  assert.deepEqual(plan("demo/older").delete, [], "the older one keeps its filter");
  assert.equal(ready("demo/newer"), "Conflict", "the newer one may not take the held Pods");
  assert.deepEqual(plan("demo/newer").apply, []);
});

Deno.test("ratelimit: a filter event wakes its owner and the rivals of the Pods it holds", () => {
  const a = rateLimit({ name: "a" });
  // b selects the same Pods as a's filter (wider), c others: only b's verdict can depend on it.
  const b = rateLimit({ name: "b", selectorLabels: { app: "httpbin", tier: "web" } });
  const c = rateLimit({ name: "c", selectorLabels: { app: "c" } });
  const ef = filterOf(a);
  const t = triggersOf(rateLimitController);
  assert.deepEqual(t(RESOURCES.EnvoyFilter, ef, cacheOf([crd, a, b, c, ef])), [
    "demo/a",
    "demo/b",
  ]);
  // Withdrawn (not in the cache) while its RateLimit stays: b may take the Pods now.
  assert.deepEqual(t(RESOURCES.EnvoyFilter, ef, cacheOf([crd, a, b, c])), ["demo/a", "demo/b"]);
  // Someone else's filter of the same name holds nothing: its namesake alone looks again...
  const foreign = { ...ef, metadata: { name: "a", namespace: "demo" }, spec: {} };
  assert.deepEqual(t(RESOURCES.EnvoyFilter, foreign, cacheOf([crd, a, b, c])), ["demo/a"]);
  // ...unless it patches a rate limit filter in: then every RateLimit of the namespace, whose
  // proxies it may share, looks again.
  const limiting = { ...ef, metadata: { name: "kyma", namespace: "demo" } };
  assert.deepEqual(t(RESOURCES.EnvoyFilter, limiting, cacheOf([crd, a, b, c])), [
    "demo/a",
    "demo/b",
    "demo/c",
  ]);
});

Deno.test("ratelimit: a deleted RateLimit's filter is deleted at once, not left to the garbage collector; no other filter is", () => {
  const filter = filterOf(rateLimit());
  const gone = (objects: KubeObject[], notLive: ResourceType[] = []) =>
    rateLimitController.reconcile("demo/httpbin", cacheWith([crd, ...objects], notLive), ctx);
  assert.deepEqual(gone([filter])?.delete, [{
    apiVersion: "networking.istio.io/v1alpha3",
    kind: "EnvoyFilter",
    namespace: "demo",
    name: "httpbin",
  }]);
  assert.deepEqual(gone([filter])?.apply, []);
  // Not ours (no labels), owned by another RateLimit, or not seen live yet: nothing.
  const unlabelled = structuredClone(filter);
  delete unlabelled.metadata.labels;
  assert.equal(gone([unlabelled]), undefined);
  const other = structuredClone(filter);
  other.metadata.ownerReferences = [{ ...other.metadata.ownerReferences![0], name: "other" }];
  assert.equal(gone([other]), undefined);
  assert.equal(gone([filter], [RESOURCES.EnvoyFilter]), undefined);
  assert.equal(gone([]), undefined);
});

Deno.test("ratelimit: another's EnvoyFilter that patches a rate limit filter into the same proxies is named in Enforced", () => {
  const rl = rateLimit();
  const other = (
    name: string,
    namespace: string,
    selector?: Record<string, string>,
    context = "SIDECAR_INBOUND",
    filter = "envoy.filters.http.local_ratelimit",
  ): KubeObject => ({
    apiVersion: "networking.istio.io/v1alpha3",
    kind: "EnvoyFilter",
    metadata: { name, namespace, labels: { "app.kubernetes.io/managed-by": "kyma" } },
    spec: {
      ...(selector ? { workloadSelector: { labels: selector } } : {}),
      configPatches: [{
        applyTo: "HTTP_FILTER",
        match: { context, listener: { filterChain: { filter: { name: "hcm" } } } },
        patch: { operation: "INSERT_BEFORE", value: { name: filter, typed_config: {} } },
      }],
    },
  });
  const enforced = (objects: KubeObject[]) => {
    const cache = cacheOf([crd, rl, sidecarPod("a", { app: "httpbin" }, true), ...objects]);
    const plan = rateLimitController.reconcile("demo/httpbin", cache, ctx)!;
    return (plan.status as { conditions: { type: string; reason: string; message: string }[] })
      .conditions.find((c) => c.type === "Enforced")!;
  };
  const kyma = enforced([other("kyma-httpbin", "demo", { app: "httpbin" })]);
  assert.equal(kyma.reason, "Enforced");
  assert.match(
    kyma.message,
    /; EnvoyFilter demo\/kyma-httpbin, not this operator's, patches a rate limit filter into the same proxies: a request passes both, which gives limits neither sets \(remove that filter or this RateLimit\)$/,
  );
  // From the mesh's root namespace, without a selector: every proxy; a global rate limit filter too.
  assert.match(
    enforced([
      other("mesh-wide", "istio-system"),
      other("global", "demo", undefined, "ANY", "envoy.filters.http.ratelimit"),
    ]).message,
    /EnvoyFilters demo\/global, istio-system\/mesh-wide, not this operator's, patch/,
  );
  // Other Pods, another namespace, the gateway's proxies, or no rate limit filter: not named.
  const none = other("plain", "demo", { app: "httpbin" });
  (none.spec as { configPatches: unknown[] }).configPatches = [];
  for (
    const f of [
      other("x", "demo", { app: "other" }),
      other("x", "elsewhere", { app: "httpbin" }),
      other("x", "demo", { app: "httpbin" }, "GATEWAY"),
      none,
    ]
  ) {
    assert.doesNotMatch(enforced([f]).message, /not this operator's/, f.metadata.name);
  }
});
