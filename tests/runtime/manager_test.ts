import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { MANAGED_BY, MANAGED_BY_LABEL } from "../../src/reconcile/labels.ts";
import { emptyPlan, type Plan } from "../../src/reconcile/plan.ts";
import { ApiError, type KubeObject } from "../../src/runtime/cluster.ts";
import type { ControllerSpec } from "../../src/runtime/controller_spec.ts";
import { readyz } from "../../src/runtime/health.ts";
import { createLogger } from "../../src/runtime/log.ts";
import { Manager, type ManagerOptions } from "../../src/runtime/manager.ts";
import { TestCluster, WIDGET } from "./test_cluster.ts";
import { captureLogger, link, ManualClock, seededRandom } from "./helpers.ts";

const RL = WIDGET;
const CM = RESOURCES.ConfigMap;
const FINALIZER = "test.platform-project.io/cleanup";
const OWNER = "test.platform-project.io/owner";
const images = {
  serverlessController: "s",
  kedaOperator: "k",
  kedaMetricsServer: "m",
  kedaAdmissionWebhooks: "w",
};

/** A tiny controller: each Widget gets a ConfigMap holding its spec, and a status. */
function widgets(calls: string[] = [], fail?: (key: string) => boolean): ControllerSpec {
  return {
    name: "widgets",
    primary: RL,
    watches: [{ type: CM, labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}` }],
    triggers: (_type, obj) => {
      const owner = obj.metadata.labels?.[OWNER];
      return owner ? [`${obj.metadata.namespace}/${owner}`] : [];
    },
    reconcile(key, cache, ctx): Plan | undefined {
      calls.push(key);
      if (fail?.(key)) throw new Error(`boom ${key}`);
      const [ns, name] = key.split("/");
      const rl = cache.get(RL, ns, name);
      if (!rl) return undefined;
      const childName = `${name}-cfg`;
      if (rl.metadata.deletionTimestamp) {
        const child = cache.get(CM, ns, childName);
        return {
          ...emptyPlan(),
          delete: child
            ? [{ apiVersion: "v1", kind: "ConfigMap", namespace: ns, name: childName }]
            : [],
          finalizer: child ? undefined : { remove: FINALIZER },
        };
      }
      const child: KubeObject = {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
          name: childName,
          namespace: ns,
          labels: { [MANAGED_BY_LABEL]: MANAGED_BY, [OWNER]: name },
        },
        data: { value: String((rl.spec as { value: string }).value) },
      };
      const ok = ctx.lastOutcome?.ok !== false;
      return {
        ...emptyPlan(),
        finalizer: { add: FINALIZER },
        apply: [child],
        status: { state: ok ? "Ready" : "Error" },
        events: [{
          type: "Normal",
          reason: "Configured",
          message: `value ${(rl.spec as { value: string }).value}`,
        }],
      };
    },
  };
}

function widget(name: string, value: string): KubeObject {
  return {
    apiVersion: "test.platform-project.io/v1",
    kind: "Widget",
    metadata: { name, namespace: "demo" },
    spec: { value },
  };
}

function setup(opts: Partial<ManagerOptions> = {}, seed = 7) {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  const { log, lines } = captureLogger(clock);
  const calls: string[] = [];
  const mk = (identity: string, extra: Partial<ManagerOptions> = {}, onlyKinds?: string[]) => {
    const net = link(cluster, onlyKinds);
    const m = new Manager({
      cluster: net.cluster,
      clock,
      random: seededRandom(seed),
      log: log.child({ replica: identity }),
      controllers: [widgets(calls)],
      images,
      identity,
      leaderElection: false,
      ...opts,
      ...extra,
    });
    return { m, net, done: m.start() };
  };
  return { clock, cluster, lines, calls, mk };
}

const writesExceptLease = (w: string[]) => w.filter((x) => !x.endsWith(":Lease"));

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
