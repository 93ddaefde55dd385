import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import type { Cluster, WriteOptions } from "../../src/runtime/cluster.ts";
import type { KubeObject, ResourceType } from "../../src/api/object.ts";
import { SMALL_BODY_BYTES } from "../../src/kube/transport.ts";
import { LeaderElector, type TermStart } from "../../src/runtime/leader.ts";
import { type LeaseSpec, microTime } from "../../src/runtime/lease.ts";
import { Metrics } from "../../src/runtime/metrics.ts";
import { nullLogger } from "../../src/runtime/log.ts";
import { TestCluster } from "./test_cluster.ts";
import { link, ManualClock, seededRandom } from "./helpers.ts";
import type { Clock } from "../../src/runtime/clock.ts";

/** One elector on its own link; `wrap` may delay or fail what that link answers. */
function replica(
  shared: TestCluster,
  clock: ManualClock,
  identity: string,
  seed: number,
  wrap: (c: Cluster) => Cluster = (c) => c,
  own: Clock = clock,
) {
  const net = link(shared);
  const metrics = new Metrics();
  const stopped: string[] = [];
  /** Each term begun, with how many reads had been answered when it began. */
  const terms: (TermStart & { readsThen: number })[] = [];
  const elector: LeaderElector = new LeaderElector({
    cluster: wrap(net.cluster),
    clock: own,
    random: seededRandom(seed),
    log: nullLogger,
    metrics,
    identity,
    namespace: "platform-system",
    name: "platform-operator",
    onStoppedLeading: (r) => stopped.push(r),
    onStartedLeading: (_signal, term) => terms.push({ ...term, readsThen: elector.reads }),
  });
  const stop = new AbortController();
  const done = elector.run(stop.signal);
  return { elector, net, metrics, stopped, terms, stop, done };
}

const lease = (c: TestCluster) => c.peek(RESOURCES.Lease, "platform-system", "platform-operator");

Deno.test("microTime has six fractional digits", () => {
  assert.equal(microTime(Date.UTC(2026, 0, 2, 3, 4, 5, 67)), "2026-01-02T03:04:05.067000Z");
});

Deno.test("the first replica creates the lease and renews it", async () => {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  const a = replica(cluster, clock, "op-a", 1);
  await clock.advance(0);
  assert.equal(a.elector.leading, true);
  assert.equal(a.metrics.leader.get(), 1);
  const spec = lease(cluster)!.spec as LeaseSpec;
  assert.equal(spec.holderIdentity, "op-a");
  assert.equal(spec.leaseDurationSeconds, 10);
  assert.equal(spec.leaseTransitions, 0);
  assert.match(spec.renewTime!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  await clock.advance(4_000);
  assert.equal((lease(cluster)!.spec as LeaseSpec).renewTime, microTime(clock.now()));
  a.stop.abort();
  await a.done;
});

Deno.test("a renewal or release leaves managedFields to the server, so its body stays under 1 KiB", async () => {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  const sent: KubeObject[] = [];
  const capture = (c: Cluster): Cluster =>
    Object.assign(Object.create(c), {
      update: (type: ResourceType, obj: KubeObject, opts?: WriteOptions) => {
        sent.push(obj);
        return c.update(type, obj, opts);
      },
    });
  // A Deployment's Pod name, as long as one gets.
  const identity = `platform-operator-${"x".repeat(10)}-${"y".repeat(5)}`.padEnd(63, "z");
  const a = replica(cluster, clock, "op-a", 1);
  await clock.advance(0);
  a.stop.abort();
  await a.elector.release();
  await a.done;
  const b = replica(cluster, clock, identity, 2, capture);
  await clock.advance(0);
  await clock.advance(4_000);
  assert.equal(b.elector.leading, true);
  b.stop.abort();
  await b.elector.release();
  await b.done;
  assert.ok(sent.length >= 3, `${sent.length} updates`);
  for (const body of sent) {
    assert.equal(body.metadata.managedFields, undefined);
    const bytes = new TextEncoder().encode(JSON.stringify(body)).length;
    assert.ok(bytes < SMALL_BODY_BYTES, `${bytes} bytes`);
  }
  // The server kept them: every writer of the Lease is still named.
  const managers = (lease(cluster)!.metadata.managedFields as { manager: string }[]).length;
  assert.ok(managers > 0);
});

Deno.test("two replicas: one leads; the standby takes over within 15 s of the leader dying", async () => {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  const a = replica(cluster, clock, "op-a", 1);
  await clock.advance(0);
  const b = replica(cluster, clock, "op-b", 2);
  for (let i = 0; i < 300; i++) {
    await clock.advance(100);
    assert.equal(a.elector.leading && !b.elector.leading, true, "exactly one leader, and it stays");
  }
  // The leader dies: its process stops, nothing is released.
  a.stop.abort();
  a.net.mode.value = "hang";
  const died = clock.now();
  const tookOver = await clock.until(() => b.elector.leading, 15_000, 100);
  assert.ok(tookOver, "standby leads within 15 s");
  assert.ok(clock.now() - died >= 7_000, "and not before the old lease could have expired");
  const spec = lease(cluster)!.spec as LeaseSpec;
  assert.equal(spec.holderIdentity, "op-b");
  assert.equal(spec.leaseTransitions, 1);
  // Each term names the read it was taken on: the last one answered before it began.
  assert.deepEqual(a.terms, [{ takeover: false, read: 1, readsThen: 1 }]);
  assert.equal(b.terms.length, 1);
  assert.equal(b.terms[0].takeover, true);
  assert.ok(b.terms[0].read > 1, "taken on a read after the first, which saw op-a's term");
  assert.equal(b.terms[0].read, b.terms[0].readsThen);
  b.stop.abort();
  await Promise.all([a.done, b.done]);
});

Deno.test("the first read settles firstRead whether it is answered or fails", async () => {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  const failing = replica(cluster, clock, "op-a", 1, (c) => ({
    ...c,
    get: () => Promise.reject(new Error("connection refused")),
  }));
  let settled = false;
  failing.elector.firstRead.then(() => settled = true);
  await clock.advance(0);
  assert.equal(settled, true);
  assert.equal(failing.elector.reads, 0, "a failed read is not counted");
  failing.stop.abort();
  await failing.done;
  const answered = replica(cluster, clock, "op-b", 2);
  await answered.elector.firstRead;
  assert.equal(answered.elector.reads, 1);
  answered.stop.abort();
  await answered.done;
});

Deno.test("a graceful release hands over at once", async () => {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  const a = replica(cluster, clock, "op-a", 1);
  await clock.advance(0);
  const b = replica(cluster, clock, "op-b", 2);
  await clock.advance(20_000);
  a.stop.abort();
  await a.done;
  await a.elector.release();
  assert.equal(a.elector.leading, false);
  assert.deepEqual(a.stopped, ["released"]);
  assert.equal((lease(cluster)!.spec as LeaseSpec).holderIdentity, undefined);
  assert.ok(
    await clock.until(() => b.elector.leading, 2_500, 50),
    "standby leads within one retry period",
  );
  b.stop.abort();
  await b.done;
});

for (const mode of ["fail", "hang"] as const) {
  Deno.test(`a leader that cannot renew (${mode}) stops before the standby starts`, async () => {
    const clock = new ManualClock();
    const cluster = new TestCluster(clock);
    const a = replica(cluster, clock, "op-a", 1);
    await clock.advance(0);
    const b = replica(cluster, clock, "op-b", 2);
    await clock.advance(10_000);
    const term = a.elector.signal;
    a.net.mode.value = mode;
    const cut = clock.now();
    let stoppedAt = 0;
    let bAt = 0;
    // The latest moment a write sent in a's term may land (its server-side timeout).
    let boundEnd = 0;
    for (let t = 0; t < 20_000; t += 100) {
      if (a.elector.leading) {
        assert.ok(a.elector.termLeftMs > 0 && a.elector.termLeftMs <= 7_000);
        boundEnd = Math.max(boundEnd, clock.now() + a.elector.termLeftMs - cut);
      }
      await clock.advance(100);
      assert.ok(!(a.elector.leading && b.elector.leading), "never two leaders");
      if (!a.elector.leading && !stoppedAt) stoppedAt = clock.now() - cut;
      if (b.elector.leading && !bAt) bAt = clock.now() - cut;
    }
    assert.equal(term.aborted, true, "the term's signal aborted: the runner writes nothing more");
    assert.ok(stoppedAt > 0 && stoppedAt <= 7_000, `stopped after ${stoppedAt} ms`);
    assert.ok(bAt > stoppedAt && bAt <= 15_000, `standby took over after ${bAt} ms`);
    assert.match(a.stopped[0], /could not renew the lease within 7000 ms/);
    assert.ok(boundEnd <= stoppedAt, `a write of a's term may land until ${boundEnd} ms`);
    assert.ok(bAt - boundEnd >= 2_000, `its writes end ${bAt - boundEnd} ms before b leads`);
    assert.equal(a.elector.termLeftMs, 0);
    a.net.mode.value = "ok";
    await clock.advance(10_000);
    assert.equal(a.elector.leading, false, "the old leader stays standby while the new one renews");
    a.stop.abort();
    b.stop.abort();
    await b.done;
  });
}

/** Steps 100 ms at a time for `ms`; fails if both lead at once; returns when each last changed. */
async function watchLeaders(
  clock: ManualClock,
  a: { elector: LeaderElector },
  b: { elector: LeaderElector },
  ms: number,
): Promise<{ aStopped: number; bStarted: number }> {
  const start = clock.now();
  let aStopped = 0;
  let bStarted = 0;
  for (let t = 0; t < ms; t += 100) {
    await clock.advance(100);
    assert.ok(
      !(a.elector.leading && b.elector.leading),
      `two leaders at +${clock.now() - start} ms`,
    );
    if (a.elector.leading) aStopped = 0;
    else if (!aStopped) aStopped = clock.now() - start;
    if (b.elector.leading && !bStarted) bStarted = clock.now() - start;
  }
  return { aStopped, bStarted };
}

Deno.test("a renewal answered after the renew deadline does not make a leader again", async () => {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  // One renewal lands at once but its answer takes 9 s (a paused process); every Lease call after
  // it fails. Counted from the answer, the term would run 7 s past it, into the standby's.
  const slow = { armed: false };
  const a = replica(cluster, clock, "op-a", 1, (c) => ({
    ...c,
    update: async (type, obj) => {
      const written = await c.update(type, obj);
      if (slow.armed) {
        slow.armed = false;
        a.net.mode.value = "fail";
        await clock.sleep(9_000);
      }
      return written;
    },
  }));
  await clock.advance(0);
  const b = replica(cluster, clock, "op-b", 2);
  await clock.advance(5_000);
  assert.equal(a.elector.leading, true);
  slow.armed = true;
  const { aStopped, bStarted } = await watchLeaders(clock, a, b, 25_000);
  assert.ok(aStopped > 0 && aStopped <= 9_000, `a stopped at +${aStopped} ms`);
  assert.ok(bStarted > aStopped, `b took over at +${bStarted} ms`);
  assert.match(a.stopped.join("; "), /could not renew the lease within 7000 ms/);
  a.stop.abort();
  b.stop.abort();
  await b.done;
});

Deno.test("a standby times the lease from when its read answered, not from when it asked", async () => {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  const a = replica(cluster, clock, "op-a", 1);
  await clock.advance(0);
  // One read of the standby takes 9 s to reach the server; the version it returns was written
  // just before. The leader can renew until the read returns, and not after.
  const slow = { armed: false };
  const b = replica(cluster, clock, "op-b", 2, (c) => ({
    ...c,
    get: async (type, namespace, name) => {
      if (slow.armed) {
        slow.armed = false;
        await clock.sleep(9_000);
        a.net.mode.value = "fail";
      }
      return await c.get(type, namespace, name);
    },
  }));
  await clock.advance(5_000);
  assert.equal(a.elector.leading, true);
  slow.armed = true;
  const { aStopped, bStarted } = await watchLeaders(clock, a, b, 30_000);
  assert.ok(aStopped > 0, "a stopped");
  assert.ok(bStarted > aStopped, `b took over at +${bStarted} ms, a stopped at +${aStopped} ms`);
  a.stop.abort();
  b.stop.abort();
  await b.done;
});

Deno.test("stopped while its write takes the Lease: no term begins, and release gives it back", async () => {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  // The first write lands at once, its answer 1 s later; the stop comes in between.
  const a = replica(cluster, clock, "op-a", 1, (c) => ({
    ...c,
    create: async (type, obj, opts?: WriteOptions) => {
      const written = await c.create(type, obj, opts);
      await clock.sleep(1_000);
      return written;
    },
  }));
  await clock.advance(0);
  assert.equal((lease(cluster)!.spec as LeaseSpec).holderIdentity, "op-a");
  a.stop.abort();
  await clock.advance(1_000);
  await a.done;
  assert.equal(a.elector.leading, false);
  assert.deepEqual(a.terms, []);
  await a.elector.release();
  const spec = lease(cluster)!.spec as LeaseSpec;
  assert.equal(spec.holderIdentity, undefined, "released, so a standby takes it at once");
  assert.equal(spec.leaseDurationSeconds, 1);
});

/**
 * Leader `a` renews slowly (each renewal reaches the server 2.4 s after it is sent, within the renew
 * deadline), so standby `b` sees one version of the Lease for up to 4.4 s; then b's wall clock
 * steps 9 s forward (NTP, a resumed VM). Returns whether two replicas led at once.
 */
async function stepStandby(monotonic: boolean): Promise<boolean> {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  const slowRenewals = (c: Cluster): Cluster => ({
    ...c,
    update: async (type, obj, opts) => {
      await clock.sleep(2_400);
      return await c.update(type, obj, opts);
    },
  });
  const a = replica(cluster, clock, "op-a", 1, slowRenewals);
  await clock.advance(0);
  const step = { ms: 0 };
  const stepped: Clock = {
    now: () => clock.now() + step.ms,
    sleep: (ms, signal) => clock.sleep(ms, signal),
    ...(monotonic ? { monotonic: () => clock.now() } : {}),
  };
  const b = replica(cluster, clock, "op-b", 2, (c) => c, stepped);
  // b's last read saw the version of the renewal that landed at 13.2 s.
  await clock.advance(14_000);
  assert.equal(a.elector.leading && !b.elector.leading, true);
  step.ms = 9_000;
  let both = false;
  try {
    await watchLeaders(clock, a, b, 30_000);
  } catch (err) {
    if (!(err instanceof assert.AssertionError && /two leaders/.test(err.message))) throw err;
    both = true;
  }
  a.stop.abort();
  b.stop.abort();
  await clock.advance(5_000); // the renewal under way when it stopped
  await Promise.all([a.done, b.done]);
  return both;
}

Deno.test("a standby's wall clock stepping forward does not make it take a lease still held", async () => {
  assert.equal(await stepStandby(true), false, "one leader at a time");
  // The same step timed on the wall clock (as before durations took the monotonic clock): the
  // standby judges the lease expired 9 s early and takes it while the leader's term runs.
  assert.equal(await stepStandby(false), true, "two leaders on the wall clock");
});
