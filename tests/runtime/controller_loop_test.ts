import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { emptyPlan } from "../../src/reconcile/plan.ts";
import { MANAGED_BY, MANAGED_BY_LABEL } from "../../src/reconcile/labels.ts";
import { Cache } from "../../src/runtime/cache/mod.ts";
import { type ControllerSpec, planWatches } from "../../src/runtime/controller_spec.ts";
import { type Logger, nullLogger } from "../../src/runtime/log.ts";
import { Metrics } from "../../src/runtime/metrics.ts";
import { ControllerLoop } from "../../src/runtime/controller_loop.ts";
import { splitKey } from "../../src/api/object.ts";
import { Runner } from "../../src/runtime/runner.ts";
import { ApiError } from "../../src/runtime/cluster.ts";
import { TestCluster } from "./test_cluster.ts";
import { captureLogger, ManualClock, seededRandom } from "./helpers.ts";

const base = { reconcile: () => undefined };
const a: ControllerSpec = {
  ...base,
  name: "a",
  primary: RESOURCES.Serverless,
  watches: [{ type: RESOURCES.Deployment, labelSelector: "m=1" }, {
    type: RESOURCES.Function,
    optional: true,
  }],
};
const b: ControllerSpec = {
  ...base,
  name: "b",
  primary: RESOURCES.Scaler,
  watches: [{ type: RESOURCES.Deployment, labelSelector: "m=1", optional: true }, {
    type: RESOURCES.Serverless,
  }],
};

/** A controller loop of `spec` on the test cluster, with its own runner. */
function loopOf(
  spec: ControllerSpec,
  cache: Cache,
  clock: ManualClock,
  more: { log?: Logger; scopesReady?: (key: string) => boolean; cluster?: TestCluster } = {},
): ControllerLoop {
  const metrics = new Metrics();
  const { cluster = new TestCluster(clock), ...rest } = more;
  const runner = new Runner({
    cluster,
    cache,
    clock,
    random: seededRandom(),
    log: nullLogger,
    metrics,
    controller: "a",
    identity: "x",
  });
  return new ControllerLoop({
    spec,
    cache,
    runner,
    clock,
    log: nullLogger,
    metrics,
    images: {} as never,
    namespace: "platform-system",
    ...rest,
  });
}

Deno.test("planWatches shares one watch per (type, selector); required wins over optional", () => {
  const plan = planWatches([a, b]).map((w) => `${w.type.kind}|${w.selector ?? ""}|${w.required}`);
  assert.deepEqual(plan, [
    "Serverless||true",
    "Deployment|m=1|true",
    "Function||false",
    "Scaler||true",
  ]);
});

Deno.test("splitKey undoes objectKey, with or without a namespace", () => {
  assert.deepEqual(splitKey("ns/x"), { namespace: "ns", name: "x" });
  assert.deepEqual(splitKey("x"), { namespace: undefined, name: "x" });
});

Deno.test("keysFor: the primary's own key, triggers of the new and the old object, unread types ignored", () => {
  const clock = new ManualClock();
  const cache = new Cache();
  const spec: ControllerSpec = {
    ...a,
    watches: [{
      ...a.watches[0],
      trigger: (obj) => obj.metadata.labels?.owner ? [`ns/${obj.metadata.labels.owner}`] : [],
    }, ...a.watches.slice(1)],
    reconcile: () => emptyPlan(),
  };
  const loop = loopOf(spec, cache, clock);
  const dep = (owner: string) => ({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "d", namespace: "ns", labels: { owner } },
  });
  const sl = {
    apiVersion: "operator.platform-project.io/v1alpha1",
    kind: "Serverless",
    metadata: { name: "s", namespace: "ns" },
  };
  assert.deepEqual(loop.keysFor(RESOURCES.Serverless, { type: "apply", object: sl }), ["ns/s"]);
  assert.deepEqual(
    loop.keysFor(RESOURCES.Deployment, { type: "apply", object: dep("new"), old: dep("old") }),
    [
      "ns/new",
      "ns/old",
    ],
  );
  assert.deepEqual(loop.keysFor(RESOURCES.Pod, { type: "delete", object: dep("x") }), []);
});

Deno.test("a key that arrives before the controller's required watches synced is not reconciled", async () => {
  const clock = new ManualClock();
  const cache = new Cache();
  const calls: string[] = [];
  const spec: ControllerSpec = {
    ...a,
    reconcile: (key) => {
      calls.push(key);
      return undefined;
    },
  };
  const loop = loopOf(spec, cache, clock);
  const listed = (type: typeof RESOURCES.Serverless, selector?: string) => {
    cache.store(type, selector).handle({ type: "init" });
    cache.store(type, selector).handle({ type: "init-done" });
  };
  const signal = new AbortController().signal;
  listed(RESOURCES.Serverless);
  cache.store(RESOURCES.Function).handle({ type: "missing" }); // optional: never waited for
  assert.equal(loop.synced, false);
  assert.deepEqual(await loop.reconcile("ns/s", signal), { type: "retrySoon", afterMs: 1_000 });
  assert.deepEqual(calls, [], "the required Deployment watch has not listed yet");
  listed(RESOURCES.Deployment, "m=1");
  assert.equal(loop.synced, true);
  await loop.reconcile("ns/s", signal);
  assert.deepEqual(calls, ["ns/s"]);
});

Deno.test("preload: awaited once before the first reconcile, shared by reconciles at once, a failure retried", async () => {
  const clock = new ManualClock();
  const cache = new Cache();
  const events: string[] = [];
  let loaded = false;
  let fail = true;
  let release = () => {};
  const spec: ControllerSpec = {
    ...a,
    preload: async () => {
      events.push("preload");
      if (fail) {
        fail = false;
        throw new Error("import failed");
      }
      await new Promise<void>((resolve) => release = resolve);
      loaded = true;
    },
    reconcile: (key) => {
      events.push(loaded ? `reconcile ${key}` : `reconcile ${key} before preload`);
      return undefined;
    },
  };
  const loop = loopOf(spec, cache, clock);
  for (const [type, selector] of [[RESOURCES.Serverless], [RESOURCES.Deployment, "m=1"]] as const) {
    cache.store(type, selector).handle({ type: "init" });
    cache.store(type, selector).handle({ type: "init-done" });
  }
  const signal = new AbortController().signal;
  assert.deepEqual(await loop.reconcile("ns/s", signal), { type: "retry" });
  assert.deepEqual(events, ["preload"], "a failed preload is retried, not reconciled past");
  const first = loop.reconcile("ns/s", signal);
  const second = loop.reconcile("ns/t", signal);
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(events, ["preload", "preload"], "one preload for both, and no reconcile yet");
  release();
  await Promise.all([first, second]);
  await loop.reconcile("ns/u", signal);
  assert.deepEqual(events, [
    "preload",
    "preload",
    "reconcile ns/s",
    "reconcile ns/t",
    "reconcile ns/u",
  ]);
});

Deno.test("keys postponed for scoped watches are logged once for the run, then once when they go on", async () => {
  const clock = new ManualClock();
  const cache = new Cache();
  const calls: string[] = [];
  let listed = false;
  const { log, lines } = captureLogger(clock);
  const spec: ControllerSpec = {
    ...a,
    watches: [],
    reconcile: (key) => {
      calls.push(key);
      return undefined;
    },
  };
  const loop = loopOf(spec, cache, clock, { log, scopesReady: () => listed });
  cache.store(RESOURCES.Serverless).handle({ type: "init" });
  cache.store(RESOURCES.Serverless).handle({ type: "init-done" });
  const signal = new AbortController().signal;
  for (let i = 0; i < 1_000; i++) {
    assert.deepEqual(await loop.reconcile(`ns/s-${i}`, signal), { type: "done" });
  }
  assert.deepEqual(calls, [], "none reconciled before its scopes listed");
  listed = true;
  await loop.reconcile("ns/s-0", signal);
  await loop.reconcile("ns/s-1", signal);
  assert.deepEqual(calls, ["ns/s-0", "ns/s-1"]);
  const said = lines.filter((l) => String(l.msg).startsWith("scoped watches"));
  assert.deepEqual(said.map((l) => [l.msg, l.key ?? l.postponed]), [
    ["scoped watches not listed yet; reconciles postponed until they have", "ns/s-0"],
    ["scoped watches listed: postponed reconciles go on", 1_000],
  ]);
});

Deno.test("a controller reads only the types it watches: another type, cached for another controller, is an error", async () => {
  const clock = new ManualClock();
  const cache = new Cache();
  const read: string[] = [];
  const spec: ControllerSpec = {
    ...a,
    reconcile: (_key, c) => {
      read.push(`${c.list(RESOURCES.Deployment).length} Deployments`);
      // The Scalers are cached (controller b watches them), but not for this controller: a term
      // begins it once its own watches have listed, not theirs.
      read.push(`${c.list(RESOURCES.Scaler).length} Scalers`);
      return undefined;
    },
  };
  const { log, lines } = captureLogger(clock);
  const loop = loopOf(spec, cache, clock, { log });
  for (
    const [type, selector] of [[RESOURCES.Serverless], [RESOURCES.Deployment, "m=1"], [
      RESOURCES.Scaler,
    ]] as const
  ) {
    cache.store(type, selector).handle({ type: "init" });
    cache.store(type, selector).handle({ type: "init-done" });
  }
  const result = await loop.reconcile("ns/s", new AbortController().signal);
  assert.notEqual(result.type, "done");
  assert.deepEqual(read, ["0 Deployments"]);
  assert.ok(
    lines.some((l) =>
      /scalers\.operator\.platform-project\.io is read by controller a but not among its watches/
        .test(String(l.error))
    ),
    JSON.stringify(lines),
  );
});

Deno.test("a primary that is gone: its Plan's deletes alone are run, and only of what the operator made", async () => {
  const clock = new ManualClock();
  const cache = new Cache();
  const cluster = new TestCluster(clock);
  const configMap = (name: string, labels: Record<string, string>) => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: "ns", labels },
  });
  cluster.put(RESOURCES.ConfigMap, configMap("ours", { [MANAGED_BY_LABEL]: MANAGED_BY }));
  cluster.put(RESOURCES.ConfigMap, configMap("theirs", {}));
  const ref = (name: string) => ({ apiVersion: "v1", kind: "ConfigMap", namespace: "ns", name });
  let deletes = [ref("ours")];
  const spec: ControllerSpec = {
    ...a,
    // A Plan for a primary not in the cache: everything but its deletes is ignored.
    reconcile: () => ({
      ...emptyPlan(),
      apply: [configMap("applied", {})],
      delete: deletes,
      status: { state: "Ready" },
    }),
  };
  const loop = loopOf(spec, cache, clock, { cluster });
  for (const [type, selector] of [[RESOURCES.Serverless], [RESOURCES.Deployment, "m=1"]] as const) {
    cache.store(type, selector).handle({ type: "init" });
    cache.store(type, selector).handle({ type: "init-done" });
  }
  const signal = new AbortController().signal;
  assert.deepEqual(await loop.reconcile("ns/gone", signal), { type: "done" });
  assert.equal(cluster.peek(RESOURCES.ConfigMap, "ns", "ours"), undefined, "deleted");
  assert.equal(cluster.peek(RESOURCES.ConfigMap, "ns", "applied"), undefined, "nothing applied");
  // What the operator did not make is never deleted, whatever a Plan says.
  deletes = [ref("theirs")];
  assert.deepEqual(await loop.reconcile("ns/gone", signal), { type: "terminal" });
  assert.ok(cluster.peek(RESOURCES.ConfigMap, "ns", "theirs"));
  // Gone already (the garbage collector was first): done; an API server error: tried again.
  cluster.put(RESOURCES.ConfigMap, configMap("ours", { [MANAGED_BY_LABEL]: MANAGED_BY }));
  deletes = [ref("ours")];
  cluster.failNext("delete", new ApiError(404, "NotFound", 'configmaps "ours" not found'));
  assert.deepEqual(await loop.reconcile("ns/gone", signal), { type: "done" });
  cluster.failNext("delete", new ApiError(500, "InternalError", "etcd timeout"));
  assert.deepEqual(await loop.reconcile("ns/gone", signal), { type: "retry" });
  assert.deepEqual(await loop.reconcile("ns/gone", signal), { type: "done" });
  assert.equal(cluster.peek(RESOURCES.ConfigMap, "ns", "ours"), undefined);
});
