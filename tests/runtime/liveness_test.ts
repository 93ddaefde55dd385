/**
 * An optional watch whose CRD is missing is synced but not live; "no objects" from it means "not
 * known". A CRD appearing (watched, or applied by the operator) ends its backoff at once.
 */
import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { MANAGED_BY, MANAGED_BY_LABEL } from "../../src/reconcile/labels.ts";
import { emptyPlan } from "../../src/reconcile/plan.ts";
import { Cache, CacheStore, Watcher } from "../../src/runtime/cache/mod.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { ControllerSpec } from "../../src/runtime/controller_spec.ts";
import { Manager } from "../../src/runtime/manager.ts";
import { images } from "./manager_fixtures.ts";
import { openCrd, TestCluster, WIDGET } from "./test_cluster.ts";
import { captureLogger, ManualClock, seededRandom } from "./helpers.ts";

const FN = RESOURCES.Function;
const CRD = RESOURCES.CustomResourceDefinition;
const RL = WIDGET;
const FN_CRD = "functions.serverless.platform-project.io";

/** The Function CRD, as the operator labels what it installs. */
function fnCrd(): KubeObject {
  return openCrd(FN, { [MANAGED_BY_LABEL]: MANAGED_BY });
}

function fn(name: string): KubeObject {
  return {
    apiVersion: "serverless.platform-project.io/v1alpha2",
    kind: "Function",
    metadata: { name, namespace: "u" },
  };
}

function widget(name: string): KubeObject {
  return {
    apiVersion: "test.platform-project.io/v1",
    kind: "Widget",
    metadata: { name, namespace: "u" },
  };
}

const fnLists = (c: TestCluster) =>
  c.calls.filter((x) => x.verb === "list" && x.kind === "Function").length;

Deno.test("store: a missing type is synced and empty but not live; a completed list makes it live", () => {
  const store = new CacheStore(FN);
  assert.equal(store.live, false);
  store.handle({ type: "init" });
  store.handle({ type: "init-apply", object: fn("a") });
  store.handle({ type: "init-done" });
  assert.deepEqual([store.synced, store.live, store.size], [true, true, 1]);
  store.handle({ type: "init" });
  const changes = store.handle({ type: "missing" });
  assert.deepEqual(changes.map((c) => c.type), ["delete"]);
  assert.deepEqual([store.synced, store.live, store.size], [true, false, 0]);
  const cache = new Cache();
  cache.store(FN).handle({ type: "missing" });
  assert.equal(cache.isLive(FN), false);
  assert.throws(() => cache.isLive(RL), /not watched/);
});

Deno.test("watcher: kick ends the backoff of a missing CRD at once and resets it", async () => {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  const { log } = captureLogger(clock);
  const store = new CacheStore(FN);
  const watcher = new Watcher(
    { cluster, clock, random: seededRandom(), log, type: FN, optional: true },
    (ev) => store.handle(ev),
  );
  cluster.unserve(FN);
  const stop = new AbortController();
  const done = watcher.run(stop.signal);
  await clock.advance(120_000); // the backoff has grown to its 30 s cap
  assert.equal(store.live, false);
  cluster.serve(FN);
  cluster.put(FN, fn("f"));
  const before = fnLists(cluster);
  watcher.kick();
  await clock.advance(0);
  assert.equal(fnLists(cluster), before + 1, "listed again without waiting");
  assert.equal(store.live, true);
  assert.ok(store.get("u", "f"));
  stop.abort();
  await clock.flush();
  await done;
});

/** A controller that reads Functions optionally and counts its reconciles. */
function reader(calls: string[], watchCrds: boolean, applyCrd = false): ControllerSpec {
  return {
    name: "reader",
    primary: RL,
    watches: [
      { type: FN, optional: true },
      ...(watchCrds ? [{ type: CRD, labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}` }] : []),
    ],
    reconcile(key, cache) {
      calls.push(`${key}:${cache.isLive?.(FN) ? "live" : "unknown"}`);
      return { ...emptyPlan(), apply: applyCrd ? [fnCrd()] : [] };
    },
  };
}

function start(cluster: TestCluster, clock: ManualClock, controller: ControllerSpec): Manager {
  const m = new Manager({
    cluster,
    clock,
    random: seededRandom(3),
    log: captureLogger(clock).log,
    controllers: [controller],
    images,
    identity: "op-0",
    leaderElection: false,
  });
  void m.start();
  return m;
}

Deno.test("manager: a watched CRD appearing wakes the optional watch at once; its primaries are reconciled again", async () => {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  cluster.unserve(FN);
  cluster.put(RL, widget("r"));
  const calls: string[] = [];
  const m = start(cluster, clock, reader(calls, true));
  await clock.advance(120_000);
  assert.equal(m.cache.isLive?.(FN), false);
  assert.deepEqual(calls, ["u/r:unknown"]);
  // The CRD is installed and served: the watch of Functions must not sleep out its backoff.
  cluster.put(CRD, fnCrd());
  cluster.put(FN, fn("f"));
  await clock.advance(50);
  assert.equal(m.cache.isLive?.(FN), true, "live within 50 ms of the CRD appearing");
  assert.ok(m.cache.get(FN, "u", "f"));
  assert.deepEqual(calls, ["u/r:unknown", "u/r:live"], "requeued when the watch went live");
  await m.stop();
});

Deno.test("manager: the operator's own apply of a CRD wakes the optional watch of its type", async () => {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  cluster.unserve(FN);
  const calls: string[] = [];
  const m = start(cluster, clock, reader(calls, false, true));
  await clock.advance(120_000);
  assert.equal(m.cache.isLive?.(FN), false);
  // The CRDs are not watched here: only the successful apply can tell the watch to look again.
  cluster.put(RL, widget("r"));
  await clock.advance(50);
  assert.ok(cluster.peek(CRD, undefined, FN_CRD), "the controller applied the CRD");
  assert.equal(m.cache.isLive?.(FN), true, "live within 50 ms of the apply");
  await m.stop();
});
