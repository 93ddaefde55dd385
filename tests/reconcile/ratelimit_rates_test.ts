/**
 * The rate the whole workload admits: per bucket, tokensPerFill / fillInterval on one Pod times the
 * selected Pods with a mesh proxy. It follows scaling, is read from the filter in force (a refused
 * generation does not change it), and the same Pods give the same status: no write at rest.
 */
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { bucketRates, filterLimits } from "../../src/reconcile/ratelimit/input.ts";
import {
  applyPlan,
  bucket,
  input,
  pod,
  rateLimit,
  reconcileWorld,
  withProxy,
  type World,
  writesOf,
} from "./ratelimit_fixtures.ts";

const sidecars = (n: number) =>
  Array.from({ length: n }, (_, i) => withProxy(pod(`web-${i}`, { app: "httpbin" }), "sidecar"));

const rules = [{ path: "/slow", bucket: bucket(5, 1, "2m") }];

function settle(world: World, pods: KubeObject[]): World {
  return applyPlan(world, reconcileWorld(world, input(world.rateLimit, { pods })));
}

const ratesOf = (w: World) => (w.rateLimit.status as { rates?: unknown }).rates;

Deno.test("status.rates: per Pod and for all Pods with sidecars, every bucket", () => {
  const w = settle({ rateLimit: rateLimit({ buckets: rules }) }, sidecars(3));
  assert.deepEqual(ratesOf(w), [
    { bucket: "default", perPod: "10/30s", workload: "30/30s" },
    { bucket: "0", perPod: "1/2m", workload: "3/2m" },
  ]);
});

Deno.test("Pods without a sidecar add nothing to the workload's rate", () => {
  const pods = [...sidecars(2), pod("bare", { app: "httpbin" })];
  const w = settle({ rateLimit: rateLimit() }, pods);
  assert.deepEqual(ratesOf(w), [{ bucket: "default", perPod: "10/30s", workload: "20/30s" }]);
});

Deno.test("the rate follows scaling, and nothing is written while the Pods stay", () => {
  let w = settle({ rateLimit: rateLimit() }, sidecars(3));
  // At rest: the same Pods, the same status, no write at all.
  for (let i = 0; i < 3; i++) {
    const plan = reconcileWorld(w, input(w.rateLimit, { pods: sidecars(3) }));
    assert.deepEqual(writesOf(w, plan), []);
    w = applyPlan(w, plan);
  }
  // Scaled to 5: one status write with the new figure, then rest again.
  const up = reconcileWorld(w, input(w.rateLimit, { pods: sidecars(5) }));
  assert.deepEqual(writesOf(w, up), ["status"]);
  w = applyPlan(w, up);
  assert.deepEqual(ratesOf(w), [{ bucket: "default", perPod: "10/30s", workload: "50/30s" }]);
  assert.deepEqual(writesOf(w, reconcileWorld(w, input(w.rateLimit, { pods: sidecars(5) }))), []);
  // Scaled to zero: the figure says so.
  w = settle(w, []);
  assert.deepEqual(ratesOf(w), [{ bucket: "default", perPod: "10/30s", workload: "0/30s" }]);
});

Deno.test("a refused generation leaves the rates of the limit in force", () => {
  const good = settle({ rateLimit: rateLimit({ generation: 1 }) }, sidecars(2));
  const bad: World = {
    ...good,
    rateLimit: {
      ...rateLimit({
        generation: 2,
        defaultBucket: bucket(1, 1, "1m"),
        buckets: [{ bucket: bucket(1, 1, "45s") }],
      }),
      status: good.rateLimit.status,
    },
  };
  const after = settle(bad, sidecars(2));
  assert.equal((after.rateLimit.status as { state: string }).state, "Error");
  assert.deepEqual(ratesOf(after), ratesOf(good));
});

Deno.test("no limit in place: no rates", () => {
  const w = settle({ rateLimit: rateLimit({ defaultBucket: bucket(0, 1, "1s") }) }, sidecars(1));
  assert.equal(ratesOf(w), undefined);
});

Deno.test("bucketRates: large counts stay exact and whole minutes read as minutes", () => {
  const rates = bucketRates(
    {
      shadow: false,
      buckets: [{ bucket: "default", tokensPerFill: 4294967295, fillInterval: "599999940s" }],
    },
    100000,
  );
  assert.deepEqual(rates, [{
    bucket: "default",
    perPod: "4294967295/9999999m",
    workload: "429496729500000/9999999m",
  }]);
  assert.equal(filterLimits({ apiVersion: "v1", kind: "X", metadata: { name: "x" } }), undefined);
});
