/**
 * Issue 46 point 3: the RateLimit controller reads the Pods of the namespaces holding RateLimits
 * (and, for a RateLimit of the mesh's root namespace, the Pods its selector selects), never the
 * cluster's every Pod. Asserted on the requests the simulated API server received and the
 * watches it holds open.
 */
import assert from "node:assert/strict";
import { apiVersionOf, RESOURCES } from "../../src/api/resources.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { loadRateLimitReducer, rateLimitControllerFor } from "../../src/controllers/ratelimit.ts";
import { Manager } from "../../src/runtime/manager.ts";
import { images } from "../runtime/manager_fixtures.ts";
import { TEST_NAMESPACES, TestCluster } from "../runtime/test_cluster.ts";
import { captureLogger, ManualClock, seededRandom } from "../runtime/helpers.ts";

// The reducer loads with a controller's preload; reconcile is called directly here.
await loadRateLimitReducer();

const ROOT = "istio-system";
const UNRELATED = ["unrelated-0", "unrelated-1"];

function pod(namespace: string, name: string, labels: Record<string, string>): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace,
      labels,
      annotations: { "sidecar.istio.io/status": "{}" },
    },
    spec: { containers: [{ name: "app", image: "registry.example/app:1" }] },
    status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
  };
}

function rateLimit(namespace: string, name: string, app: string): KubeObject {
  return {
    apiVersion: apiVersionOf(RESOURCES.RateLimit),
    kind: "RateLimit",
    metadata: { name, namespace },
    spec: {
      selectorLabels: { app },
      local: { defaultBucket: { maxTokens: 10, tokensPerFill: 1, fillInterval: "1s" } },
    },
  };
}

/** Namespaces of the Pod lists the server answered since `from` ("*" for every namespace). */
function podLists(cluster: TestCluster, from = 0): string[] {
  return cluster.calls.slice(from).filter((c) => c.verb === "list" && c.kind === "Pod").map((c) =>
    c.namespace ?? "*"
  );
}

/** The Pod watches the server holds open: namespace ("*" for all) and label selector. */
function podWatches(cluster: TestCluster): string[] {
  return [...cluster.sim.watches].filter((w) => w.type.plural === "pods").map((w) =>
    `${w.stream.opts.namespace ?? "*"}|${w.stream.opts.labelSelector ?? ""}`
  ).sort();
}

function conditionOf(cluster: TestCluster, ns: string, name: string, type: string) {
  const rl = cluster.peek(RESOURCES.RateLimit, ns, name);
  const conds = (rl?.status as { conditions?: { type: string; status: string }[] } | undefined)
    ?.conditions;
  return conds?.find((c) => c.type === type)?.status;
}

async function started() {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock, [...TEST_NAMESPACES, ROOT, "team", ...UNRELATED]);
  for (const ns of UNRELATED) cluster.put(RESOURCES.Pod, pod(ns, "bystander", { app: "other" }));
  const m = new Manager({
    cluster,
    clock,
    random: seededRandom(46),
    log: captureLogger(clock).log,
    controllers: [rateLimitControllerFor({ meshRootNamespace: ROOT })],
    images,
    identity: "op-0",
    leaderElection: false,
  });
  const done = m.start();
  await clock.advance(5_000);
  return { clock, cluster, m, done };
}

Deno.test("Pods are listed only in namespaces that hold a RateLimit, as they come and go", async () => {
  const { clock, cluster, m, done } = await started();
  assert.equal(m.status.ready, true, "ready without listing any Pod");
  assert.deepEqual(podLists(cluster), [], "no RateLimit: no Pod listed");
  assert.deepEqual(podWatches(cluster), []);

  // A Pod that was there before its namespace held a RateLimit is seen once it does.
  cluster.put(RESOURCES.Pod, pod("team", "web-0", { app: "web" }));
  const before = cluster.calls.length;
  await cluster.create(RESOURCES.RateLimit, rateLimit("team", "web", "web"));
  await clock.advance(5_000);
  assert.deepEqual(podLists(cluster, before), ["team"], "one list, of the RateLimit's namespace");
  assert.deepEqual(podWatches(cluster), ["team|"]);
  assert.equal(conditionOf(cluster, "team", "web", "Enforced"), "True", "its Pod was read");
  assert.equal(m.cache.get(RESOURCES.Pod, "unrelated-0", "bystander"), undefined);

  // A Pod created later in that namespace is seen by the watch.
  await cluster.create(RESOURCES.Pod, pod("team", "web-1", { app: "web" }));
  await clock.advance(2_000);
  assert.ok(m.cache.get(RESOURCES.Pod, "team", "web-1"), "a later Pod is seen");

  // A namespace that gains a RateLimit: its Pods, made before, are listed then.
  const second = cluster.calls.length;
  await cluster.create(RESOURCES.RateLimit, rateLimit("unrelated-1", "other", "other"));
  await clock.advance(5_000);
  assert.deepEqual(podLists(cluster, second), ["unrelated-1"]);
  assert.equal(conditionOf(cluster, "unrelated-1", "other", "Enforced"), "True");
  assert.equal(m.cache.get(RESOURCES.Pod, "unrelated-0", "bystander"), undefined);

  // The last RateLimit of a namespace gone: its Pod watch closes and its Pods are forgotten.
  await cluster.delete(RESOURCES.RateLimit, "unrelated-1", "other");
  await clock.advance(5_000);
  assert.equal(cluster.peek(RESOURCES.RateLimit, "unrelated-1", "other"), undefined);
  assert.deepEqual(podWatches(cluster), ["team|"]);
  assert.equal(m.cache.get(RESOURCES.Pod, "unrelated-1", "bystander"), undefined);
  assert.equal(podLists(cluster).includes("*"), false, "never a list of every Pod");

  await m.stop();
  await done;
});

Deno.test("a RateLimit of the root namespace lists the Pods its selector selects, everywhere", async () => {
  const { clock, cluster, m, done } = await started();
  cluster.put(RESOURCES.Pod, pod("unrelated-0", "gw-0", { app: "gw" }));
  await cluster.create(RESOURCES.RateLimit, rateLimit(ROOT, "gateways", "gw"));
  await clock.advance(5_000);
  assert.deepEqual(podWatches(cluster), ["*|app=gw", `${ROOT}|`]);
  assert.ok(m.cache.get(RESOURCES.Pod, "unrelated-0", "gw-0"), "a selected Pod elsewhere is read");
  assert.equal(m.cache.get(RESOURCES.Pod, "unrelated-0", "bystander"), undefined, "others not");
  await m.stop();
  await done;
});
