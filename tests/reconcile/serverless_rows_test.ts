/** Walks every row of docs/design.md's Serverless state table through the reducer. */
import assert from "node:assert/strict";
import { rowOfStatus, type StateRow } from "../../src/reconcile/conditions.ts";
import { SERVERLESS_FINALIZER } from "../../src/reconcile/labels.ts";
import {
  reconcileServerless,
  SERVERLESS_STATES,
  type ServerlessInput,
} from "../../src/reconcile/serverless/mod.ts";
import { CONTROLLER_DEPLOYMENT } from "../../src/reconcile/serverless/render.ts";
import {
  conditionOf,
  converge,
  inputOf,
  serverless,
  statusOf,
  world,
} from "./serverless_fixtures.ts";
import { type RowCase, testStateRows } from "./module_rows.ts";
import { carryOut } from "./plans_on_sim_store.ts";
import { deleting, type World } from "./module_fixtures.ts";

/** A served, claimed Serverless with its module installed and ready. */
function installed(spec: Record<string, unknown> = {}): World {
  return converge(world(serverless(spec))).world;
}

function withDeployment(w: World, status: Record<string, unknown>): World {
  return {
    ...w,
    installed: w.installed.map((o) =>
      o.kind === "Deployment" && o.metadata.name === CONTROLLER_DEPLOYMENT ? { ...o, status } : o
    ),
  };
}

type Case = RowCase<ServerlessInput>;

const deploymentRef = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  namespace: "platform-system",
  name: CONTROLLER_DEPLOYMENT,
};

const CASES: Record<number, Case> = {
  1: {
    // Claimed, configuration verified, nothing installed yet: the whole module is applied.
    input: () =>
      inputOf({ ...world(serverless()), object: { ...serverless(), status: { served: "True" } } }),
    message: /^Configured with default Publisher Proxy URL and default Trace Collector URL\.$/,
    check: (plan) => {
      assert.ok(
        plan.apply.some((o) =>
          o.kind === "Deployment" && o.metadata.name === CONTROLLER_DEPLOYMENT
        ),
      );
      assert.ok(
        plan.apply.some((o) => o.metadata.name === "functions.serverless.platform-project.io"),
      );
      assert.equal(
        plan.status?.eventPublisherProxyURL,
        "http://eventing-publisher-proxy.platform-system.svc.cluster.local/publish",
      );
    },
  },
  2: {
    input: () => inputOf(world(serverless())),
    message: /checking the configuration/,
    check: (plan) => {
      assert.deepEqual(plan.finalizer, { add: SERVERLESS_FINALIZER });
      assert.deepEqual(plan.apply, []);
      assert.ok(plan.requeueAfterMs! > 0);
    },
  },
  3: {
    input: () =>
      inputOf(installed({ eventing: { endpoint: "not a url" }, functionRequeueDuration: "5x" })),
    message:
      /^Invalid configuration: spec\.eventing\.endpoint: "not a url" is not an absolute http\(s\) URL.*; spec\.functionRequeueDuration: "5x" is not a duration/,
    check: (plan) => {
      assert.deepEqual(plan.apply, [], "a bad configuration changes nothing installed");
      assert.deepEqual(plan.delete, []);
    },
  },
  4: {
    input: () => {
      const older = { ...serverless({}, { name: "first", uid: "u1" }), status: { served: "True" } };
      return inputOf(
        world(
          serverless({}, {
            name: "second",
            namespace: "other",
            creationTimestamp: "2025-12-02T00:00:00Z",
          }),
          [older],
        ),
      );
    },
    message: /platform-system\/first is the one in use; other\/second is ignored/,
    check: (plan) => {
      assert.equal(plan.status?.served, "False");
      assert.deepEqual(plan.apply, []);
      assert.equal(plan.finalizer, undefined);
    },
  },
  5: {
    input: () => inputOf(installed()),
    message:
      /^Serverless is installed: Deployment platform-system\/serverless-ctrl-mngr is ready\.$/,
    check: (plan) => assert.equal(plan.requeueAfterMs, undefined),
  },
  6: {
    input: () => inputOf(withDeployment(installed(), { observedGeneration: 1, conditions: [] })),
    message:
      /^Waiting for the workloads: Deployment platform-system\/serverless-ctrl-mngr: not Available yet\.$/,
    check: (plan) => assert.ok(plan.requeueAfterMs! > 0),
  },
  7: {
    input: () => {
      const w = installed({ logLevel: "debug" });
      const changed = {
        ...w,
        object: { ...w.object!, metadata: { ...w.object!.metadata, generation: 2 } },
      };
      const before = installed();
      return inputOf({ ...changed, installed: before.installed }, {
        lastOutcome: {
          ok: false,
          failed: deploymentRef,
          error: "admission webhook denied it",
          generation: 2,
        },
      });
    },
    message:
      /^Applying Deployment platform-system\/serverless-ctrl-mngr failed: admission webhook denied it$/,
    check: (plan) => assert.ok(plan.apply.length > 0, "the failed writes are tried again"),
  },
  8: {
    input: () =>
      inputOf(withDeployment(installed(), {
        observedGeneration: 1,
        conditions: [
          { type: "Available", status: "False", reason: "MinimumReplicasUnavailable" },
          {
            type: "ReplicaFailure",
            status: "True",
            reason: "FailedCreate",
            message: 'pods "x" is forbidden: exceeded quota',
          },
        ],
      })),
    message:
      /^Replica failure: Deployment platform-system\/serverless-ctrl-mngr: FailedCreate: pods "x" is forbidden: exceeded quota$/,
  },
  9: {
    input: () => inputOf(deleting(installed())),
    message: /Deleting the Serverless module's objects/,
    check: (plan) => {
      assert.equal(plan.delete.length, installed().installed.length);
      assert.equal(plan.finalizer, undefined);
    },
  },
  10: {
    input: () => inputOf({ ...deleting(installed()), installed: [] }),
    message: /^Serverless module deleted\.$/,
    check: (plan) => assert.deepEqual(plan.finalizer, { remove: SERVERLESS_FINALIZER }),
  },
  11: {
    input: () =>
      inputOf(deleting(installed()), {
        userObjects: { Function: ["a/f1", "a/f2", "b/f3", "c/f4"] },
      }),
    message: /^Deletion is blocked: 4 Functions \(a\/f1, a\/f2, b\/f3 and 1 more\) still exist\./,
    check: (plan) => {
      assert.deepEqual(plan.delete, []);
      assert.equal(plan.finalizer, undefined);
    },
  },
};

testStateRows("Serverless", SERVERLESS_STATES, CASES, reconcileServerless);

Deno.test("a Serverless converges from nothing to Ready and then writes nothing", () => {
  const seen: StateRow["reason"][] = [];
  let w = world(serverless());
  for (let i = 0; i < 5; i++) {
    const plan = reconcileServerless(inputOf(w));
    const row = rowOfStatus(SERVERLESS_STATES, statusOf(plan));
    assert.ok(row, `pass ${i}: status is not a table row: ${JSON.stringify(plan.status)}`);
    seen.push(`${plan.status?.state}`);
    w = carryOut(w, plan);
  }
  assert.deepEqual(seen, ["Processing", "Processing", "Ready", "Ready", "Ready"]);
  const last = reconcileServerless(inputOf(w));
  assert.deepEqual([last.apply, last.delete, last.events], [[], [], []]);
  assert.deepEqual(last.status, w.object?.status);
});

Deno.test("Serverless rows 9 then 10: deletion removes everything, then the finalizer", () => {
  let w = deleting(installed());
  const first = reconcileServerless(inputOf(w));
  w = carryOut(w, first);
  assert.deepEqual(w.installed, []);
  const second = reconcileServerless(inputOf(w));
  assert.equal(second.status?.state, "Deleting");
  assert.deepEqual(second.finalizer, { remove: SERVERLESS_FINALIZER });
  assert.equal(carryOut(w, second).object, undefined);
});

Deno.test("Serverless row 7 also covers a rollout that failed (Progressing=False)", () => {
  const plan = reconcileServerless(inputOf(withDeployment(installed(), {
    observedGeneration: 1,
    conditions: [{
      type: "Progressing",
      status: "False",
      reason: "ProgressDeadlineExceeded",
      message: "timed out",
    }],
  })));
  const cond = conditionOf(plan, "Installed");
  assert.equal(cond?.reason, "InstallationErr");
  assert.match(cond?.message ?? "", /ProgressDeadlineExceeded: timed out/);
});
