/** Deployment readiness (docs/design.md "Verification") and the desired-subset test. */
import assert from "node:assert/strict";
import { deploymentReadiness, moduleReadiness } from "../../src/reconcile/module/readiness.ts";
import { isObserved } from "../../src/reconcile/observed.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { rolledOut } from "./module_fixtures.ts";

function dep(status: Record<string, unknown>, generation = 2, name = "d"): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace: "ns", generation },
    status,
  };
}

const available = { type: "Available", status: "True", reason: "MinimumReplicasAvailable" };

Deno.test("ready: current generation, Available, all replicas updated and available", () => {
  assert.deepEqual(deploymentReadiness(dep(rolledOut(2))), { kind: "ready" });
});

Deno.test("waiting: an old generation, old replicas, unavailable replicas, not Available", () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [rolledOut(1), /has not seen the latest change/],
    // Right after a template change: the new ReplicaSet has no Pods yet (updatedReplicas omitted).
    [
      { observedGeneration: 2, replicas: 1, availableReplicas: 1, conditions: [available] },
      /1 old replica/,
    ],
    [{
      observedGeneration: 2,
      replicas: 2,
      updatedReplicas: 1,
      availableReplicas: 1,
      conditions: [available],
    }, /1 old replica/],
    [{
      observedGeneration: 2,
      replicas: 1,
      updatedReplicas: 1,
      unavailableReplicas: 1,
      conditions: [available],
    }, /1 replica\(s\) unavailable/],
    [
      { observedGeneration: 2, replicas: 1, updatedReplicas: 1, conditions: [] },
      /not Available yet/,
    ],
    [{}, /has not seen/],
  ];
  for (const [status, re] of cases) {
    const r = deploymentReadiness(dep(status));
    assert.equal(r.kind, "waiting", JSON.stringify(status));
    assert.match((r as { message: string }).message, re);
  }
});

Deno.test("ReplicaFailure and a failed rollout are reported with the controller's reason and message", () => {
  const failure = {
    type: "ReplicaFailure",
    status: "True",
    reason: "FailedCreate",
    message: "exceeded quota",
  };
  assert.deepEqual(
    deploymentReadiness(dep({ ...rolledOut(2), conditions: [available, failure] })),
    {
      kind: "replicaFailure",
      message: "FailedCreate: exceeded quota",
    },
  );
  const stuck = { type: "Progressing", status: "False", reason: "ProgressDeadlineExceeded" };
  assert.deepEqual(deploymentReadiness(dep({ observedGeneration: 2, conditions: [stuck] })), {
    kind: "stalled",
    message: "ProgressDeadlineExceeded",
  });
});

Deno.test("moduleReadiness: replica failure first, then stalled, then waiting; missing is waiting", () => {
  const failing = dep(
    { conditions: [{ type: "ReplicaFailure", status: "True", reason: "FailedCreate" }] },
    2,
    "a",
  );
  const waiting = dep(rolledOut(1), 2, "b");
  assert.equal(moduleReadiness(["a", "b"], "ns", [failing, waiting]).kind, "replicaFailure");
  assert.deepEqual(moduleReadiness(["b", "c"], "ns", [waiting]), {
    kind: "waiting",
    message:
      "Deployment ns/b: the Deployment controller has not seen the latest change yet; Deployment ns/c: not created yet",
  });
  assert.deepEqual(
    moduleReadiness(["b"], "other", [dep(rolledOut(2), 2, "b")]).kind,
    "waiting",
    "namespace matters",
  );
  assert.deepEqual(moduleReadiness(["b"], "ns", [dep(rolledOut(2), 2, "b")]), { kind: "ready" });
});

Deno.test("isObserved: desired fields must be present and equal; extra observed fields are fine", () => {
  assert.ok(isObserved({ a: 1, b: { c: "x" } }, { a: 1, b: { c: "x", d: 2 }, e: 3 }));
  assert.ok(!isObserved({ a: 1 }, { a: 2 }));
  assert.ok(!isObserved({ a: "1" }, { a: 1 }), "no type coercion");
  assert.ok(isObserved({ l: [{ n: 1 }] }, { l: [{ n: 1, extra: true }] }));
  assert.ok(
    !isObserved({ l: [{ n: 1 }] }, { l: [{ n: 1 }, { n: 2 }] }),
    "lists have the same length",
  );
  assert.ok(isObserved({ m: {}, l: [] }, {}), "empty maps and lists match missing ones");
  assert.ok(!isObserved({ m: { a: 1 } }, { m: [] }));
  assert.ok(!isObserved({ a: 1 }, undefined));
});
