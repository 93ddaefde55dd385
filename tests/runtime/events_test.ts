import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { emptyPlan, type EventSpec } from "../../src/reconcile/plan.ts";
import { Cache } from "../../src/runtime/cache/mod.ts";
import type { Cluster } from "../../src/runtime/cluster.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { EVENT_MAX_WAIT_MS, EventRecorder } from "../../src/runtime/events.ts";
import { Metrics } from "../../src/runtime/metrics.ts";
import { Runner } from "../../src/runtime/runner.ts";
import { TestCluster, WIDGET } from "./test_cluster.ts";
import { captureLogger, ManualClock, seededRandom } from "./helpers.ts";

const NS = "demo";

/** A held Event create: what was sent, and the switch that answers it. */
interface Held {
  body: KubeObject;
  release(): void;
}

/** The test cluster, with every Event create held until the test releases it. */
function holdingEvents(sim: TestCluster): { cluster: Cluster; held: Held[] } {
  const held: Held[] = [];
  const cluster: Cluster = {
    list: sim.list.bind(sim),
    watch: sim.watch.bind(sim),
    get: sim.get.bind(sim),
    update: sim.update.bind(sim),
    apply: sim.apply.bind(sim),
    applyStatus: sim.applyStatus.bind(sim),
    patch: sim.patch.bind(sim),
    delete: sim.delete.bind(sim),
    create: (type, obj) => {
      if (type.kind !== "Event") return sim.create(type, obj);
      return new Promise((resolve, reject) => {
        held.push({ body: obj, release: () => sim.create(type, obj).then(resolve, reject) });
      });
    },
  };
  return { cluster, held };
}

function setup(opts: { capacity?: number; concurrency?: number } = {}) {
  const clock = new ManualClock();
  const sim = new TestCluster(clock);
  const { cluster, held } = holdingEvents(sim);
  const { log, lines } = captureLogger(clock);
  const metrics = new Metrics();
  const recorder = new EventRecorder({ cluster, clock, log, identity: "op-0", metrics, ...opts });
  return { clock, sim, cluster, held, lines, metrics, recorder };
}

function obj(name: string): KubeObject {
  return {
    apiVersion: "test.platform-project.io/v1",
    kind: "Widget",
    metadata: { name, namespace: NS, uid: `uid-${name}` },
  };
}

const ev = (reason: string): EventSpec => ({ type: "Normal", reason, message: reason });
const about = (h: Held) => (h.body.involvedObject as { name: string }).name;
const turns = async () => {
  for (let i = 0; i < 50; i++) await Promise.resolve();
};

Deno.test("a reconcile returns before its Event is written; the Event is written after", async () => {
  const t = setup();
  const cache = new Cache();
  const runner = new Runner({
    cluster: t.cluster,
    cache,
    clock: t.clock,
    random: seededRandom(),
    log: captureLogger(t.clock).log,
    controller: "ratelimit",
    identity: "op-0",
    events: t.recorder,
  });
  const primary = { ...obj("a"), spec: {} };
  t.sim.put(WIDGET, primary);
  const plan = { ...emptyPlan(), status: { state: "Ready" }, events: [ev("Applied")] };
  const r = await runner.run(
    WIDGET,
    primary,
    plan,
    undefined,
    new AbortController().signal,
  );
  assert.equal(r.outcome?.ok, true);
  assert.equal(r.writes, 1);
  assert.deepEqual(t.sim.peek(WIDGET, NS, "a")?.status, { state: "Ready" });
  // The Event create is still unanswered, yet the run is over.
  await turns();
  assert.equal(t.held.length, 1);
  assert.equal(t.recorder.pending, 1);
  t.held[0].release();
  await t.recorder.flush();
  assert.equal(t.recorder.pending, 0);
  assert.equal((await t.sim.list(RESOURCES.Event, { namespace: NS })).items.length, 1);
});

Deno.test("at most `concurrency` Event writes in flight, one an object, in recorded order", async () => {
  const t = setup({ concurrency: 4 });
  t.recorder.record(obj("a"), ev("A1"));
  t.recorder.record(obj("a"), ev("A2"));
  t.recorder.record(obj("a"), ev("A3"));
  for (const n of ["b", "c", "d", "e"]) t.recorder.record(obj(n), ev(n.toUpperCase()));
  assert.equal(t.held.length, 0, "nothing is written during the caller's synchronous work");
  await turns();
  assert.deepEqual(t.held.map(about), ["a", "b", "c", "d"]);
  const order: string[] = [];
  const releaseOldest = async () => {
    const h = t.held.shift()!;
    order.push(String(h.body.reason));
    h.release();
    await turns();
  };
  while (t.held.length > 0) {
    assert.ok(t.held.length <= 4);
    assert.ok(t.held.filter((h) => about(h) === "a").length <= 1);
    await releaseOldest();
  }
  await t.recorder.flush();
  assert.deepEqual(order.filter((r) => r.startsWith("A")), ["A1", "A2", "A3"]);
  assert.equal(order.length, 7);
  assert.equal(t.recorder.dropped, 0);
});

Deno.test("when the queue is full the oldest Event is dropped, counted, and warned about once", async () => {
  const t = setup({ capacity: 2, concurrency: 1 });
  for (const n of ["a", "b", "c", "d", "e"]) t.recorder.record(obj(n), ev("Applied"));
  await turns();
  assert.equal(t.recorder.dropped, 3);
  assert.equal(t.metrics.eventsDropped.get(), 3);
  assert.match(t.metrics.render(), /platform_operator_events_dropped_total 3/);
  const warnings = t.lines.filter((l) => String(l.msg).includes("too many Events waiting"));
  assert.equal(warnings.length, 1);
  assert.deepEqual(t.held.map(about), ["d"]);
  t.held.shift()!.release();
  await turns();
  assert.deepEqual(t.held.map(about), ["e"]);
  t.held.shift()!.release();
  await t.recorder.flush();
  // A dropped Event was never written, so recording it again writes it.
  t.recorder.record(obj("a"), ev("Applied"));
  await turns();
  assert.deepEqual(t.held.map(about), ["a"]);
  // A recorded (written) one is not written twice.
  t.recorder.record(obj("e"), ev("Applied"));
  await turns();
  assert.equal(t.held.length, 1);
});

Deno.test("Events queued before the lease was lost, or discarded by a crash, are never written", async () => {
  const t = setup({ concurrency: 1 });
  const lease = new AbortController();
  t.recorder.record(obj("a"), ev("First"), lease.signal);
  t.recorder.record(obj("b"), ev("Second"), lease.signal);
  await turns();
  assert.deepEqual(t.held.map(about), ["a"]);
  lease.abort();
  t.recorder.record(obj("c"), ev("Third"), lease.signal);
  t.held.shift()!.release();
  await t.recorder.flush();
  assert.equal(t.held.length, 0, "b was queued under the lost lease, c recorded after it");

  t.recorder.record(obj("d"), ev("Fourth"));
  t.recorder.record(obj("e"), ev("Fifth"));
  await turns();
  t.recorder.discard();
  assert.equal(t.recorder.pending, 1, "the write in flight goes on");
  t.held.shift()!.release();
  await t.recorder.flush();
  assert.equal(t.held.length, 0);
  assert.equal(t.recorder.pending, 0);
});

/** The Events about `name` in the test cluster: reason, count and message. */
async function written(t: ReturnType<typeof setup>, name: string) {
  const items = (await t.sim.list(RESOURCES.Event, { namespace: NS })).items;
  return items
    .filter((e) => (e.involvedObject as { name: string }).name === name)
    .map((e) => ({ reason: e.reason, count: e.count, message: e.message }))
    .sort((x, y) => String(x.reason).localeCompare(String(y.reason)));
}

/** Releases every held create until nothing waits. */
async function drain(t: ReturnType<typeof setup>): Promise<void> {
  await turns();
  while (t.held.length > 0) {
    t.held.shift()!.release();
    await turns();
  }
  await t.recorder.flush();
}

Deno.test("a repeat after other Events is counted on its Event; restated at once it writes nothing", async () => {
  const t = setup();
  const a = obj("a");
  t.recorder.record(a, ev("Enforced"));
  t.recorder.record(a, ev("Enforced")); // restated (a Plan stating its Events again): nothing
  await drain(t);
  await t.clock.advance(60_000);
  t.recorder.record(a, ev("SidecarMissing"));
  t.recorder.record(a, ev("Enforced"));
  await drain(t);
  assert.deepEqual(await written(t, "a"), [
    { reason: "Enforced", count: 2, message: "Enforced" },
    { reason: "SidecarMissing", count: 1, message: "SidecarMissing" },
  ]);
  const creates = t.sim.calls.filter((c) => c.verb === "create").length;
  const patches = t.sim.calls.filter((c) => c.verb === "patch").length;
  assert.deepEqual({ creates, patches }, { creates: 2, patches: 1 }, "a repeat is a patch");
});

Deno.test("after a restart an Event written before is counted on, not set back", async () => {
  const t = setup();
  const a = obj("a");
  for (let i = 0; i < 3; i++) {
    t.recorder.record(a, ev("Enforced"));
    t.recorder.record(a, ev("SidecarMissing"));
  }
  await drain(t);
  assert.deepEqual((await written(t, "a")).map((e) => e.count), [3, 3]);
  // The operator restarts: a new recorder, whose correlator has seen nothing.
  await t.clock.advance(60_000);
  const restarted = new EventRecorder({
    cluster: t.cluster,
    clock: t.clock,
    log: captureLogger(t.clock).log,
    identity: "op-1",
  });
  const again = { ...t, recorder: restarted };
  restarted.record(a, ev("Enforced")); // its create answers 409: read and counted on
  await turns();
  // A repeat recorded while that create is in flight goes on from the count read back.
  restarted.record(a, ev("SidecarMissing"));
  restarted.record(a, ev("Enforced"));
  await drain(again);
  assert.deepEqual(await written(t, "a"), [
    { reason: "Enforced", count: 5, message: "Enforced" },
    { reason: "SidecarMissing", count: 4, message: "SidecarMissing" },
  ]);
  const enforced = (await t.sim.list(RESOURCES.Event, { namespace: NS })).items
    .find((e) => e.reason === "Enforced")!;
  assert.equal(
    enforced.lastTimestamp,
    new Date(t.clock.now()).toISOString().replace(/\.\d+Z$/, "Z"),
  );
});

Deno.test("a repeat recorded while its Event still waits is folded into that one write", async () => {
  const t = setup({ concurrency: 1 });
  t.recorder.record(obj("b"), ev("First")); // in flight: holds the only slot
  for (const r of ["X", "Y", "X", "Y", "X"]) t.recorder.record(obj("a"), ev(r));
  await drain(t);
  assert.deepEqual(await written(t, "a"), [
    { reason: "X", count: 3, message: "X" },
    { reason: "Y", count: 2, message: "Y" },
  ]);
  assert.equal(t.sim.calls.filter((c) => c.verb === "patch").length, 0);
});

Deno.test("more than 10 similar messages within 10 minutes become one combined Event, counted", async () => {
  const t = setup();
  const a = obj("a");
  const warn = (n: number): EventSpec => ({
    type: "Warning",
    reason: "SidecarMissing",
    message: `${n} of 20 Pods have no mesh sidecar`,
  });
  for (let n = 1; n <= 14; n++) t.recorder.record(a, warn(n));
  await drain(t);
  const got = await written(t, "a");
  assert.equal(got.length, 11, "10 messages, then one combined Event");
  const combined = got.find((e) => String(e.message).startsWith("(combined from similar events)"));
  assert.deepEqual(combined, {
    reason: "SidecarMissing",
    count: 4,
    message: "(combined from similar events): 14 of 20 Pods have no mesh sidecar",
  });
  // Ten minutes on, similar messages are new Events again.
  await t.clock.advance(11 * 60_000);
  t.recorder.record(a, warn(15));
  await drain(t);
  assert.equal((await written(t, "a")).length, 12);
});

Deno.test("the spam filter holds back repeats beyond 25 an object, never a new Event, and keeps their count", async () => {
  const t = setup();
  const a = obj("a");
  // 26 different Events take the 25 tokens (and one more, not held back: it is new).
  for (let n = 0; n < 26; n++) t.recorder.record(a, ev(`R${n}`));
  await drain(t);
  assert.equal((await written(t, "a")).length, 26);
  // Repeats now find no token: counted, not written.
  t.recorder.record(a, ev("R0"));
  t.recorder.record(a, ev("R1"));
  t.recorder.record(a, ev("R0"));
  await drain(t);
  assert.equal(t.sim.calls.filter((c) => c.verb === "patch").length, 0, "held back");
  assert.equal((await written(t, "a")).find((e) => e.reason === "R0")?.count, 1);
  // Another object has its own bucket.
  t.recorder.record(obj("b"), ev("R0"));
  t.recorder.record(obj("b"), ev("R1"));
  t.recorder.record(obj("b"), ev("R0"));
  await drain(t);
  assert.equal((await written(t, "b")).find((e) => e.reason === "R0")?.count, 2);
  // Five minutes bring a token back: the next repeat writes the whole count.
  await t.clock.advance(5 * 60_000 + 1);
  t.recorder.record(a, ev("R1"));
  await drain(t);
  const counts = Object.fromEntries((await written(t, "a")).map((e) => [e.reason, e.count]));
  assert.equal(counts.R1, 3, "R1 recorded three times, its held-back repeat included");
  assert.equal(counts.R0, 1, "R0's held-back repeats wait for its next write");
});

Deno.test("while reconciles are at work Events wait; they go once reconciles stop, or after 30 s", async () => {
  let busy = true;
  const t = setup({ concurrency: 4 });
  const recorder = new EventRecorder({
    cluster: t.cluster,
    clock: t.clock,
    log: captureLogger(t.clock).log,
    identity: "op-0",
    busy: () => busy,
  });
  for (const n of ["a", "b", "c", "d", "e"]) recorder.record(obj(n), ev("Applied"));
  await t.clock.advance(5_000);
  assert.equal(t.held.length, 0, "busy: nothing written");
  // The manager wakes it when a queue runs empty.
  busy = false;
  recorder.wake();
  await turns();
  assert.equal(t.held.length, 4, "idle: up to the recorder's concurrency");
  while (t.held.length > 0) {
    t.held.shift()!.release();
    await turns();
  }
  await recorder.flush();
  // An operator that never rests still writes them, one at a time, once the oldest waited 30 s
  // (looked at when the next Event is recorded or a write ends: no timers).
  busy = true;
  recorder.record(obj("f"), ev("Applied"));
  await t.clock.advance(EVENT_MAX_WAIT_MS - 1_000);
  recorder.record(obj("g"), ev("Applied"));
  await turns();
  assert.equal(t.held.length, 0, "not overdue yet");
  await t.clock.advance(1_000);
  recorder.record(obj("h"), ev("Applied"));
  await turns();
  assert.deepEqual(t.held.map(about), ["f"], "overdue: one at a time");
  t.held.shift()!.release();
  await turns();
  assert.deepEqual(t.held.map(about), [], "g has waited 1 s only");
  // Reconciles stop: the rest at once.
  busy = false;
  recorder.wake();
  await turns();
  assert.deepEqual(t.held.map(about), ["g", "h"]);
});
