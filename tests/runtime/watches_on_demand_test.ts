/**
 * Watches opened on demand (ControllerSpec.watchesNeedPrimary): a module controller's watches
 * besides its primary are open only while a module object exists. Idle, the operator holds 6
 * watch streams on the API server instead of 25.
 */
import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { ALL_CONTROLLERS } from "../../src/controllers/registry.ts";
import { MANAGED_BY, MANAGED_BY_LABEL } from "../../src/reconcile/labels.ts";

import {
  type ControllerSpec,
  planWatches,
  preloadControllers,
} from "../../src/runtime/controller_spec.ts";
import { allControllers } from "./manager_fixtures.ts";
import { Cache, WatchSet } from "../../src/runtime/cache/mod.ts";
import { ApiError } from "../../src/runtime/cluster.ts";
import { nullLogger } from "../../src/runtime/log.ts";
import { Metrics } from "../../src/runtime/metrics.ts";
import { TestCluster } from "./test_cluster.ts";
import { ManualClock, seededRandom } from "./helpers.ts";
import { pod, rateLimit, withProxy } from "../reconcile/ratelimit_fixtures.ts";

const SL = RESOURCES.Serverless;
const NS = "platform-system";
const name = (w: { type: { kind: string }; selector?: string }) =>
  `${w.type.kind}${w.selector ? "|managed" : ""}`;

Deno.test("planWatches: a watch only lazy controllers read, as a secondary, opens on demand", () => {
  const plan = planWatches(ALL_CONTROLLERS);
  const always = plan.filter((w) => !w.wakers && !w.scoped).map(name).sort();
  assert.deepEqual(always, [
    "CustomResourceDefinition",
    "EnvoyFilter",
    "RateLimit",
    "Scaler",
    "Serverless",
  ]);
  assert.deepEqual(plan.filter((w) => w.scoped).map(name), ["Pod"], "Pods where RateLimits are");
  const by = (kind: string) =>
    plan.find((w) => w.type.kind === kind && w.wakers)?.wakers?.map((t) => t.kind);
  assert.deepEqual(by("Deployment"), ["Serverless", "Scaler"], "shared: either module wakes it");
  assert.deepEqual(by("Function"), ["Serverless"]);
  assert.deepEqual(by("ScaledObject"), ["Scaler"]);
  assert.equal(plan.length, 25);
  // A controller that needs a watch always keeps it open, whoever else reads it on demand.
  const eager: ControllerSpec = {
    name: "eager",
    primary: RESOURCES.RateLimit,
    watches: [{ type: RESOURCES.Function, optional: true }],
    reconcile: () => undefined,
  };
  const shared = planWatches([...ALL_CONTROLLERS, eager]);
  assert.equal(shared.find((w) => w.type.kind === "Function")?.wakers, undefined);
});

Deno.test("a module's watches open when its object appears and close, forgetting, when it is gone", async () => {
  await preloadControllers(ALL_CONTROLLERS); // before the manual clock runs
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  // A user's Deployment carrying the operator's label but no module's: cached only while watched.
  const userDeployment = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "mine", namespace: "users", labels: { [MANAGED_BY_LABEL]: MANAGED_BY } },
    spec: {},
  };
  cluster.put(RESOURCES.Deployment, userDeployment);
  const m = allControllers(cluster, clock);
  const done = m.start();
  await clock.advance(10_000);
  assert.equal(
    cluster.watchCount,
    5,
    "idle: the primaries and the RateLimit controller's (Pods only where RateLimits are)",
  );
  assert.equal(m.status.ready, true, "ready without the module watches");
  assert.deepEqual(m.cache.list(RESOURCES.Deployment), [], "a closed watch caches nothing");

  cluster.put(SL, {
    apiVersion: "operator.platform-project.io/v1alpha1",
    kind: "Serverless",
    metadata: { name: "default", namespace: NS },
    spec: {},
  });
  await clock.advance(60_000);
  const serverlessWatches = planWatches(ALL_CONTROLLERS)
    .filter((w) => w.wakers?.some((t) => t.kind === "Serverless")).length;
  assert.equal(cluster.watchCount, 5 + serverlessWatches);
  assert.ok(
    m.cache.list(RESOURCES.Deployment).some((d) => d.metadata.name === "mine"),
    "open again, the watch listed the user's Deployment",
  );
  const state = (cluster.peek(SL, NS, "default")?.status as { state?: string })?.state;
  assert.equal(state, "Ready", "the module installed on watches opened on demand");

  await cluster.delete(SL, NS, "default");
  await clock.advance(120_000);
  assert.equal(cluster.peek(SL, NS, "default"), undefined, "deleted once its objects were");
  assert.equal(cluster.watchCount, 5, "the last module object gone, its watches closed");
  assert.deepEqual(m.cache.list(RESOURCES.Deployment), [], "and what they cached forgotten");
  assert.ok(cluster.peek(RESOURCES.Deployment, "users", "mine"), "the user's Deployment stays");
  await m.stop();
  await done;
});

Deno.test("a namespace's Pods are listed as soon as a page of the RateLimit list names it, not after the last page", async () => {
  await preloadControllers(ALL_CONTROLLERS);
  const clock = new ManualClock();
  const namespaces = ["rl-a", "rl-b", "rl-c"];
  const cluster = new TestCluster(clock, [...namespaces, NS]);
  for (const ns of namespaces) {
    cluster.put(RESOURCES.Pod, withProxy(pod("web", { app: "web" }, ns), "sidecar"));
    cluster.put(RESOURCES.RateLimit, rateLimit({ name: "web", namespace: ns }));
  }
  // Every list request, in the order it is sent: RateLimits one a page.
  const lists: string[] = [];
  const list = cluster.list.bind(cluster);
  cluster.list = (type, opts) => {
    if (type.kind === "RateLimit" || type.kind === "Pod") {
      lists.push(`${type.kind} ${opts?.namespace ?? "*"}${opts?.continue ? " (next page)" : ""}`);
    }
    return list(type, opts);
  };
  const m = allControllers(cluster, clock, { pageSize: 1 });
  const done = m.start();
  await clock.advance(10_000);
  const lastPage = lists.lastIndexOf("RateLimit * (next page)");
  assert.ok(lastPage > 0, `the RateLimits came in pages: ${lists.join(", ")}`);
  const firstPods = lists.indexOf("Pod rl-a");
  assert.ok(
    firstPods >= 0 && firstPods < lastPage,
    `rl-a's Pods listed before the RateLimit list's last page: ${lists.join(", ")}`,
  );
  for (const ns of namespaces) {
    const rl = cluster.peek(RESOURCES.RateLimit, ns, "web");
    assert.equal((rl?.status as { state?: string })?.state, "Ready", `${ns}: reconciled`);
  }
  assert.deepEqual(
    m.cache.list(RESOURCES.Pod).map((p) => p.metadata.namespace).sort(),
    namespaces,
    "the Pods of each namespace with a RateLimit cached, each once",
  );
  await m.stop();
  await done;
});

Deno.test("a module watch closed before it listed again does not hold a new term back", async () => {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  cluster.put(SL, {
    apiVersion: "operator.platform-project.io/v1alpha1",
    kind: "Serverless",
    metadata: { name: "default", namespace: NS },
    spec: {},
  });
  let told = 0;
  const watches = new WatchSet({
    cluster,
    clock,
    random: seededRandom(),
    log: nullLogger,
    metrics: new Metrics(),
    cache: new Cache(),
    controllers: ALL_CONTROLLERS,
    namespace: NS,
    onChange: () => {},
    onLiveness: () => {},
    onListed: () => told++,
  });
  const stop = new AbortController();
  const tasks = watches.run(stop.signal);
  await clock.advance(10_000);
  const ready = () => watches.readyFor(() => true);
  assert.ok(ready(), "listed, the module's watches too");
  // A new term asks for new lists, and the module's watches cannot list (sweep seed 5407105: lists
  // failing under faults while a replica took the lead).
  const onDemand = new Set(
    planWatches(ALL_CONTROLLERS).filter((w) => w.wakers).map((w) =>
      `${w.type.kind}|${w.selector ?? ""}`
    ),
  );
  const list = cluster.list.bind(cluster);
  cluster.list = (type, opts) =>
    onDemand.has(`${type.kind}|${opts?.labelSelector ?? ""}`)
      ? Promise.reject(new ApiError(500, "InternalError", "injected"))
      : list(type, opts);
  watches.relist();
  await clock.advance(5_000);
  assert.equal(ready(), false, "the module's watches have not listed again");
  assert.ok(
    watches.readyFor((type) => type.kind === "RateLimit"),
    "a controller that reads none of their types need not wait",
  );
  // The Serverless goes: its watches close, and with them what the term waited for. The manager
  // begins a term when told a store listed; a close must tell it too, or nothing else ever will.
  const before = told;
  cluster.remove(SL, NS, "default");
  await clock.advance(1_000);
  assert.ok(ready(), "nothing left to wait for");
  assert.ok(told > before, "and the manager is told so");
  stop.abort();
  await Promise.all(tasks);
});
