import assert from "node:assert/strict";
import fc from "fast-check";
import { deepEqual } from "../../src/api/json.ts";
import { isSubset, ownedFieldMissing } from "../../src/runtime/diff.ts";
import { isObserved } from "../../src/reconcile/observed.ts";

const json = fc.jsonValue({ maxDepth: 4 });

Deno.test("isSubset: examples", () => {
  assert.equal(isSubset({ a: 1 }, { a: 1, b: 2 }), true);
  assert.equal(isSubset({ a: 1, b: 2 }, { a: 1 }), false);
  assert.equal(
    isSubset({ a: { b: [1, { c: 2 }] } }, { a: { b: [1, { c: 2, d: 3 }], e: 1 } }),
    true,
  );
  assert.equal(isSubset({ l: [1] }, { l: [1, 2] }), false, "arrays must have equal length");
  assert.equal(
    isSubset({ l: [2, 1] }, { l: [1, 2] }),
    false,
    "arrays compare element-wise in order",
  );
  assert.equal(isSubset({ a: "1" }, { a: 1 }), false);
  assert.equal(isSubset({ a: undefined }, {}), true);
  assert.equal(isSubset({ a: null }, {}), true);
});

Deno.test("isSubset allows for what the API server does to stored objects", () => {
  // Empty maps and lists, and nulls, are omitted by the server.
  assert.equal(isSubset({ a: {}, l: [], n: null }, {}), true);
  assert.equal(isSubset({ spec: { selector: {} } }, { spec: { selector: null } }), true);
  assert.equal(isSubset({ a: {} }, { a: "x" }), false, "present with another type is a change");
  assert.equal(isSubset({ l: [] }, { l: [1] }), false);
  // Quantities come back canonical, wherever resources are.
  const res = (cpu: unknown, memory: unknown) => ({
    spec: { template: { spec: { containers: [{ resources: { limits: { cpu, memory } } }] } } },
  });
  assert.equal(isSubset(res("0.5", "1024Mi"), res("500m", "1Gi")), true);
  assert.equal(isSubset(res(1, "1.5Gi"), res("1", "1536Mi")), true);
  assert.equal(isSubset(res("1", "1Gi"), res("2", "1Gi")), false);
  const divisor = { valueFrom: { resourceFieldRef: { resource: "limits.cpu", divisor: "1000m" } } };
  assert.equal(
    isSubset(divisor, {
      valueFrom: { resourceFieldRef: { resource: "limits.cpu", divisor: "1" } },
    }),
    true,
  );
  // Elsewhere strings that read as quantities are just strings.
  assert.equal(
    isSubset({ env: [{ name: "X", value: "0.5" }] }, { env: [{ name: "X", value: "500m" }] }),
    false,
  );
  assert.equal(isSubset({ data: { limits: "1" } }, { data: { limits: "1.0" } }), false);
});

Deno.test("the runner and the reducers' install diff use one comparison", () => {
  assert.equal(isSubset, isObserved);
});

Deno.test("isSubset: every value is a subset of itself and of any extension of itself", () => {
  fc.assert(
    fc.property(json, fc.dictionary(fc.string(), json), (v, extra) => {
      assert.equal(isSubset(v, structuredClone(v)), true);
      if (v !== null && typeof v === "object" && !Array.isArray(v)) {
        assert.equal(isSubset(v, { ...extra, ...structuredClone(v) }), true);
      }
    }),
    { seed: 42, numRuns: 300 },
  );
});

Deno.test("deepEqual: agrees with mutual subset on JSON values and ignores key order", () => {
  fc.assert(
    fc.property(json, json, (a, b) => {
      assert.equal(deepEqual(a, b), deepEqual(b, a));
      if (deepEqual(a, b)) assert.equal(isSubset(a, b) && isSubset(b, a), true);
    }),
    { seed: 42, numRuns: 300 },
  );
  assert.equal(deepEqual({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 }), true);
  assert.equal(deepEqual({ a: 1 }, { a: 1, b: undefined }), true);
  assert.equal(deepEqual({ a: 1 }, { a: 1, b: null }), false);
});

Deno.test("ownedFieldMissing finds map keys the operator owns that the desired state dropped", () => {
  const owned = {
    "f:metadata": { "f:labels": { "f:a": {}, "f:b": {} } },
    "f:spec": { "f:x": {}, "f:list": { 'k:{"name":"c"}': {} } },
  };
  const desired = { metadata: { labels: { a: "1", b: "2" } }, spec: { x: 1, list: [] } };
  assert.equal(ownedFieldMissing(owned, desired), undefined);
  assert.equal(
    ownedFieldMissing(owned, { ...desired, metadata: { labels: { a: "1" } } }),
    ".metadata.labels.b",
  );
  assert.equal(ownedFieldMissing(owned, { metadata: desired.metadata }), ".spec");
  assert.equal(ownedFieldMissing(undefined, desired), undefined);
});
