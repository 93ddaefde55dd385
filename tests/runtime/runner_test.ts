/** The Runner carries out Plans in order and writes only what is not observed yet. */
import assert from "node:assert/strict";
import {
  FIELD_MANAGER,
  MANAGED_SELECTOR,
  SERVERLESS_FINALIZER,
} from "../../src/reconcile/labels.ts";
import { emptyPlan, type Plan } from "../../src/reconcile/plan.ts";
import type { Cluster, WriteOptions } from "../../src/runtime/cluster.ts";
import { CM, configMap, installPlan, NS, serverless, setup, SL } from "./runner_fixtures.ts";

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

/** `cluster` with every write's options told to `seen` (the last argument of each write). */
function optionsSpy(cluster: Cluster, seen: (WriteOptions | undefined)[]): Cluster {
  const arity = { create: 2, update: 2, apply: 2, applyStatus: 2, patch: 4, delete: 3 };
  return new Proxy(cluster, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      const at = arity[prop as keyof typeof arity];
      return (...args: unknown[]) => {
        if (at !== undefined) seen.push(args[at] as WriteOptions | undefined);
        return value.apply(target, args);
      };
    },
  });
}

Deno.test("each write carries what is left of the leader's term; none is sent once it is over", async () => {
  let left = 4_321;
  const seen: (WriteOptions | undefined)[] = [];
  const t = setup(undefined, (cluster) => ({
    cluster: optionsSpy(cluster, seen),
    writeBoundMs: () => left,
  }));
  t.cluster.put(SL, serverless());
  await t.refresh();
  await t.runner.run(SL, t.primary(), installPlan(), undefined, t.signal);
  assert.equal(seen.length, 4);
  assert.deepEqual(seen.map((o) => o?.timeoutMs), [4_321, 4_321, 4_321, 4_321]);
  t.cluster.put(CM, configMap("a", { k: "changed by someone" }));
  await t.refresh();
  left = 0;
  const r = await t.runner.run(SL, t.primary(), installPlan(), undefined, t.signal);
  assert.deepEqual(t.cluster.writes(), [], "nothing sent past the term");
  assert.equal(seen.length, 4);
  assert.equal(r.outcome, undefined, "a lost term remembers no outcome");
});

Deno.test("the finalizer's live check counts what the operator applied, not a user's object with its labels", async () => {
  const noneLeft = (appliedBy?: string): Plan => ({
    ...emptyPlan(),
    finalizer: { remove: SERVERLESS_FINALIZER },
    noneLeft: [{
      apiVersion: "v1",
      kind: "ConfigMap",
      labelSelector: MANAGED_SELECTOR,
      ...(appliedBy ? { appliedBy } : {}),
    }],
  });
  const deleting = async (t: ReturnType<typeof setup>) => {
    t.cluster.put(SL, serverless({ finalizers: [SERVERLESS_FINALIZER] }));
    // The user's own ConfigMap, created with the module's labels (another field manager).
    t.cluster.put(CM, configMap("users", { k: "1" }));
    await t.cluster.delete(SL, NS, "default");
    await t.refresh();
  };
  // Labels alone: the user's object holds the finalizer (the old check, kept without appliedBy).
  const labelsOnly = setup();
  await deleting(labelsOnly);
  const held = await labelsOnly.runner.run(
    SL,
    labelsOnly.primary(),
    noneLeft(),
    undefined,
    labelsOnly.signal,
  );
  assert.equal(held.outcome?.ok, false);
  assert.ok(labelsOnly.cluster.peek(SL, NS, "default"), "the finalizer stays");
  // Applied by the operator's field manager: the user's object does not count, the finalizer goes.
  const t = setup();
  await deleting(t);
  const r = await t.runner.run(SL, t.primary(), noneLeft(FIELD_MANAGER), undefined, t.signal);
  assert.equal(r.outcome?.ok, true);
  assert.equal(t.cluster.peek(SL, NS, "default"), undefined, "finalizer removed, object gone");
  assert.ok(t.cluster.peek(CM, NS, "users"), "the user's object is not touched");
  // An object the operator applied does count.
  const applied = setup();
  await deleting(applied);
  await applied.runner.run(
    SL,
    applied.primary(),
    { ...emptyPlan(), apply: [configMap("ours", { k: "2" })] },
    undefined,
    applied.signal,
  );
  await applied.refresh();
  const kept = await applied.runner.run(
    SL,
    applied.primary(),
    noneLeft(FIELD_MANAGER),
    undefined,
    applied.signal,
  );
  assert.equal(kept.outcome?.ok, false);
  assert.ok(
    applied.cluster.peek(SL, NS, "default"),
    "the operator's ConfigMap holds the finalizer",
  );
});
