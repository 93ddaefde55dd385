import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { emptyPlan, type EventSpec } from "../../src/reconcile/plan.ts";
import { Cache } from "../../src/runtime/cache/mod.ts";
import type { Cluster } from "../../src/runtime/cluster.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { EventRecorder } from "../../src/runtime/events.ts";
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
