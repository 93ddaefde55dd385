/**
 * A module's finalizer is removed only after a live list finds nothing the module installed
 * (`guardFinalizer`): the Plan names every installed kind with the module's label selector.
 */
import assert from "node:assert/strict";
import { guardFinalizer } from "../../src/controllers/module_controller.ts";
import { SCALER_MODULE } from "../../src/controllers/scaler.ts";
import { emptyPlan } from "../../src/reconcile/plan.ts";

Deno.test("a Plan that removes the module finalizer first lists every installed kind", () => {
  const plan = guardFinalizer(SCALER_MODULE, {
    ...emptyPlan(),
    finalizer: { remove: "keda-manager.platform-project.io/deletion-hook" },
  });
  const kinds = (plan.noneLeft ?? []).map((l) => l.kind);
  assert.deepEqual(kinds, SCALER_MODULE.installed.map((t) => t.kind));
  assert.ok(kinds.includes("APIService") && kinds.includes("Deployment"));
  for (const l of plan.noneLeft ?? []) {
    assert.equal(
      l.labelSelector,
      "app.kubernetes.io/managed-by=platform-operator,operator.platform-project.io/module=keda",
    );
  }
  // Any other Plan is left as it is.
  const other = { ...emptyPlan(), finalizer: { add: "x" } };
  assert.equal(guardFinalizer(SCALER_MODULE, other), other);
});
