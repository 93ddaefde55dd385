/** The Manager: reconciles to a fixed point, repairs, cleans up, retries, waits for its caches. */
import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { ApiError } from "../../src/runtime/cluster.ts";
import { readyz } from "../../src/runtime/health.ts";
import { createLogger } from "../../src/runtime/log.ts";
import { Manager } from "../../src/runtime/manager.ts";
import { CM, FINALIZER, images, RL, setup, widget, widgets } from "./manager_fixtures.ts";
import { TestCluster } from "./test_cluster.ts";
import { ManualClock, seededRandom } from "./helpers.ts";

Deno.test("manager reconciles to the desired state and then makes zero writes", async () => {
  const t = setup();
  t.cluster.put(RL, widget("a", "1"));
  const { m, net, done } = t.mk("op-0");
  await t.clock.advance(1_000);
  const child = t.cluster.peek(CM, "demo", "a-cfg")!;
  assert.deepEqual(child.data, { value: "1" });
  const rl = t.cluster.peek(RL, "demo", "a")!;
  assert.deepEqual(rl.metadata.finalizers, [FINALIZER]);
  assert.deepEqual(rl.status, { state: "Ready" });
  assert.ok(m.status.ready && m.status.leading && m.status.synced);
  const settled = net.writes.length;
  await t.clock.advance(30 * 60_000); // three resyncs
  assert.deepEqual(net.writes.slice(settled), [], "no writes at the fixed point");
  assert.ok(t.calls.length >= 4, "the resyncs did reconcile");
  const text = m.metrics.render();
  assert.match(
    text,
    /platform_operator_reconcile_total\{controller="widgets",result="success"\} \d+/,
  );
  assert.match(text, /platform_operator_api_requests_total\{code="200",verb="list"\} 2/);
  await m.stop();
  await done;
});

Deno.test("a held manager lists but reconciles nothing, and is not ready, until released", async () => {
  const t = setup({ held: true });
  t.cluster.put(RL, widget("a", "1"));
  const { m, net, done } = t.mk("op-0");
  await t.clock.advance(1_000);
  assert.ok(m.status.synced, "its caches filled while held");
  assert.equal(m.status.ready, false);
  assert.deepEqual(net.writes, []);
  assert.deepEqual(t.calls, []);
  m.release();
  await t.clock.advance(1_000);
  assert.ok(m.status.ready);
  assert.deepEqual(t.cluster.peek(CM, "demo", "a-cfg")?.data, { value: "1" });
  await m.stop();
  await done;
});

Deno.test("manager repairs a child changed by someone else and follows spec changes", async () => {
  const t = setup();
  t.cluster.put(RL, widget("a", "1"));
  const { m } = t.mk("op-0");
  await t.clock.advance(1_000);
  const child = t.cluster.peek(CM, "demo", "a-cfg")!;
  t.cluster.put(CM, { ...child, data: { value: "tampered" } });
  await t.clock.advance(1_000);
  assert.deepEqual(t.cluster.peek(CM, "demo", "a-cfg")!.data, { value: "1" });
  t.cluster.put(RL, { ...t.cluster.peek(RL, "demo", "a")!, spec: { value: "2" } });
  await t.clock.advance(1_000);
  assert.deepEqual(t.cluster.peek(CM, "demo", "a-cfg")!.data, { value: "2" });
  await m.stop();
});

Deno.test("manager cleans up on deletion and removes the finalizer last", async () => {
  const t = setup();
  t.cluster.put(RL, widget("a", "1"));
  const { m } = t.mk("op-0");
  await t.clock.advance(1_000);
  await t.cluster.delete(RL, "demo", "a");
  assert.ok(t.cluster.peek(RL, "demo", "a"), "held by the finalizer");
  await t.clock.advance(1_000);
  assert.equal(t.cluster.peek(CM, "demo", "a-cfg"), undefined);
  assert.equal(t.cluster.peek(RL, "demo", "a"), undefined);
  await m.stop();
});

Deno.test("a throwing reconcile is counted, logged and retried with backoff", async () => {
  const t = setup({ controllers: [widgets([], (k) => k === "demo/bad")] });
  t.cluster.put(RL, widget("bad", "1"));
  t.cluster.put(RL, widget("good", "1"));
  const { m } = t.mk("op-0");
  await t.clock.advance(2_000);
  assert.ok(t.cluster.peek(CM, "demo", "good-cfg"));
  const errors = m.metrics.reconcileErrors.get({ controller: "widgets" });
  assert.ok(errors >= 5 && errors <= 15, `${errors} retries in 2 s of backoff`);
  assert.ok(
    t.lines.some((l) =>
      l.level === "error" && l.msg === "reconcile failed" && l.key === "demo/bad"
    ),
  );
  await m.stop();
});

Deno.test("not ready until the caches sync; a missing primary CRD keeps it unready", async () => {
  const t = setup();
  t.cluster.unserve(RL);
  const { m } = t.mk("op-0");
  await t.clock.advance(5_000);
  assert.equal(m.status.healthy, true);
  assert.equal(m.status.synced, false);
  assert.deepEqual(readyz(m.status), { status: 503, body: "not ready: caches not synced yet\n" });
  t.cluster.serve(RL);
  t.cluster.put(RL, widget("a", "1"));
  await t.clock.advance(31_000);
  assert.equal(m.status.ready, true);
  assert.ok(t.cluster.peek(CM, "demo", "a-cfg"));
  await m.stop();
});

Deno.test("the same seed gives the same log, byte for byte", async () => {
  const run = async () => {
    const clock = new ManualClock();
    const cluster = new TestCluster(clock);
    const out: string[] = [];
    const log = createLogger({ clock, level: "debug", sink: (l) => out.push(l) });
    const m = new Manager({
      cluster,
      clock,
      random: seededRandom(99),
      log,
      controllers: [widgets()],
      images,
      identity: "op-0",
      leaderElection: { namespace: "platform-system", name: "lease" },
    });
    const done = m.start();
    for (let i = 0; i < 5; i++) cluster.put(RL, widget(`r${i}`, String(i)));
    await clock.advance(3_000);
    cluster.compact();
    cluster.dropWatches();
    cluster.put(RL, widget("r0", "changed"));
    await clock.advance(10_000);
    await m.stop();
    await done;
    return { log: out.join("\n"), metrics: m.metrics.render() };
  };
  const first = await run();
  const second = await run();
  assert.ok(first.log.length > 1_000);
  assert.equal(first.log, second.log);
  assert.equal(first.metrics, second.metrics);
});

Deno.test("no reconcile at all while a required secondary watch cannot list", async () => {
  const t = setup();
  t.cluster.put(RL, widget("a", "1"));
  for (let i = 0; i < 50; i++) {
    t.cluster.failNext("list", new ApiError(403, "Forbidden", "configmaps is forbidden"));
  }
  const { m } = t.mk("op-0");
  await t.clock.advance(20_000);
  assert.ok(t.cluster.failures.get("list")!.length > 0, "still failing");
  assert.equal(t.calls.length, 0, "nothing reconciled on a half-filled cache");
  assert.equal(m.status.synced, false);
  t.cluster.failures.delete("list");
  await t.clock.advance(31_000);
  assert.ok(t.calls.includes("demo/a"));
  assert.ok(t.cluster.peek(CM, "demo", "a-cfg"));
  await m.stop();
});

Deno.test("Event writes that hang hold up neither reconciles nor a graceful stop for long", async () => {
  const t = setup();
  t.cluster.put(RL, widget("a", "1"));
  const a = t.mk("op-a", {}, ["Event"]);
  a.net.mode.value = "hang";
  await t.clock.advance(1_000);
  assert.deepEqual(t.cluster.peek(RL, "demo", "a")!.status, { state: "Ready" });
  t.cluster.put(RL, { ...t.cluster.peek(RL, "demo", "a")!, spec: { value: "2" } });
  await t.clock.advance(1_000);
  assert.deepEqual(t.cluster.peek(CM, "demo", "a-cfg")!.data, { value: "2" });
  assert.equal((await t.cluster.list(RESOURCES.Event)).items.length, 0, "no Event got through");
  let stopped = false;
  a.m.stop().then(() => stopped = true);
  assert.ok(await t.clock.until(() => stopped, 2_500, 100), "stopped after the 2 s Event wait");
  assert.ok(t.lines.some((l) => l.msg === "stopping: gave up waiting for queued Events"));
});
