/** The finalizer helper's guarantees, each one a case. */
import assert from "node:assert/strict";
import { finalized, type FinalizerChange } from "../../src/reconcile/finalizer.ts";

type D = { what: string; finalizer?: FinalizerChange };
const NAME = "example.io/cleanup";
const on = (done: boolean) => ({
  apply: (hold: FinalizerChange): D => ({ what: "apply", finalizer: hold }),
  // A Cleanup that (wrongly) asks to add the finalizer: the helper must not let it.
  cleanup: () => ({ decision: { what: "cleanup", finalizer: { add: NAME } } as D, done }),
});
const deleting = { deletionTimestamp: "2026-01-01T00:00:00Z" };

Deno.test("finalized: Apply while in use, holding the finalizer", () => {
  assert.deepEqual(finalized({}, NAME, on(true)), { what: "apply", finalizer: { add: NAME } });
});

Deno.test("finalized: Cleanup while deleting, the finalizer kept until nothing is left", () => {
  const held = { ...deleting, finalizers: ["other", NAME] };
  assert.deepEqual(finalized(held, NAME, on(false)), { what: "cleanup" });
  assert.deepEqual(finalized(held, NAME, on(true)), {
    what: "cleanup",
    finalizer: { remove: NAME },
  });
});

Deno.test("finalized: Cleanup runs without the finalizer too, and never adds it", () => {
  const foreign = { ...deleting, finalizers: ["other"] };
  assert.deepEqual(finalized(foreign, NAME, on(true)), { what: "cleanup" });
  assert.deepEqual(finalized(foreign, NAME, on(false)), { what: "cleanup" });
});
