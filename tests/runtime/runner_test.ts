import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { MANAGED_BY, MANAGED_BY_LABEL, SERVERLESS_FINALIZER } from "../../src/reconcile/labels.ts";
import { emptyPlan, type Plan } from "../../src/reconcile/plan.ts";
import { Cache } from "../../src/runtime/cache.ts";
import { ApiError, type KubeObject } from "../../src/runtime/cluster.ts";
import { Metrics } from "../../src/runtime/metrics.ts";
import { Runner } from "../../src/runtime/runner.ts";
import { TestCluster } from "./test_cluster.ts";
import { captureLogger, ManualClock, seededRandom } from "./helpers.ts";

const SL = RESOURCES.Serverless;
const CM = RESOURCES.ConfigMap;
const NS = "platform-system";
const managed = { [MANAGED_BY_LABEL]: MANAGED_BY };

function setup() {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  const cache = new Cache();
  const { log, lines } = captureLogger(clock);
  const metrics = new Metrics();
  const runner = new Runner({
    cluster,
    cache,
    clock,
    random: seededRandom(),
    log,
    metrics,
    controller: "serverless",
    identity: "op-0",
  });
  /** Lists every cached type again, as the watches would have delivered by now. */
  const refresh = async () => {
    for (const type of [SL, CM, RESOURCES.Event]) {
      const store = cache.store(type);
      store.handle({ type: "init" });
      for (const object of (await cluster.list(type)).items) {
        store.handle({ type: "init-apply", object });
      }
      store.handle({ type: "init-done" });
    }
    cluster.calls.length = 0;
  };
  const primary = () => cache.get(SL, NS, "default")!;
  const signal = new AbortController().signal;
  return { clock, cluster, cache, lines, metrics, runner, refresh, primary, signal };
}

function serverless(
  extra: Partial<KubeObject["metadata"]> = {},
  status?: Record<string, unknown>,
): KubeObject {
  return {
    apiVersion: "operator.platform-project.io/v1alpha1",
    kind: "Serverless",
    metadata: { name: "default", namespace: NS, ...extra },
    spec: {},
    ...(status ? { status } : {}),
  };
}

function configMap(name: string, data: Record<string, string>): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: NS, labels: managed },
    data,
  };
}

function installPlan(): Plan {
  return {
    ...emptyPlan(),
    finalizer: { add: SERVERLESS_FINALIZER },
    apply: [configMap("a", { k: "1" }), configMap("b", { k: "2", list: "x" })],
    status: {
      state: "Ready",
      served: "True",
      conditions: [{
        type: "Installed",
        status: "True",
        reason: "Installed",
        message: "Workloads deployed",
        lastTransitionTime: "2026-01-01T00:00:00Z",
      }],
    },
  };
}

Deno.test("runner writes finalizer first, then applies, then status", async () => {
  const t = setup();
  t.cluster.put(SL, serverless());
  await t.refresh();
  const r = await t.runner.run(SL, t.primary(), installPlan(), undefined, t.signal);
  assert.deepEqual(t.cluster.writes().map((c) => `${c.verb}:${c.kind}:${c.key}`), [
    `patch:Serverless:${NS}/default`,
    `apply:ConfigMap:${NS}/a`,
    `apply:ConfigMap:${NS}/b`,
    `applyStatus:Serverless:${NS}/default`,
  ]);
  assert.equal(r.writes, 4);
  assert.deepEqual(r.outcome, { ok: true, generation: 1 });
  assert.deepEqual(r.work, { type: "done", requeueAfterMs: undefined });
  const stored = t.cluster.peek(SL, NS, "default")!;
  assert.deepEqual(stored.metadata.finalizers, [SERVERLESS_FINALIZER]);
  assert.equal((stored.status as { state: string }).state, "Ready");
});

Deno.test("runner makes zero writes when the observed state already matches the plan", async () => {
  const t = setup();
  t.cluster.put(SL, serverless());
  await t.refresh();
  await t.runner.run(SL, t.primary(), installPlan(), undefined, t.signal);
  await t.refresh();
  const r = await t.runner.run(SL, t.primary(), installPlan(), { ok: true }, t.signal);
  assert.equal(r.writes, 0);
  assert.deepEqual(t.cluster.writes(), []);
  assert.equal(t.metrics.writesSkipped.get({ controller: "serverless" }), 3);
});

Deno.test("runner applies an object whose observed value differs, including array length", async () => {
  const t = setup();
  t.cluster.put(SL, serverless({ finalizers: [SERVERLESS_FINALIZER] }));
  t.cluster.put(CM, { ...configMap("a", { k: "1" }), extra: ["x", "y"] });
  await t.refresh();
  const plan = { ...emptyPlan(), apply: [{ ...configMap("a", { k: "1" }), extra: ["x"] }] };
  await t.runner.run(SL, t.primary(), plan, undefined, t.signal);
  assert.deepEqual(t.cluster.writes().map((c) => c.verb), ["apply"]);
});

Deno.test("runner writes status only when it changed", async () => {
  const t = setup();
  const status = { state: "Processing", served: "True" };
  t.cluster.put(SL, serverless({}, status));
  await t.refresh();
  await t.runner.run(
    SL,
    t.primary(),
    { ...emptyPlan(), status: { served: "True", state: "Processing" } },
    undefined,
    t.signal,
  );
  assert.deepEqual(t.cluster.writes(), []);
  await t.runner.run(
    SL,
    t.primary(),
    { ...emptyPlan(), status: { ...status, state: "Ready" } },
    undefined,
    t.signal,
  );
  assert.deepEqual(t.cluster.writes().map((c) => c.verb), ["applyStatus"]);
});

Deno.test("on deletion: deletes, then status, then the finalizer comes off last", async () => {
  const t = setup();
  t.cluster.put(SL, serverless({ finalizers: [SERVERLESS_FINALIZER] }));
  t.cluster.put(CM, configMap("a", { k: "1" }));
  await t.cluster.delete(SL, NS, "default");
  await t.refresh();
  assert.ok(t.primary().metadata.deletionTimestamp);
  const plan: Plan = {
    ...emptyPlan(),
    delete: [{ apiVersion: "v1", kind: "ConfigMap", namespace: NS, name: "a" }, {
      apiVersion: "v1",
      kind: "ConfigMap",
      namespace: NS,
      name: "already-gone",
    }],
    status: { state: "Deleting", served: "True" },
    finalizer: { remove: SERVERLESS_FINALIZER },
  };
  const r = await t.runner.run(SL, t.primary(), plan, undefined, t.signal);
  assert.deepEqual(t.cluster.writes().map((c) => `${c.verb}:${c.kind}`), [
    "delete:ConfigMap",
    "applyStatus:Serverless",
    "patch:Serverless",
  ]);
  assert.equal(r.outcome?.ok, true);
  assert.equal(t.cluster.peek(SL, NS, "default"), undefined, "finalizer removed, object gone");
  assert.equal(t.cluster.peek(CM, NS, "a"), undefined);
});

Deno.test("a failed apply stops the plan, is recorded, and backs off", async () => {
  const t = setup();
  t.cluster.put(SL, serverless({ finalizers: [SERVERLESS_FINALIZER] }));
  await t.refresh();
  t.cluster.failNext(
    "apply",
    new ApiError(422, "Invalid", 'ConfigMap "a" is invalid: data: Invalid value'),
  );
  const plan = { ...installPlan(), finalizer: undefined };
  const r = await t.runner.run(SL, t.primary(), plan, undefined, t.signal);
  assert.deepEqual(r.outcome, {
    ok: false,
    failed: { apiVersion: "v1", kind: "ConfigMap", namespace: NS, name: "a" },
    error: 'ConfigMap "a" is invalid: data: Invalid value',
    generation: 1,
  });
  assert.deepEqual(r.work, { type: "retry" });
  assert.deepEqual(t.cluster.writes().map((c) => c.verb), ["apply"], "nothing after the failure");
  assert.ok(
    t.lines.some((l) =>
      l.level === "error" && String(l.msg).includes("ConfigMap platform-system/a")
    ),
  );
  // The next plan knows about the failure: its status (an error) is written even though the apply fails again.
  await t.refresh();
  t.cluster.failNext("apply", new ApiError(422, "Invalid", "still invalid"));
  const errStatus = { ...plan, status: { state: "Error", served: "True" } };
  await t.runner.run(SL, t.primary(), errStatus, r.outcome, t.signal);
  assert.deepEqual(t.cluster.writes().map((c) => c.verb), ["apply", "applyStatus"]);
  assert.equal((t.cluster.peek(SL, NS, "default")!.status as { state: string }).state, "Error");
});

Deno.test("a 409 conflict is retried soon; a 404 of the primary ends the work", async () => {
  const t = setup();
  t.cluster.put(SL, serverless({ finalizers: [SERVERLESS_FINALIZER] }));
  await t.refresh();
  t.cluster.failNext("apply", new ApiError(409, "Conflict", "conflict"));
  const r = await t.runner.run(SL, t.primary(), installPlan(), undefined, t.signal);
  assert.equal(r.work.type, "retrySoon");
  assert.ok(r.work.type === "retrySoon" && r.work.afterMs >= 100 && r.work.afterMs < 500);
  t.cluster.remove(SL, NS, "default");
  const gone = await t.runner.run(
    SL,
    t.primary(),
    { ...emptyPlan(), status: { state: "Ready" } },
    undefined,
    t.signal,
  );
  assert.deepEqual(gone.work, { type: "done" });
  assert.equal(gone.outcome, undefined);
});

Deno.test("a stale finalizer list fails the patch's test op and is retried", async () => {
  const t = setup();
  t.cluster.put(SL, serverless());
  await t.refresh();
  const cur = t.cluster.peek(SL, NS, "default")!;
  t.cluster.put(SL, { ...cur, metadata: { ...cur.metadata, finalizers: ["someone.else/hook"] } });
  const r = await t.runner.run(SL, t.primary(), installPlan(), undefined, t.signal);
  assert.equal(r.outcome?.ok, false);
  assert.deepEqual(t.cluster.peek(SL, NS, "default")!.metadata.finalizers, ["someone.else/hook"]);
  await t.refresh();
  await t.runner.run(SL, t.primary(), installPlan(), undefined, t.signal);
  assert.deepEqual(t.cluster.peek(SL, NS, "default")!.metadata.finalizers, [
    "someone.else/hook",
    SERVERLESS_FINALIZER,
  ]);
});

Deno.test("runner makes no write once the lease is lost", async () => {
  const t = setup();
  t.cluster.put(SL, serverless());
  await t.refresh();
  const lost = new AbortController();
  lost.abort();
  const r = await t.runner.run(
    SL,
    t.primary(),
    { ...installPlan(), events: [{ type: "Normal", reason: "X", message: "y" }] },
    undefined,
    lost.signal,
  );
  assert.deepEqual(t.cluster.writes(), []);
  assert.deepEqual(r.work, { type: "terminal" });
  assert.equal(r.outcome, undefined);
});

Deno.test("runner refuses to delete an object the operator did not create", async () => {
  const t = setup();
  t.cluster.put(SL, serverless({ finalizers: [SERVERLESS_FINALIZER] }));
  t.cluster.put(CM, {
    ...configMap("users", { k: "1" }),
    metadata: { name: "users", namespace: NS },
  });
  await t.refresh();
  const plan = {
    ...emptyPlan(),
    delete: [{ apiVersion: "v1", kind: "ConfigMap", namespace: NS, name: "users" }],
  };
  const r = await t.runner.run(SL, t.primary(), plan, undefined, t.signal);
  assert.deepEqual(t.cluster.writes(), []);
  assert.ok(t.cluster.peek(CM, NS, "users"));
  assert.equal(r.outcome?.ok, false);
  assert.match(r.outcome?.error ?? "", /refusing to delete ConfigMap platform-system\/users/);
  assert.deepEqual(r.work, { type: "terminal" });
});

Deno.test("events are written once with deterministic names, and their failures do not fail the reconcile", async () => {
  const t = setup();
  t.cluster.put(SL, serverless({ finalizers: [SERVERLESS_FINALIZER] }));
  await t.refresh();
  const plan = {
    ...emptyPlan(),
    events: [{ type: "Normal" as const, reason: "Installed", message: "Serverless is installed" }],
  };
  await t.runner.run(SL, t.primary(), plan, undefined, t.signal);
  await t.runner.events.flush();
  await t.runner.run(SL, t.primary(), plan, undefined, t.signal);
  await t.runner.events.flush();
  const creates = t.cluster.calls.filter((c) => c.verb === "create");
  assert.equal(creates.length, 1);
  assert.match(creates[0].key, /^platform-system\/default\.[0-9a-f]{8}$/);
  const ev = t.cluster.peek(RESOURCES.Event, NS, creates[0].key.split("/")[1])!;
  assert.equal(ev.reason, "Installed");
  assert.deepEqual((ev.involvedObject as { kind: string }).kind, "Serverless");
  t.cluster.failNext("create", new ApiError(403, "Forbidden", "events is forbidden"));
  const r = await t.runner.run(
    SL,
    t.primary(),
    {
      ...plan,
      events: [{ type: "Warning", reason: "Oops", message: "m" }],
    },
    undefined,
    t.signal,
  );
  assert.equal(r.outcome?.ok, true);
  await t.runner.events.flush();
  assert.ok(
    t.lines.some((l) => l.level === "warn" && String(l.msg).includes("could not record an Event")),
  );
});

Deno.test("runner applies when the desired state dropped a field the operator owned", async () => {
  const t = setup();
  t.cluster.put(SL, serverless({ finalizers: [SERVERLESS_FINALIZER] }));
  await t.refresh();
  const withNote = configMap("a", { k: "1" });
  withNote.metadata.annotations = { note: "x" };
  await t.runner.run(SL, t.primary(), { ...emptyPlan(), apply: [withNote] }, undefined, t.signal);
  await t.refresh();
  assert.equal(
    t.cache.get(CM, NS, "a")!.metadata.managedFields,
    undefined,
    "cached objects carry no managedFields",
  );
  // The same plan again: a subset, nothing owned was dropped, no write.
  await t.runner.run(SL, t.primary(), { ...emptyPlan(), apply: [withNote] }, undefined, t.signal);
  assert.deepEqual(t.cluster.writes(), []);
  // The annotation is dropped from the desired state: still a subset of what is observed, but
  // server-side apply must run to remove it.
  await t.runner.run(
    SL,
    t.primary(),
    { ...emptyPlan(), apply: [configMap("a", { k: "1" })] },
    undefined,
    t.signal,
  );
  assert.deepEqual(t.cluster.writes().map((c) => c.verb), ["apply"]);
  assert.equal(t.cluster.peek(CM, NS, "a")!.metadata.annotations, undefined);
});

Deno.test("read-your-writes: the next run sees the previous run's writes before any watch does", async () => {
  const t = setup();
  t.cluster.put(SL, serverless());
  await t.refresh();
  await t.runner.run(SL, t.primary(), installPlan(), undefined, t.signal);
  const after = t.cluster.writes().length;
  // No refresh: the cache holds what the API returned for each write.
  assert.deepEqual(t.primary().metadata.finalizers, [SERVERLESS_FINALIZER]);
  assert.deepEqual(t.cache.get(CM, NS, "b")?.data, { k: "2", list: "x" });
  const r = await t.runner.run(SL, t.primary(), installPlan(), { ok: true }, t.signal);
  assert.equal(r.writes, 0);
  assert.deepEqual(t.cluster.writes(after), [], "nothing applied twice");
});

Deno.test("runner makes no write when the server stored the applied object in its own forms", async () => {
  const t = setup();
  t.cluster.put(SL, serverless({ finalizers: [SERVERLESS_FINALIZER] }));
  const desired = {
    ...configMap("srv", { k: "1" }),
    binaryData: {},
    extra: { resources: { limits: { cpu: "0.5", memory: "1024Mi" } }, none: null, list: [] },
  };
  await t.refresh();
  await t.runner.run(SL, t.primary(), { ...emptyPlan(), apply: [desired] }, undefined, t.signal);
  // What the API server keeps: empty and null fields dropped, quantities canonical.
  const stored = t.cluster.peek(CM, NS, "srv")!;
  t.cluster.put(CM, {
    ...stored,
    binaryData: undefined,
    extra: { resources: { limits: { cpu: "500m", memory: "1Gi" } } },
  });
  await t.refresh();
  const r = await t.runner.run(
    SL,
    t.primary(),
    { ...emptyPlan(), apply: [desired] },
    undefined,
    t.signal,
  );
  assert.equal(r.writes, 0, "no endless re-apply");
});
