import assert from "node:assert/strict";
import fc from "fast-check";
import { deepEqual, isSubset, ownedFieldMissing } from "../../src/runtime/diff.ts";

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
  assert.equal(isSubset({ a: {} }, {}), false, "an empty object still needs the key");
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
