/** The Manager with leader election: only the leader writes; standbys take over; stops are bounded. */
import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { Cluster } from "../../src/runtime/cluster.ts";
import { microTime } from "../../src/runtime/lease.ts";
import type { Manager } from "../../src/runtime/manager.ts";
import type { ControllerSpec } from "../../src/runtime/controller_spec.ts";
import { CM, RL, setup, widget, widgets, writesExceptLease } from "./manager_fixtures.ts";
import { emptyPlan } from "../../src/reconcile/plan.ts";
import { MANAGED_BY, MANAGED_BY_LABEL } from "../../src/reconcile/labels.ts";

Deno.test("with leader election only the leader writes; the standby takes over when it dies", async () => {
  const le = { namespace: "platform-system", name: "platform-operator" };
  const t = setup({ leaderElection: le });
  t.cluster.put(RL, widget("a", "1"));
  const a = t.mk("op-a");
  await t.clock.advance(100);
  const b = t.mk("op-b");
  await t.clock.advance(5_000);
  assert.equal(a.m.status.leading, true);
  assert.equal(b.m.status.leading, false);
  assert.equal(b.m.status.ready, true, "a healthy standby is ready");
  assert.deepEqual(writesExceptLease(b.net.writes), []);
  assert.ok(b.m.cache.get(CM, "demo", "a-cfg"), "the standby's caches are warm");
  // The leader crashes; a change made meanwhile is picked up by the new leader.
  a.m.abort("crash");
  a.net.mode.value = "hang";
  await a.done;
  t.cluster.put(RL, { ...t.cluster.peek(RL, "demo", "a")!, spec: { value: "2" } });
  assert.ok(await t.clock.until(() => b.m.status.leading, 15_000), "standby leads within 15 s");
  await t.clock.advance(1_000);
  assert.deepEqual(t.cluster.peek(CM, "demo", "a-cfg")!.data, { value: "2" });
  assert.ok(writesExceptLease(b.net.writes).length > 0);
  await b.m.stop();
});

Deno.test("a replica that creates the Lease lists each watch once: nobody led before it", async () => {
  const le = { namespace: "platform-system", name: "platform-operator" };
  const t = setup({ leaderElection: le });
  t.cluster.put(RL, widget("a", "1"));
  const a = t.mk("op-a");
  await t.clock.advance(5_000);
  assert.equal(a.m.status.leading, true);
  assert.ok(t.cluster.peek(CM, "demo", "a-cfg"));
  assert.equal(t.cluster.calls.filter((c) => c.verb === "list").length, 2, "Widgets, ConfigMaps");
  await a.m.stop();
});

/** What a graceful stop leaves: no holder, a one-second lease. */
function releasedLease(le: { namespace: string; name: string }, now: number): KubeObject {
  return {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { name: le.name, namespace: le.namespace },
    spec: { leaseDurationSeconds: 1, renewTime: microTime(now), leaseTransitions: 3 },
  };
}

Deno.test("a replica that takes a released Lease at its first read lists each watch once, after that read", async () => {
  const le = { namespace: "platform-system", name: "platform-operator" };
  const t = setup({ leaderElection: le });
  t.cluster.put(RL, widget("a", "1"));
  t.cluster.put(RESOURCES.Lease, releasedLease(le, t.clock.now()));
  const a = t.mk("op-a");
  await t.clock.advance(5_000);
  assert.equal(a.m.status.leading, true);
  assert.ok(t.cluster.peek(CM, "demo", "a-cfg"));
  const verbs = t.cluster.calls.map((c) => `${c.verb}:${c.kind}`);
  assert.equal(verbs.filter((v) => v.startsWith("list:")).length, 2, "Widgets, ConfigMaps");
  const read = verbs.indexOf("get:Lease");
  assert.ok(read >= 0 && read < verbs.findIndex((v) => v.startsWith("list:")), verbs.join());
  await a.m.stop();
});

Deno.test("a replica lists once it has read the Lease, without waiting for the write that takes it", async () => {
  const le = { namespace: "platform-system", name: "platform-operator" };
  const t = setup({ leaderElection: le });
  t.cluster.put(RL, widget("a", "1"));
  t.cluster.put(RESOURCES.Lease, releasedLease(le, t.clock.now()));
  // Its Lease writes take a second to be answered, until it stops.
  let slow = true;
  const c = t.cluster;
  const slowLeaseWrites: Cluster = {
    list: c.list.bind(c),
    watch: c.watch.bind(c),
    get: c.get.bind(c),
    create: c.create.bind(c),
    update: async (type, obj) => {
      if (slow && type.kind === "Lease") await t.clock.sleep(1_000);
      return c.update(type, obj);
    },
    apply: c.apply.bind(c),
    applyStatus: c.applyStatus.bind(c),
    patch: c.patch.bind(c),
    delete: c.delete.bind(c),
  };
  const a = t.mk("op-a", { cluster: slowLeaseWrites });
  const lists = () => t.cluster.calls.filter((x) => x.verb === "list").length;
  await t.clock.advance(900);
  assert.equal(a.m.status.leading, false, "the write that takes the Lease is still unanswered");
  assert.equal(lists(), 2, "both watches listed meanwhile");
  await t.clock.advance(5_000);
  assert.equal(a.m.status.leading, true);
  assert.equal(lists(), 2, "and not again once leading: they were sent after the read");
  assert.ok(t.cluster.peek(CM, "demo", "a-cfg"));
  slow = false;
  await a.m.stop();
});

/**
 * A second after its term began, the leader `m` has reconciled Widget c, which its stalled watches
 * never delivered, having listed the Widgets again once: then stops it.
 */
async function seesWhatStalledWatchesMissed(
  t: ReturnType<typeof setup>,
  m: Manager,
): Promise<void> {
  await t.clock.advance(1_000);
  assert.deepEqual(t.cluster.peek(CM, "demo", "c-cfg")?.data, { value: "3" });
  const restarts = { resource: "widgets.test.platform-project.io", reason: "relist" };
  assert.equal(m.metrics.watchRestarts.get(restarts), 1);
  await m.stop();
}

Deno.test("a standby that takes over lists again first: what its stalled watches missed is seen at once", async () => {
  const le = { namespace: "platform-system", name: "platform-operator" };
  const t = setup({ leaderElection: le });
  t.cluster.put(RL, widget("a", "1"));
  const a = t.mk("op-a");
  await t.clock.advance(100);
  const b = t.mk("op-b");
  await t.clock.advance(5_000);
  assert.equal(a.m.status.leading, true);
  // Every watch open now stops delivering, unnoticed until its 90 s idle timeout.
  t.cluster.stallWatches();
  t.cluster.put(RL, widget("c", "3"));
  a.m.abort("crash");
  a.net.mode.value = "hang";
  await a.done;
  assert.ok(await t.clock.until(() => b.m.status.leading, 15_000), "standby leads within 15 s");
  await seesWhatStalledWatchesMissed(t, b.m);
});

Deno.test("a leader cut off the API server that takes its own Lease back lists again first: what its stalled watches missed is seen at once", async () => {
  const le = { namespace: "platform-system", name: "platform-operator" };
  const t = setup({ leaderElection: le });
  t.cluster.put(RL, widget("a", "1"));
  const a = t.mk("op-a");
  await t.clock.advance(5_000);
  assert.equal(a.m.status.leading, true);
  // A partition: every request refused, every open watch silent (until its 90 s idle timeout).
  a.net.mode.value = "fail";
  t.cluster.stallWatches();
  await t.clock.advance(8_000);
  assert.equal(a.m.status.leading, false, "stopped leading at its renew deadline");
  // Someone else changes the world meanwhile; no other replica leads.
  t.cluster.put(RL, widget("c", "3"));
  await t.clock.advance(4_000);
  a.net.mode.value = "ok";
  assert.ok(await t.clock.until(() => a.m.status.leading, 5_000), "it takes its Lease back");
  await seesWhatStalledWatchesMissed(t, a.m);
});

Deno.test("graceful stop finishes, releases the lease, and the standby takes over at once", async () => {
  const le = { namespace: "platform-system", name: "platform-operator" };
  const t = setup({ leaderElection: le });
  t.cluster.put(RL, widget("a", "1"));
  const a = t.mk("op-a");
  await t.clock.advance(100);
  const b = t.mk("op-b");
  await t.clock.advance(5_000);
  let resolved = false;
  a.done.then(() => resolved = true);
  await a.m.stop("SIGTERM");
  await t.clock.flush();
  assert.equal(resolved, true, "start() resolves after stop");
  assert.equal(a.m.status.healthy, false);
  assert.equal(t.cluster.watchCount, 2, "only the standby's watches are open");
  assert.ok(await t.clock.until(() => b.m.status.leading, 2_500, 50));
  await b.m.stop();
  assert.equal(t.cluster.watchCount, 0);
});

Deno.test("a leader that cannot renew its lease stops writing before the standby takes over", async () => {
  const le = { namespace: "platform-system", name: "platform-operator" };
  const t = setup({ leaderElection: le });
  t.cluster.put(RL, widget("a", "1"));
  const a = t.mk("op-a", {}, ["Lease"]);
  await t.clock.advance(100);
  const b = t.mk("op-b");
  await t.clock.advance(5_000);
  assert.equal(a.m.status.leading, true);
  a.net.mode.value = "fail"; // only its Lease calls fail: it could still write everything else
  const cut = t.clock.now();
  await t.clock.advance(7_000);
  assert.equal(a.m.status.leading, false, "stopped leading at its renew deadline");
  const before = writesExceptLease(a.net.writes).length;
  t.cluster.put(RL, { ...t.cluster.peek(RL, "demo", "a")!, spec: { value: "2" } });
  assert.ok(await t.clock.until(() => b.m.status.leading, 15_000 - (t.clock.now() - cut)));
  await t.clock.advance(1_000);
  assert.deepEqual(
    t.cluster.peek(CM, "demo", "a-cfg")!.data,
    { value: "2" },
    "the new leader did the work",
  );
  assert.equal(writesExceptLease(a.net.writes).length, before, "the old leader wrote nothing more");
  assert.equal(a.m.status.healthy, true, "it stays up as a standby");
  await a.m.stop();
  await b.m.stop();
});

Deno.test("stop finishes within bounded time even when the API hangs", async () => {
  const le = { namespace: "platform-system", name: "platform-operator" };
  const t = setup({ leaderElection: le });
  t.cluster.put(RL, widget("a", "1"));
  const a = t.mk("op-a");
  await t.clock.advance(5_000);
  a.net.mode.value = "hang";
  t.cluster.put(RL, { ...t.cluster.peek(RL, "demo", "a")!, spec: { value: "2" } }); // a reconcile hangs
  await t.clock.advance(100);
  let stopped = false;
  a.m.stop().then(() => stopped = true);
  assert.ok(await t.clock.until(() => stopped, 25_000, 500), "stopped within 4 × 5 s");
  assert.ok(t.lines.some((l) => String(l.msg).startsWith("stopping: gave up waiting for")));
});

Deno.test("a watch that cannot list again holds back only the controllers that read its type", async () => {
  const le = { namespace: "platform-system", name: "platform-operator" };
  const seen: string[] = [];
  const secrets: ControllerSpec = {
    name: "secrets",
    primary: RESOURCES.Secret,
    watches: [],
    reconcile(key) {
      seen.push(key);
      return undefined;
    },
  };
  const t = setup({ leaderElection: le, controllers: [widgets(), secrets] });
  t.cluster.put(RL, widget("a", "1"));
  t.cluster.put(RESOURCES.Secret, {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "s", namespace: "demo" },
  });
  const a = t.mk("op-a");
  await t.clock.advance(100);
  // The standby's Secret lists will fail (a webhook, a timeout, a quota: something of that type).
  const b = t.mk("op-b", {}, ["Secret"]);
  await t.clock.advance(5_000);
  assert.equal(a.m.status.leading, true);
  assert.deepEqual(seen, ["demo/s"]);
  b.net.mode.value = "fail";
  t.cluster.put(RL, widget("a", "2"));
  a.m.abort("crash");
  a.net.mode.value = "hang";
  await a.done;
  assert.ok(await t.clock.until(() => b.m.status.leading, 15_000), "standby leads within 15 s");
  // It lists every watch again before it acts: the Widgets and ConfigMaps list, the Secrets do not.
  await t.clock.advance(1_000);
  assert.deepEqual(t.cluster.peek(CM, "demo", "a-cfg")?.data, { value: "2" }, "widgets reconciled");
  const began = () =>
    t.lines.filter((l) =>
      l.replica === "op-b" && l.msg === "caches synced and leading: reconciling"
    ).map((l) => ({ controllers: l.controllers, waiting: l.waiting }));
  assert.deepEqual(began(), [{ controllers: ["widgets"], waiting: ["secrets"] }]);
  const waiting = (controller: string) => b.m.metrics.controllerWaiting.get({ controller });
  assert.deepEqual([waiting("widgets"), waiting("secrets")], [0, 1], "the metric says who waits");
  await t.clock.advance(30_000);
  assert.deepEqual(seen, ["demo/s"], "the secrets controller waits for its list");
  // The Secrets list again: their controller begins.
  b.net.mode.value = "ok";
  assert.ok(await t.clock.until(() => seen.length > 1, 60_000), "secrets reconciled once listed");
  assert.deepEqual(began(), [
    { controllers: ["widgets"], waiting: ["secrets"] },
    { controllers: ["secrets"], waiting: undefined },
  ]);
  assert.equal(waiting("secrets"), 0);
  await b.m.stop();
});

Deno.test("a controller's writes are compared with what it watches, not with another controller's cache", async () => {
  // The writer applies a ConfigMap it does not watch; the widgets controller's watch caches it.
  // Compared with that cache, the second apply would be skipped as unchanged: but that watch need
  // not have listed when the writer's term began, so the writer writes (and says why).
  const cm: KubeObject = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "shared", namespace: "demo", labels: { [MANAGED_BY_LABEL]: MANAGED_BY } },
    data: { value: "1" },
  };
  const writer: ControllerSpec = {
    name: "writer",
    primary: RESOURCES.Secret,
    watches: [],
    reconcile: () => ({ ...emptyPlan(), apply: [cm] }),
  };
  const t = setup({ controllers: [widgets(), writer] });
  const secret = (name: string): KubeObject => ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace: "demo" },
  });
  t.cluster.put(RESOURCES.Secret, secret("a"));
  const a = t.mk("op-a");
  await t.clock.advance(2_000);
  assert.ok(a.m.cache.get(CM, "demo", "shared"), "the widgets controller's watch caches it");
  t.cluster.put(RESOURCES.Secret, secret("b"));
  await t.clock.advance(2_000);
  const applies = t.cluster.calls.filter((c) => c.verb === "apply" && c.kind === "ConfigMap");
  assert.equal(applies.length, 2, "applied for each Secret: not skipped against another's cache");
  assert.ok(
    t.lines.some((l) =>
      l.level === "warn" && /^configmaps is applied but not watched/.test(String(l.msg))
    ),
  );
  await a.m.stop();
});

Deno.test("a stop whose reconcile outlives the drain hands the lease over only when its term is over", async () => {
  const le = { namespace: "platform-system", name: "platform-operator" };
  const t = setup({ leaderElection: le });
  t.cluster.put(RL, widget("a", "1"));
  const a = t.mk("op-a", {}, ["ConfigMap"]); // only its ConfigMap writes hang
  await t.clock.advance(100);
  const b = t.mk("op-b");
  await t.clock.advance(5_000);
  assert.equal(a.m.status.leading, true);
  const lease = () =>
    t.cluster.peek(RESOURCES.Lease, le.namespace, le.name)?.spec as {
      renewTime?: string;
      holderIdentity?: string;
    };
  // Right after a renewal: the term then ends 7 s (the renew deadline) after it was sent.
  const before = lease().renewTime;
  assert.ok(await t.clock.until(() => lease().renewTime !== before, 3_000, 10));
  const termEnds = Date.parse(lease().renewTime!) + 7_000;
  a.net.mode.value = "hang";
  t.cluster.put(RL, { ...t.cluster.peek(RL, "demo", "a")!, spec: { value: "2" } }); // its apply hangs
  await t.clock.advance(10);
  let stopped = false;
  a.m.stop("SIGTERM").then(() => stopped = true);
  let handedOver = 0;
  for (let i = 0; i < 400 && !(stopped && b.m.status.leading); i++) {
    await t.clock.advance(50);
    if (!handedOver && lease().holderIdentity !== "op-a") handedOver = t.clock.now();
  }
  assert.ok(stopped && b.m.status.leading, "a stopped and b leads");
  // Released at the drain's end (5 s after the stop), the Lease would go inside a's term, where
  // the hung write may still land (its server-side timeout is the term's time left).
  assert.ok(
    handedOver >= termEnds,
    `the lease went ${termEnds - handedOver} ms before a's term ended`,
  );
  assert.ok(t.lines.some((l) => String(l.msg).includes("the lease goes when this term ends")));
  await b.m.stop();
});
