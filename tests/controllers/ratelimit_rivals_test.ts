/**
 * The RateLimit controller reads only a RateLimit's rivals (ratelimit_index.ts), not its whole
 * namespace, from a cache that keeps only what it reads of Pods and EnvoyFilters
 * (ratelimit_cache.ts). Checked on random namespaces of RateLimits, kept EnvoyFilters and Pods over a few
 * labels, so that selectors nest, overlap on some Pods, or only look alike:
 * - its reconcile plans exactly what the reducer plans given every RateLimit and Pod there;
 * - whenever adding or removing a RateLimit, a filter or a Pod changes another RateLimit's plan,
 *   the trigger of that change wakes it (seen from the cache before and after the change).
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { RESOURCES } from "../../src/api/resources.ts";
import {
  ENVOYFILTER_CRD,
  loadRateLimitReducer,
  rateLimitController,
} from "../../src/controllers/ratelimit.ts";
import { cacheOf, TYPES } from "./ratelimit_cache_fixtures.ts";
import { type KubeObject, objectKey } from "../../src/api/object.ts";
import { reconcileRateLimit } from "../../src/reconcile/ratelimit/mod.ts";
import { IMAGES, NOW } from "../reconcile/serverless_fixtures.ts";
import { pod, rateLimit } from "../reconcile/ratelimit_fixtures.ts";
import { triggersOf } from "../../src/runtime/controller_spec.ts";

// The reducer loads with a controller's preload; reconcile is called directly here.
await loadRateLimitReducer();

const ctx = { now: NOW, images: IMAGES, namespace: "platform-system" };
const crd: KubeObject = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: ENVOYFILTER_CRD },
};
const labels = fc.dictionary(fc.constantFrom("a", "b", "c"), fc.constantFrom("1", "2"));
const selector = labels.filter((l) => Object.keys(l).length > 0);

/** A RateLimit, and maybe the filter of an earlier generation with another selector. */
const member = fc.record({
  selector,
  created: fc.integer({ min: 0, max: 3 }),
  held: fc.option(selector, { nil: undefined }),
  // A refused current generation keeps the held filter rather than replacing it.
  invalid: fc.boolean(),
});

/** A Pod's labels, how (if at all) it has a mesh proxy, and its phase. */
const podArb = fc.record({
  labels,
  proxy: fc.constantFrom("none", "container", "native", "init", "annotation"),
  phase: fc.constantFrom("Running", "Pending", "Succeeded"),
});

const world = fc.record({
  members: fc.array(member, { minLength: 1, maxLength: 6 }),
  pods: fc.array(podArb, { maxLength: 6 }),
});

function podObject(i: number, p: typeof podArb extends fc.Arbitrary<infer P> ? P : never) {
  const base = pod(`p-${i}`, p.labels);
  const proxy = { name: "istio-proxy", image: "proxy:1", restartPolicy: "Always" };
  return {
    ...base,
    metadata: {
      ...base.metadata,
      resourceVersion: String(10 + i),
      ...(p.proxy === "annotation"
        ? { annotations: { "sidecar.istio.io/status": "{}", other: "x" } }
        : {}),
    },
    spec: {
      nodeName: "n",
      containers: [{ name: "app", image: "app:1" }, ...(p.proxy === "container" ? [proxy] : [])],
      ...(p.proxy === "native" ? { initContainers: [proxy] } : {}),
      ...(p.proxy === "init" ? { initContainers: [{ name: "istio-proxy" }] } : {}),
    },
    status: { phase: p.phase, conditions: [{ type: "Ready", status: "True" }] },
  } as KubeObject;
}

type World = typeof world extends fc.Arbitrary<infer W> ? W : never;

function objectsOf(w: World): KubeObject[] {
  const out: KubeObject[] = [crd];
  w.members.forEach((m, i) => {
    const name = `rl-${i}`;
    const created = `2025-01-0${1 + m.created}T00:00:00Z`;
    const base = { name, created, selectorLabels: m.selector, generation: m.held ? 2 : 1 };
    out.push(
      rateLimit(
        m.invalid
          ? { ...base, defaultBucket: { maxTokens: 0, tokensPerFill: 1, fillInterval: "1s" } }
          : base,
      ),
    );
    if (m.held) {
      const earlier = rateLimit({ name, created, selectorLabels: m.held });
      const plan = reconcileRateLimit({
        rateLimit: earlier,
        peers: [],
        pods: [],
        meshInstalled: true,
        now: NOW,
      });
      out.push({ ...plan.apply[0], metadata: { ...plan.apply[0].metadata, resourceVersion: "1" } });
    }
  });
  w.pods.forEach((p, i) => out.push(podObject(i, p)));
  return out;
}

/** The reducer's plan given every RateLimit and Pod of the namespace: what rivals must match. */
function fullPlan(objects: readonly KubeObject[], key: string) {
  const rl = objects.find((o) => o.kind === "RateLimit" && objectKey(o) === key)!;
  const filters = new Map(
    objects.filter((o) => o.kind === "EnvoyFilter").map((o) => [objectKey(o), o]),
  );
  return reconcileRateLimit({
    rateLimit: rl,
    peers: objects.filter((o) => o.kind === "RateLimit"),
    pods: objects.filter((o) => o.kind === "Pod"),
    envoyFilter: filters.get(key),
    peerFilters: filters,
    meshInstalled: true,
    now: NOW,
  });
}

/** Every RateLimit's plan, by the controller (`full`: by the reducer given the whole namespace). */
function plans(objects: readonly KubeObject[], full = false): Map<string, unknown> {
  const cache = cacheOf(objects);
  const out = new Map<string, unknown>();
  for (const rl of objects.filter((o) => o.kind === "RateLimit")) {
    const key = objectKey(rl);
    out.set(key, full ? fullPlan(objects, key) : rateLimitController.reconcile(key, cache, ctx));
  }
  return out;
}

Deno.test("ratelimit rivals: the reconcile plans what the reducer plans with the whole namespace", () => {
  fc.assert(
    fc.property(world, (w) => {
      const objects = objectsOf(w);
      for (const [key, plan] of plans(objects)) assert.deepEqual(plan, fullPlan(objects, key), key);
    }),
    { numRuns: 300 },
  );
});

Deno.test("ratelimit rivals: a change that alters another RateLimit's plan wakes it", () => {
  fc.assert(
    fc.property(world, (w) => {
      const objects = objectsOf(w);
      const withAll = plans(objects, true);
      objects.forEach((changed, i) => {
        const type = TYPES.find((t) => t.kind === changed.kind)!;
        if (type === RESOURCES.CustomResourceDefinition) return;
        const without = objects.filter((_, j) => j !== i);
        const withoutPlans = plans(without, true);
        // Its add event sees the cache with it, its delete event the cache without it.
        const onAdd = new Set(triggersOf(rateLimitController)(type, changed, cacheOf(objects)));
        const onDelete = new Set(triggersOf(rateLimitController)(type, changed, cacheOf(without)));
        for (const [key, plan] of withoutPlans) {
          if (type === RESOURCES.RateLimit && key === objectKey(changed)) continue;
          const before = withAll.get(key);
          if (JSON.stringify(before) !== JSON.stringify(plan)) {
            const what = `${changed.kind} ${changed.metadata.name} changes ${key}`;
            assert.ok(onAdd.has(key), `added: ${what}`);
            assert.ok(onDelete.has(key), `deleted: ${what}`);
          }
        }
      });
    }),
    { numRuns: 200 },
  );
});
