/**
 * A module's finalizer is removed only after a live list finds nothing the module installed
 * (`guardFinalizer`): the Plan names every installed kind with the module's label selector.
 */
import assert from "node:assert/strict";
import { guardDeletion, guardFinalizer } from "../../src/controllers/module_controller.ts";
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

Deno.test("a Plan deleting a module's objects or its finalizer first lists every blocking user kind", () => {
  const deleting = {
    apiVersion: "operator.platform-project.io/v1alpha1",
    kind: "Scaler",
    metadata: {
      name: "default",
      namespace: "kyma-system",
      deletionTimestamp: "2026-11-29T00:00:00Z",
    },
  };
  const deletes = {
    ...emptyPlan(),
    delete: [{
      apiVersion: "apps/v1",
      kind: "Deployment",
      namespace: "kyma-system",
      name: "keda-operator",
    }],
  };
  const kinds = (guardDeletion(SCALER_MODULE, deleting, deletes).blockers ?? []).map((b) => b.kind);
  assert.deepEqual(kinds, SCALER_MODULE.userTypes.map((t) => t.kind));
  assert.ok(kinds.includes("ScaledObject"));
  const removes = {
    ...emptyPlan(),
    finalizer: { remove: "keda-manager.platform-project.io/deletion-hook" },
  };
  const guarded = guardDeletion(SCALER_MODULE, deleting, removes);
  assert.equal(guarded.blockers?.length, SCALER_MODULE.userTypes.length);
  assert.ok((guarded.noneLeft ?? []).length > 0, "and the finalizer guard still applies");
  // Not being deleted, or deleting nothing yet (blocked): no live lists.
  const live = { ...deleting, metadata: { name: "default", namespace: "kyma-system" } };
  assert.equal(guardDeletion(SCALER_MODULE, live, deletes).blockers, undefined);
  assert.equal(guardDeletion(SCALER_MODULE, deleting, emptyPlan()).blockers, undefined);
});
