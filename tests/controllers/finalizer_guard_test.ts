/**
 * A module's finalizer is removed only after a live list finds nothing the module installed
 * (`guardFinalizer`): the Plan names every installed kind with the module's label selector, and
 * counts only what the operator's field manager applied. What the module counts as installed
 * (`installedObjects`) is the same: its labels and the operator's apply.
 */
import assert from "node:assert/strict";
import {
  guardDeletion,
  guardFinalizer,
  installedObjects,
} from "../../src/controllers/module_controller.ts";
import { SCALER_MODULE } from "../../src/controllers/scaler.ts";
import { SERVERLESS_MODULE } from "../../src/controllers/serverless.ts";
import { emptyPlan } from "../../src/reconcile/plan.ts";
import { RESOURCES } from "../../src/api/resources.ts";
import type { KubeObject } from "../../src/api/object.ts";
import {
  FIELD_MANAGER,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  MODULE_LABEL,
} from "../../src/reconcile/labels.ts";
import { Cache } from "../../src/runtime/mod.ts";

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
    assert.equal(l.appliedBy, FIELD_MANAGER, "a user's object with the labels is not left over");
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

/** A ConfigMap with the Serverless module's labels, written by `manager` with `operation`. */
function labelled(name: string, manager: string, operation: string): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name,
      namespace: "platform-system",
      resourceVersion: "1",
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY, [MODULE_LABEL]: "serverless" },
      managedFields: [{
        manager,
        operation,
        apiVersion: "v1",
        fieldsType: "FieldsV1",
        fieldsV1: { "f:data": { "f:k": {} }, "f:metadata": { "f:labels": {} } },
      }],
    },
    data: { k: "v" },
  };
}

Deno.test("installed objects: the module's labels and the operator's apply; a user's labelled object is not one", () => {
  const cache = new Cache();
  for (const type of SERVERLESS_MODULE.installed) {
    if (type === RESOURCES.ConfigMap) continue;
    const empty = cache.store(type);
    empty.handle({ type: "init" });
    empty.handle({ type: "init-done" });
  }
  const store = cache.store(RESOURCES.ConfigMap);
  store.handle({ type: "init" });
  for (
    const o of [
      labelled("ours", FIELD_MANAGER, "Apply"),
      labelled("users", "kubectl-client-side-apply", "Update"),
      labelled("users-applied", "kubectl", "Apply"),
      labelled("ours-updated-only", FIELD_MANAGER, "Update"),
    ]
  ) store.handle({ type: "init-apply", object: o });
  store.handle({ type: "init-done" });
  const names = installedObjects(SERVERLESS_MODULE, cache).map((o) => o.metadata.name);
  assert.deepEqual(names, ["ours"]);
  // A reader that cannot say who applied (a test's fake) counts the labels alone, as before.
  const fake = { list: cache.list.bind(cache), get: cache.get.bind(cache) };
  assert.equal(installedObjects(SERVERLESS_MODULE, fake).length, 4);
});
