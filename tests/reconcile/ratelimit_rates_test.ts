/**
 * The rate the whole workload admits: per bucket, tokensPerFill / fillInterval on one Pod times the
 * selected Pods with a mesh proxy. It follows scaling, is read from the filter in force (a refused
 * generation does not change it), and the same Pods give the same status: no write at rest. The
 * limits are read from the filter's patches, never from its annotation, which says the same.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import type { KubeObject } from "../../src/api/object.ts";
import { bucketRates, filterLimits } from "../../src/reconcile/ratelimit/input.ts";
import {
  judgeSpec,
  LIMITS_ANNOTATION,
  limitsRecord,
} from "../../src/reconcile/ratelimit/render.ts";
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
      buckets: [{
        bucket: "default",
        maxTokens: 4294967295,
        tokensPerFill: 4294967295,
        fillInterval: "599999940s",
      }],
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

/** The filter a valid RateLimit renders. */
function filterOf(rl: KubeObject): KubeObject {
  const v = judgeSpec(rl, "demo");
  if (!v.ok) throw new Error(v.problems.join("; "));
  return v.desired;
}

/** `ef` with its limits annotation set to `text`, or removed. */
function annotated(ef: KubeObject, text: string | undefined): KubeObject {
  const { [LIMITS_ANNOTATION]: _, ...rest } = ef.metadata.annotations ?? {};
  const annotations = text === undefined ? rest : { ...rest, [LIMITS_ANNOTATION]: text };
  return { ...ef, metadata: { ...ef.metadata, annotations } };
}

Deno.test("the limits in force are read from the filter's patches, never from its annotation", () => {
  const ef = filterOf(rateLimit({ enforce: false, buckets: rules }));
  const digest = filterLimits(ef)?.digest;
  assert.equal(typeof digest, "string", "the route digest");
  const limits = {
    shadow: true,
    buckets: [
      { bucket: "default", maxTokens: 10, tokensPerFill: 10, fillInterval: "30s" },
      { bucket: "0", maxTokens: 5, tokensPerFill: 1, fillInterval: "120s" },
    ],
    digest,
  };
  assert.deepEqual(filterLimits(ef), limits);
  // The annotation is written for people, as before, and says the same.
  assert.equal(ef.metadata.annotations?.[LIMITS_ANNOTATION], "Shadow 10/30s 1/120s");
  // Another text, none, or garbage there changes nothing read.
  for (const text of ["Enforcing 99/1s", undefined, "garbage"]) {
    assert.deepEqual(filterLimits(annotated(ef, text)), limits, String(text));
  }
  // Patches that cannot be read give no limits, whatever the annotation says.
  const spec = ef.spec as { configPatches: unknown[] };
  const broken = (configPatches: unknown): KubeObject => ({
    ...ef,
    spec: { ...spec, configPatches },
  });
  assert.equal(filterLimits(broken(undefined)), undefined);
  assert.equal(filterLimits(broken(spec.configPatches.slice(0, 1))), undefined, "no route patch");
  const text = JSON.stringify(spec.configPatches);
  for (
    const [from, to] of [['"tokens_per_fill":10', '"tokens_per_fill":"10"'], ['"120s"', '"2m"']]
  ) {
    assert.equal(filterLimits(broken(JSON.parse(text.replace(from, to)))), undefined, to);
  }
});

Deno.test("property: what a filter's patches hold is what its annotation records", () => {
  const bucketArb = fc.record({
    maxTokens: fc.constant(4294967295),
    tokensPerFill: fc.integer({ min: 1, max: 4294967295 }),
    fillInterval: fc.constantFrom("1s", "30s", "2m", "999999999s", "9999999m"),
  });
  const rlArb = fc.record({
    enforce: fc.boolean(),
    defaultBucket: bucketArb,
    buckets: fc.array(bucketArb, { maxLength: 4 }),
  }).map(({ enforce, defaultBucket, buckets }) =>
    rateLimit({
      enforce,
      // Each a multiple of the default's: every rule's interval is the default's.
      defaultBucket,
      buckets: buckets.map((b, i) => ({
        path: `/r${i}`,
        bucket: { ...b, fillInterval: defaultBucket.fillInterval },
      })),
    })
  );
  fc.assert(
    fc.property(rlArb, (rl) => {
      const ef = filterOf(rl);
      const limits = filterLimits(ef);
      assert.ok(limits);
      assert.equal(limitsRecord(limits), ef.metadata.annotations?.[LIMITS_ANNOTATION]);
    }),
    { numRuns: 300 },
  );
});
