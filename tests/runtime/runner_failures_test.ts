/** The Runner when a write fails, the lease is lost, or a Plan asks for what it must refuse. */
import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { SERVERLESS_FINALIZER } from "../../src/reconcile/labels.ts";
import { emptyPlan } from "../../src/reconcile/plan.ts";
import { ApiError } from "../../src/runtime/cluster.ts";
import { CM, configMap, installPlan, NS, serverless, setup, SL } from "./runner_fixtures.ts";

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

Deno.test("a plan made knowing the last pass failed writes no status when its writes succeed, and looks again at once", async () => {
  const t = setup();
  t.cluster.put(SL, serverless({ finalizers: [SERVERLESS_FINALIZER] }));
  await t.refresh();
  t.cluster.failNext("apply", new ApiError(0, "", "connection refused"));
  const plan = { ...installPlan(), finalizer: undefined };
  const failed = await t.runner.run(SL, t.primary(), plan, undefined, t.signal);
  assert.equal(failed.outcome?.ok, false);
  // The API server is back: the plan made knowing the failure reports it in its status.
  await t.refresh();
  const stale = { ...plan, status: { state: "Error", served: "True" } };
  const r = await t.runner.run(SL, t.primary(), stale, failed.outcome, t.signal);
  assert.deepEqual(r.outcome, { ok: true, generation: 1 });
  assert.deepEqual(r.work, { type: "done", requeueAfterMs: 0 }, "looked at again at once");
  assert.deepEqual(
    t.cluster.writes().map((c) => c.verb),
    ["apply", "apply"],
    "the failure the status describes is over: no status write",
  );
  assert.equal(t.cluster.peek(SL, NS, "default")!.status, undefined);
  // The next plan, made knowing the pass succeeded, writes the status as it is now: one write.
  await t.refresh();
  const from = t.cluster.calls.length;
  const ready = { ...plan, status: { state: "Ready", served: "True" } };
  await t.runner.run(SL, t.primary(), ready, r.outcome, t.signal);
  assert.deepEqual(t.cluster.writes(from).map((c) => c.verb), ["applyStatus"]);
  assert.equal((t.cluster.peek(SL, NS, "default")!.status as { state: string }).state, "Ready");
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

Deno.test("a write that landed unanswered is read back before it is made again, and not made twice", async () => {
  // The status write lands, but no answer comes back (the API server went down meanwhile).
  const { t, plan, first } = await statusLandedUnanswered();
  assert.equal(first.outcome?.ok, false);
  assert.equal((t.cluster.peek(SL, NS, "default")!.status as { state: string }).state, "Ready");
  // The watch has not shown it (the cache still has the primary without a status). The same
  // plan again: the primary is read back, the status is found written, nothing is written.
  // (The pass made knowing the failure writes no status; the one after it does.)
  const from = t.cluster.calls.length;
  const stale = await t.runner.run(SL, t.primary(), plan, first.outcome, t.signal);
  assert.deepEqual(stale.work, { type: "done", requeueAfterMs: 0 });
  const again = await t.runner.run(SL, t.primary(), plan, stale.outcome, t.signal);
  assert.equal(again.outcome?.ok, true);
  const after = t.cluster.calls.slice(from).filter((c) => c.kind === "Serverless");
  assert.deepEqual(after.map((c) => c.verb), ["get"], "read back once, not written again");
  // Answered writes are not read back: the next status change is one write, no read.
  await t.refresh();
  const next = t.cluster.calls.length;
  await t.runner.run(
    SL,
    t.primary(),
    { ...plan, status: { state: "Warning", served: "True" } },
    again.outcome,
    t.signal,
  );
  assert.deepEqual(
    t.cluster.calls.slice(next).filter((c) => c.kind === "Serverless").map((c) => c.verb),
    ["applyStatus"],
  );
});

Deno.test("an apply that landed unanswered is read back and skipped; one that did not land is made", async () => {
  const t = setup();
  t.cluster.put(SL, serverless({ finalizers: [SERVERLESS_FINALIZER] }));
  await t.refresh();
  const plan = { ...installPlan(), finalizer: undefined };
  t.cluster.landUnanswered("apply");
  const first = await unanswered(t, t.runner.run(SL, t.primary(), plan, undefined, t.signal));
  assert.equal(first.outcome?.ok, false);
  const from = t.cluster.calls.length;
  await t.runner.run(SL, t.primary(), plan, first.outcome, t.signal);
  const cms = t.cluster.calls.slice(from).filter((c) => c.kind === "ConfigMap");
  assert.deepEqual(cms.map((c) => `${c.verb} ${c.key}`).slice(0, 1), [`get ${NS}/a`]);
  assert.equal(cms.filter((c) => c.verb === "apply" && c.key === `${NS}/a`).length, 0, "a landed");
  // A write refused outright (no doubt it did not land) is not read back.
  const t2 = setup();
  t2.cluster.put(SL, serverless({ finalizers: [SERVERLESS_FINALIZER] }));
  await t2.refresh();
  t2.cluster.failNext("apply", new ApiError(500, "InternalError", "etcd leader changed"));
  const failed = await t2.runner.run(SL, t2.primary(), plan, undefined, t2.signal);
  const from2 = t2.cluster.calls.length;
  await t2.runner.run(SL, t2.primary(), plan, failed.outcome, t2.signal);
  assert.deepEqual(
    t2.cluster.calls.slice(from2).filter((c) => c.kind === "ConfigMap" && c.key === `${NS}/a`)
      .map((c) => c.verb),
    ["apply"],
  );
});

/** `run`, with the test clock moved on so that the unanswered call gives up. */
async function unanswered<T>(t: ReturnType<typeof setup>, run: Promise<T>): Promise<T> {
  await t.clock.advance(1);
  return await run;
}

Deno.test("a read back the role does not allow (403) writes as before, once, instead of never again", async () => {
  const { t, plan, first } = await statusLandedUnanswered();
  const stale = await t.runner.run(SL, t.primary(), plan, first.outcome, t.signal);
  t.cluster.failNext("get", new ApiError(403, "Forbidden", "cannot get serverlesses"));
  const from = t.cluster.calls.length;
  const r = await t.runner.run(SL, t.primary(), plan, stale.outcome, t.signal);
  assert.equal(r.outcome?.ok, true);
  assert.deepEqual(
    t.cluster.calls.slice(from).filter((c) => c.kind === "Serverless").map((c) => c.verb),
    ["get", "applyStatus"],
  );
  assert.ok(t.lines.some((l) => String(l.msg).includes("cannot read it back (403)")));
});

/** A runner whose status write of `plan` (Ready) landed but got no answer: `first` is that run. */
async function statusLandedUnanswered() {
  const t = setup();
  t.cluster.put(SL, serverless({ finalizers: [SERVERLESS_FINALIZER] }));
  await t.refresh();
  t.cluster.landUnanswered("applyStatus");
  const plan = {
    ...installPlan(),
    finalizer: undefined,
    status: { state: "Ready", served: "True" },
  };
  const first = await unanswered(t, t.runner.run(SL, t.primary(), plan, undefined, t.signal));
  return { t, plan, first };
}

/**
 * A Serverless and the ConfigMap `verdict` (`ref`) a status of it may rest on, which changed on the
 * API server after the cache last saw it (its watch stalled unnoticed): cached at `cachedRv`.
 */
async function verdictBehind() {
  const t = setup();
  t.cluster.put(SL, serverless({ finalizers: [SERVERLESS_FINALIZER] }));
  t.cluster.put(CM, configMap("verdict", { available: "True" }));
  await t.refresh();
  const cachedRv = t.cache.get(CM, NS, "verdict")!.metadata.resourceVersion;
  t.cluster.put(CM, configMap("verdict", { available: "False" }));
  const ref = { apiVersion: "v1", kind: "ConfigMap", namespace: NS, name: "verdict" };
  return { t, ref, cachedRv };
}

Deno.test("a status that rests on an object the cache holds behind the API server is not written", async () => {
  const { t, ref, cachedRv } = await verdictBehind();
  const plan = { ...emptyPlan(), status: { state: "Ready", served: "True" }, confirm: [ref] };
  const r = await t.runner.run(SL, t.primary(), plan, undefined, t.signal);
  assert.equal(r.work.type, "retrySoon", "a conflict: judged again soon");
  assert.deepEqual(t.cluster.writes().map((c) => c.verb), [], "no status written");
  assert.equal(t.cluster.peek(SL, NS, "default")!.status, undefined);
  assert.match(
    r.outcome?.error ?? "",
    /ConfigMap platform-system\/verdict is at \d+ there but was cached at \d+ when the status was judged/,
  );
  // Said as a warning: no write failed, the cache was behind.
  const said = t.lines.filter((l) => String(l.msg).includes("verdict"));
  assert.equal(said.length, 1);
  assert.equal(said[0].level, "warn");
  assert.doesNotMatch(String(said[0].msg), /write failed/);
  // The live copy is in the cache now, so the next reconcile judges from it.
  const cached = t.cache.get(CM, NS, "verdict")!;
  assert.notEqual(cached.metadata.resourceVersion, cachedRv);
  assert.deepEqual(cached.data, { available: "False" });
  // With the cache caught up, the same claim is written.
  const again = await t.runner.run(SL, t.primary(), plan, undefined, t.signal);
  assert.equal(again.outcome?.ok, true);
  assert.deepEqual(t.cluster.writes().map((c) => c.verb), ["applyStatus"]);
  // Gone from the API server while the cache holds it: not written either.
  t.cluster.remove(CM, NS, "verdict");
  const gone = await t.runner.run(
    SL,
    t.primary(),
    { ...plan, status: { state: "Ready", served: "False" } },
    undefined,
    t.signal,
  );
  assert.equal(gone.work.type, "retrySoon");
  assert.match(gone.outcome?.error ?? "", /is gone from the API server but was cached at/);
  // A status already shown makes no read at all.
  const from = t.cluster.calls.length;
  await t.runner.run(SL, t.primary(), plan, undefined, t.signal);
  assert.deepEqual(t.cluster.calls.slice(from).map((c) => c.verb), []);
});

Deno.test("a status is confirmed against the version it was judged from, not a cache that caught up meanwhile", async () => {
  const { t, ref, cachedRv } = await verdictBehind();
  const plan = { ...emptyPlan(), status: { state: "Ready", served: "True" }, confirm: [ref] };
  // The Plan is judged from `cachedRv`; then, while it runs, the watch delivers the newer copy
  // (sweep seed 5200169: a stalled APIService watch restarted between a Scaler's reconcile and
  // its Ready write, and the confirm compared the live copy with the cache as it was by then).
  const run = t.runner.run(SL, t.primary(), plan, undefined, t.signal);
  t.cache.written!(CM, t.cluster.peek(CM, NS, "verdict")!);
  assert.notEqual(t.cache.get(CM, NS, "verdict")!.metadata.resourceVersion, cachedRv);
  const r = await run;
  assert.equal(r.work.type, "retrySoon", "judged again soon");
  assert.deepEqual(t.cluster.writes().map((c) => c.verb), [], "no status written");
  assert.match(r.outcome?.error ?? "", new RegExp(`was cached at ${cachedRv} when the status`));
  // Judged again from the copy the cache holds now, the same claim is written.
  const again = await t.runner.run(SL, t.primary(), plan, undefined, t.signal);
  assert.equal(again.outcome?.ok, true);
  assert.deepEqual(t.cluster.writes().map((c) => c.verb), ["applyStatus"]);
});

Deno.test("a failed pass's status is written only once what it rests on is read", async () => {
  const { t, ref } = await verdictBehind();
  // The last pass failed, and so does this one's apply: its status is written all the same, but
  // not while the cache is behind what it rests on.
  const last = {
    ok: false,
    failed: { apiVersion: "v1", kind: "ConfigMap", namespace: NS, name: "a" },
    error: "500 InternalError: boom",
  };
  t.cluster.failNext("apply", new ApiError(500, "InternalError", "boom"));
  const plan = {
    ...emptyPlan(),
    apply: [configMap("a", { k: "1" })],
    status: { state: "Ready", served: "True" },
    confirm: [ref],
  };
  const r = await t.runner.run(SL, t.primary(), plan, last, t.signal);
  assert.equal(r.outcome?.ok, false);
  assert.equal(t.cluster.peek(SL, NS, "default")!.status, undefined);
  assert.deepEqual(t.cache.get(CM, NS, "verdict")!.data, { available: "False" }, "now cached");
});
