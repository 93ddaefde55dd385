/**
 * How many Events a module's install makes. On a real control plane the installed objects show up
 * in the cache a few at a time and every Deployment passes through the controller's intermediate
 * statuses, so each pass has a new progress message; Kubernetes convention is an Event when a
 * condition's status or reason changes, not one for each of those messages.
 */
import assert from "node:assert/strict";
import type { Condition } from "../../src/api/common.ts";
import { conditionEvents } from "../../src/reconcile/conditions.ts";
import type { EventSpec, Plan } from "../../src/reconcile/plan.ts";
import { reconcileRateLimit } from "../../src/reconcile/ratelimit/mod.ts";
import { reconcileScaler } from "../../src/reconcile/scaler/mod.ts";
import { reconcileServerless } from "../../src/reconcile/serverless/mod.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { bucket, input, pod, rateLimit } from "./ratelimit_fixtures.ts";
import { inputOf as scalerInput, scaler } from "./scaler_fixtures.ts";
import { inputOf as serverlessInput, serverless, statusOf } from "./serverless_fixtures.ts";
import { carryOut } from "./plans_on_sim_store.ts";
import { aggregatorAvailable, rolledOut, type World } from "./module_fixtures.ts";

/** Applied objects the cache shows after each pass: the rest of the Plan's applies lag behind. */
const SEEN_PER_PASS = 3;

/**
 * The statuses a new Deployment's controller writes on its way to rolled out, as a real
 * kube-controller-manager does: not observed yet, a replica unavailable, not Available yet, done.
 */
function rolloutStage(stage: number, generation: number): Record<string, unknown> {
  if (stage <= 0) return {};
  if (stage === 1) {
    return {
      observedGeneration: generation,
      replicas: 1,
      updatedReplicas: 1,
      unavailableReplicas: 1,
      conditions: [
        { type: "Available", status: "False", reason: "MinimumReplicasUnavailable" },
        { type: "Progressing", status: "True", reason: "ReplicaSetUpdated" },
      ],
    };
  }
  if (stage === 2) {
    return {
      observedGeneration: generation,
      replicas: 1,
      updatedReplicas: 1,
      readyReplicas: 1,
      conditions: [{ type: "Progressing", status: "True", reason: "ReplicaSetUpdated" }],
    };
  }
  return rolledOut(generation);
}

/**
 * Runs `reduce` from `w` until the object is in `state` and a pass writes nothing, carrying out
 * each Plan as a slow cluster would: a few applies seen a pass, the n-th Deployment starting its
 * rollout n passes after it is seen, and an APIService Available once KEDA's metrics server has
 * rolled out. Returns every Event of every pass.
 */
function installSlowly(reduce: (w: World) => Plan, w: World, state: string): EventSpec[] {
  const events: EventSpec[] = [];
  const seenAt = new Map<string, number>();
  let cur = w;
  for (let pass = 0; pass < 60; pass++) {
    const plan = reduce(cur);
    events.push(...plan.events);
    const done = plan.apply.length === 0 && plan.delete.length === 0 &&
      statusOf(plan).state === state &&
      JSON.stringify(plan.status) === JSON.stringify(cur.object?.status);
    if (done) return events;
    cur = carryOut(cur, { ...plan, apply: plan.apply.slice(0, SEEN_PER_PASS) }, { ready: false });
    cur = {
      ...cur,
      installed: cur.installed.map((o) => {
        // The aggregator finds KEDA's metrics API available once its Deployment has rolled out.
        if (o.kind === "APIService") {
          const server = seenAt.get("keda-operator-metrics-apiserver");
          return server !== undefined && pass - server >= 3
            ? { ...o, status: aggregatorAvailable() }
            : o;
        }
        if (o.kind !== "Deployment") return o;
        const name = o.metadata.name;
        if (!seenAt.has(name)) seenAt.set(name, pass + seenAt.size);
        const stage = pass - seenAt.get(name)!;
        return { ...o, status: rolloutStage(stage, o.metadata.generation ?? 1) } as KubeObject;
      }),
    };
  }
  throw new Error(`not ${state} after 60 passes; events so far: ${JSON.stringify(events)}`);
}

const reasons = (events: EventSpec[]) => events.map((e) => `${e.type} ${e.reason}`);

Deno.test("a Serverless install from nothing to Ready makes 4 Events, none for progress messages", () => {
  const events = installSlowly(
    (w) => reconcileServerless(serverlessInput(w)),
    { object: serverless(), others: [], installed: [] },
    "Ready",
  );
  assert.deepEqual(reasons(events), [
    "Normal ConfigurationCheck",
    "Normal Configured",
    "Normal Installation",
    "Normal Installed",
  ]);
});

Deno.test("a Scaler install from nothing to Ready makes 3 Events, none for progress messages", () => {
  const events = installSlowly(
    (w) => reconcileScaler(scalerInput(w)),
    { object: scaler(), others: [], installed: [] },
    "Ready",
  );
  assert.deepEqual(reasons(events), [
    "Normal Initialized",
    "Normal Verification",
    "Normal Verified",
  ]);
});

Deno.test("a RateLimit makes two Events when applied (Applied, Enforced), none for a new message with the same reason", () => {
  // One Pod in the mesh, so enforcement is good news too.
  const pods = [{
    ...pod("httpbin-1", { app: "httpbin", tier: "web" }),
    spec: { containers: [{ name: "istio-proxy" }] },
  }];
  const first = reconcileRateLimit(input(rateLimit(), { pods }));
  assert.deepEqual(reasons(first.events), ["Normal Applied", "Normal Enforced"]);
  // The user narrows the selector: still Applied and Enforced, the messages name the new labels.
  const edited = rateLimit({ generation: 2, selectorLabels: { app: "httpbin", tier: "web" } });
  const again = reconcileRateLimit(input({ ...edited, status: first.status }, { pods }));
  assert.match(String(statusOf(again).description), /app=httpbin,tier=web/);
  assert.deepEqual(again.events, []);
});

Deno.test("a RateLimit error whose message changes is announced again: it is another problem", () => {
  const bad = (interval: string, generation: number) =>
    rateLimit({
      generation,
      buckets: [{ path: "/a", bucket: bucket(1, 1, interval) }],
    });
  const first = reconcileRateLimit(input(bad("45s", 1)));
  assert.deepEqual(reasons(first.events), ["Warning InvalidSpec"]);
  const second = reconcileRateLimit(input({ ...bad("50s", 2), status: first.status }));
  assert.deepEqual(reasons(second.events), ["Warning InvalidSpec"]);
  assert.match(second.events[0].message, /50s/);
  const same = reconcileRateLimit(input({ ...bad("50s", 2), status: second.status }));
  assert.deepEqual(same.events, []);
});

const T0 = "2026-01-01T00:00:00Z";
const cond = (status: Condition["status"], reason: string, message: string): Condition => ({
  type: "Installed",
  status,
  reason,
  message,
  lastTransitionTime: T0,
});

Deno.test("conditionEvents: a new message alone is news only for a condition that is a problem", () => {
  const progress = conditionEvents(
    [cond("Unknown", "Installation", "1 of 2 ready")],
    [cond("Unknown", "Installation", "2 of 2 ready")],
    { now: [], before: [] },
  );
  assert.deepEqual(progress, []);
  const newError = conditionEvents(
    [cond("False", "InstallationErr", "quota exceeded")],
    [cond("False", "InstallationErr", "webhook refused")],
    { now: ["Installed"], before: ["Installed"] },
  );
  assert.deepEqual(newError, [
    { type: "Warning", reason: "InstallationErr", message: "webhook refused" },
  ]);
  // A problem that clears without a new status or reason (Scaler's Warning back to Ready) is news.
  const cleared = conditionEvents(
    [cond("True", "Verified", "installed, but an annotation was dropped")],
    [cond("True", "Verified", "installed")],
    { now: [], before: ["Installed"] },
  );
  assert.deepEqual(cleared, [{ type: "Normal", reason: "Verified", message: "installed" }]);
});
