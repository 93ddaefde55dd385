import assert from "node:assert/strict";
import fc from "fast-check";
import { deepFreeze } from "../../src/api/json.ts";

/** Every object and list in `v`, `v` included. */
function containers(v: unknown, out: object[] = []): object[] {
  if (v === null || typeof v !== "object") return out;
  out.push(v);
  for (const x of Object.values(v)) containers(x, out);
  return out;
}

Deno.test("deepFreeze freezes every object and list a JSON value holds, and returns it unchanged", () => {
  fc.assert(
    fc.property(fc.jsonValue(), (v) => {
      const text = JSON.stringify(v);
      const frozen = deepFreeze(v);
      assert.equal(frozen, v);
      assert.equal(JSON.stringify(frozen), text);
      for (const c of containers(v)) assert.ok(Object.isFrozen(c), JSON.stringify(c));
    }),
    { numRuns: 500 },
  );
  // A frozen object is taken as frozen through (not visited again); what else holds its
  // contents still freezes them.
  const inner = { a: [{ b: 1 }] };
  deepFreeze({ outer: Object.freeze({ inner }) });
  assert.equal(Object.isFrozen(inner), false, "a frozen object's contents are taken as frozen");
  deepFreeze({ x: inner });
  assert.ok(Object.isFrozen(inner.a[0]));
});
