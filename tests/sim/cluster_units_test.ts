import assert from "node:assert/strict";
import { ApiError } from "../../src/runtime/cluster.ts";
import { applyJsonPatch } from "../../sim/cluster/jsonpatch.ts";
import { matchesLabels, selectorOf } from "../../sim/cluster/selector.ts";
import { builtinListRules, fieldSet, schemaListRules } from "../../sim/cluster/fields.ts";

Deno.test("selector: equality, set, existence and their negations", () => {
  const sel = selectorOf("app=web, tier in (a, b), env notin (prod), release, !canary, x!=1");
  assert.equal(sel({ app: "web", tier: "a", release: "r" }), true);
  assert.equal(sel({ app: "web", tier: "c", release: "r" }), false);
  assert.equal(sel({ app: "web", tier: "a", release: "r", env: "prod" }), false);
  assert.equal(sel({ app: "web", tier: "a" }), false);
  assert.equal(sel({ app: "web", tier: "a", release: "r", canary: "" }), false);
  assert.equal(sel({ app: "web", tier: "a", release: "r", x: "1" }), false);
  assert.equal(selectorOf("")(undefined), true);
  assert.equal(selectorOf("a==b")({ a: "b" }), true);
  assert.throws(() => selectorOf("a in b"), (e) => e instanceof ApiError && e.code === 400);
  assert.equal(matchesLabels({ a: "1" }, { a: "1", b: "2" }), true);
  assert.equal(matchesLabels({ a: "1" }, undefined), false);
});

Deno.test("jsonpatch: add, replace, remove, test; failures are 422, malformed pointers 400", () => {
  const doc = { a: { b: [1, 2] }, c: "x" };
  const out = applyJsonPatch(doc, [
    { op: "test", path: "/c", value: "x" },
    { op: "add", path: "/a/b/-", value: 3 },
    { op: "add", path: "/a/b/0", value: 0 },
    { op: "replace", path: "/c", value: "y" },
    { op: "remove", path: "/a/b/1" },
    { op: "add", path: "/d~1e", value: true },
  ]);
  assert.deepEqual(out, { a: { b: [0, 2, 3] }, c: "y", "d/e": true });
  assert.deepEqual(doc, { a: { b: [1, 2] }, c: "x" }, "the input is not changed");
  const code = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      return (e as ApiError).code;
    }
    return 200;
  };
  assert.equal(code(() => applyJsonPatch(doc, [{ op: "test", path: "/c", value: "nope" }])), 422);
  assert.equal(code(() => applyJsonPatch(doc, [{ op: "remove", path: "/zzz" }])), 422);
  assert.equal(code(() => applyJsonPatch(doc, [{ op: "replace", path: "/a/b/9", value: 1 }])), 422);
  assert.equal(code(() => applyJsonPatch(doc, [{ op: "add", path: "no-slash", value: 1 }])), 400);
});

Deno.test("fields: associative lists by merge key, sets by value, atomic lists as one leaf", () => {
  const obj = {
    metadata: { finalizers: ["a", "b"], labels: { x: "1" } },
    spec: { containers: [{ name: "c", image: "i" }], args: ["1", "2"] },
  };
  const paths = [...fieldSet(obj, builtinListRules)].map((p) => p.split("\u0001").join(" "));
  assert.deepEqual(
    paths.sort(),
    [
      'f:metadata f:finalizers v:"a"',
      'f:metadata f:finalizers v:"b"',
      "f:metadata f:labels f:x",
      "f:spec f:args",
      'f:spec f:containers k:{"name":"c"} .',
      'f:spec f:containers k:{"name":"c"} f:image',
      'f:spec f:containers k:{"name":"c"} f:name',
    ].sort(),
  );
  const rules = schemaListRules({
    type: "object",
    properties: {
      status: {
        type: "object",
        properties: {
          conditions: {
            type: "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["type"],
            items: { type: "object" },
          },
        },
      },
    },
  });
  assert.deepEqual(rules(["status", "conditions"]), { type: "map", keys: ["type"] });
  assert.deepEqual(rules(["spec", "other"]), { type: "atomic" });
});

Deno.test("jsonpatch: test of a missing member against null passes, as in the API server", () => {
  const out = applyJsonPatch({ metadata: {} }, [
    { op: "test", path: "/metadata/finalizers", value: null },
    { op: "add", path: "/metadata/finalizers", value: ["f"] },
  ]);
  assert.deepEqual(out, { metadata: { finalizers: ["f"] } });
  assert.throws(() =>
    applyJsonPatch({ metadata: {} }, [{ op: "test", path: "/metadata/finalizers", value: [] }])
  );
  assert.throws(() =>
    applyJsonPatch({}, [{ op: "test", path: "/metadata/finalizers", value: null }])
  );
});
