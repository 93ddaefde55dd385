/**
 * Reading the global rate limit engine back (src/kube/engine_source.ts).
 *
 * With real engines (envoyproxy/ratelimit built by tools/ratelimit-engine) and Debian's Redis on
 * loopback, both engines run as the operator runs them (REDIS_HEALTH_CHECK_ACTIVE_CONNECTION=true)
 * and stand for two Pods: the poller reads each one's `/healthcheck` and `/rlconfig`, and
 * publishes what a real engine says. Redis stopped: each engine reads Unreachable within a bound;
 * Redis back: Reachable within a bound (both times measured and printed); an edit of the engines'
 * configuration is read after a nudge within a second; at rest nothing is published; an engine
 * killed reads as not answering, with why, and is asked again after a backoff.
 *
 * On a simulated API server: the engine's Pods found by their labels in the engine's namespace,
 * kept with their IP and Ready condition, a list that fails said so, a change seen at once.
 */
import assert from "node:assert/strict";
import {
  ENGINE_STATUS,
  ENGINES_STATUS_NAME,
  enginesStatusOf,
  type EngineStatusFields,
  engineStatusOf,
  parseRlconfig,
} from "../../src/api/engine_status.ts";
import { GLOBAL_ENGINE_LABELS } from "../../src/api/global_engine.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { RESOURCES } from "../../src/api/resources.ts";
import {
  ENGINE_POD_PROJECTION,
  ENGINE_POD_SELECTOR,
  EnginePods,
  type EnginePodsView,
  EnginePoller,
  engineUrlsOf,
  MAX_POD_BACKOFF_MS,
  PODS_UNKNOWN,
} from "../../src/kube/engine_source.ts";
import {
  ApiError,
  createLogger,
  LocalSource,
  Metrics,
  systemClock,
  systemRandom,
} from "../../src/runtime/mod.ts";
import {
  type Engine,
  type EngineDomain,
  FileConfig,
  type RedisServer,
  startEngine,
  startRedis,
} from "../../tools/ratelimit-engine/mod.ts";
import { ManualClock } from "../runtime/helpers.ts";
import { TestCluster } from "../runtime/test_cluster.ts";
import { loadRateLimitReducer, rateLimitControllerFor } from "../../src/controllers/ratelimit.ts";
import { engineDomainOfFilter } from "../../src/reconcile/ratelimit/engine_config.ts";
import type { Condition } from "../../src/api/common.ts";
import type { Plan } from "../../src/reconcile/plan.ts";
import { cacheOf, CTX, MESH_CRD } from "../controllers/ratelimit_cache_fixtures.ts";
import { rateLimit } from "../reconcile/ratelimit_fixtures.ts";

// The reducer loads with a controller's preload; reconcile is called directly here.
await loadRateLimitReducer();

const quiet = createLogger({ clock: systemClock, sink: () => {} });

/** A Pod of the engine's Deployment as the API server gives it. */
function enginePod(
  name: string,
  o: { ready?: boolean; ip?: string; deleting?: boolean; phase?: string } = {},
): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: "platform-ratelimit",
      labels: { ...GLOBAL_ENGINE_LABELS, "pod-template-hash": "abc" },
      annotations: { "kubectl.kubernetes.io/restartedAt": "x" },
      ...(o.deleting ? { deletionTimestamp: "2026-11-28T00:00:00Z" } : {}),
    },
    spec: { containers: [{ name: "ratelimit", image: "ratelimit" }] },
    status: {
      phase: o.phase ?? "Running",
      ...(o.ip === undefined ? {} : { podIP: o.ip, podIPs: [{ ip: o.ip }] }),
      conditions: [
        { type: "Initialized", status: "True" },
        { type: "Ready", status: o.ready === false ? "False" : "True" },
      ],
    },
  };
}

/** A domain as the operator gives it: `rule_<i>` first. */
function domain(name: string, perMinute: number): EngineDomain {
  return {
    domain: `team-a/${name}`,
    descriptors: [
      {
        key: "rule",
        value: "0",
        descriptors: [{ key: "client", rateLimit: { unit: "MINUTE", requestsPerUnit: perMinute } }],
      },
      { key: "rule", value: "default", rateLimit: { unit: "HOUR", requestsPerUnit: 1000 } },
    ],
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `read` until `done` or `ms` passed; the time it took, or throws with the last reading. */
async function within<T>(ms: number, read: () => T, done: (v: T) => boolean): Promise<number> {
  const start = Date.now();
  let v = read();
  while (!done(v)) {
    if (Date.now() - start > ms) throw new Error(`not within ${ms} ms: ${JSON.stringify(v)}`);
    await sleep(50);
    v = read();
  }
  return Date.now() - start;
}

Deno.test({
  name: "poller: real engines and Redis: Reachable, loaded, Redis down and back, edits, a kill",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "engine-source-" });
    let redis: RedisServer | undefined;
    const engines: Engine[] = [];
    const ac = new AbortController();
    let running: Promise<void> | undefined;
    try {
      redis = await startRedis(dir);
      const config = await FileConfig.create(dir, [domain("api", 100)]);
      for (const name of ["a", "b"]) {
        engines.push(
          await startEngine({
            name,
            dir,
            redis: redis.addr,
            config: config.source(),
            env: { REDIS_HEALTH_CHECK_ACTIVE_CONNECTION: "true" },
          }),
        );
      }
      // Each Pod stands for one engine: its IP is loopback, its ports the engine's.
      const byPod = new Map(engines.map((e) => [`ratelimit-engine-${e.name}`, e]));
      let pods: EnginePodsView = {
        state: "listed",
        pods: [...byPod.keys()].map((n) => enginePod(n, { ip: "127.0.0.1" })),
      };
      const source = new LocalSource(ENGINE_STATUS);
      const metrics = new Metrics();
      const poller = new EnginePoller({
        pods: () => pods,
        source,
        clock: systemClock,
        log: quiet,
        metrics,
        periodMs: 300,
        followUpMs: 100,
        timeoutMs: 1000,
        urlsOf: (_ip, pod) => {
          const e = byPod.get(pod.metadata.name)!;
          return { health: `${e.http}/healthcheck`, rlconfig: `${e.debug}/rlconfig` };
        },
      });
      const status = (pod: string): EngineStatusFields | undefined =>
        engineStatusOf(source.list().items.find((o) => o.metadata.name === pod));

      // One round: both Ready, reaching Redis, holding exactly what their /rlconfig says.
      assert.deepEqual(await poller.round(), { ok: true });
      const rlconfig = await engines[0].rlconfig();
      const parsed = parseRlconfig(rlconfig);
      assert.ok(parsed.ok);
      assert.deepEqual(Object.keys(parsed.domains), ["team-a/api"]);
      for (const pod of byPod.keys()) {
        const s = status(pod)!;
        assert.equal(s.ready, true);
        assert.equal(s.redis, "Reachable");
        assert.equal(s.error, undefined);
        assert.deepEqual(s.loaded, parsed.domains);
        assert.match(s.since, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      }
      assert.deepEqual(
        enginesStatusOf(source.list().items.find((o) => o.metadata.name === ENGINES_STATUS_NAME)),
        { listed: true, pods: 2 },
      );
      const metricsText = metrics.render();
      assert.match(
        metricsText,
        /platform_operator_engine_pods\{ready="true",redis="Reachable"\} 2/,
      );
      assert.match(
        metricsText,
        /platform_operator_engine_pods\{ready="false",redis="Unreachable"\} 0/,
      );
      assert.match(
        metricsText,
        /platform_operator_engine_domains_loaded\{pod="ratelimit-engine-a"\} 1/,
      );

      // At rest: the same answers publish nothing new (no event wakes a RateLimit).
      const version = source.version;
      await poller.round();
      await poller.round();
      assert.equal(source.version, version, "nothing published at rest");

      running = poller.run(ac.signal);

      // Redis stopped: each engine's /healthcheck turns 500 once its pool has no connection.
      await redis.stop();
      const down = await within(
        30_000,
        () => [...byPod.keys()].map((p) => status(p)?.redis),
        (v) => v.every((r) => r === "Unreachable"),
      );
      console.log(`Redis stopped: both engines read Unreachable after ${down} ms`);
      // The configuration is still read: it is Redis the engines lack, not their config. Not a
      // change of domains alone: every RateLimit with a global part must look again.
      assert.deepEqual(status("ratelimit-engine-a")!.loaded, parsed.domains);
      assert.equal(status("ratelimit-engine-a")!.changed, undefined);
      assert.match(
        metrics.render(),
        /platform_operator_engine_pods\{ready="true",redis="Unreachable"\} 2/,
      );

      // Redis back: Reachable again.
      await redis.start();
      const up = await within(
        20_000,
        () => [...byPod.keys()].map((p) => status(p)?.redis),
        (v) => v.every((r) => r === "Reachable"),
      );
      console.log(`Redis back: both engines read Reachable after ${up} ms`);

      // An edit: the engines load it within milliseconds; a nudge reads it within a second.
      await config.write([domain("api", 7), domain("web.v2", 3)]);
      poller.nudge();
      const seen = await within(
        2_000,
        () => Object.keys(status("ratelimit-engine-b")?.loaded ?? {}),
        (v) => v.length === 2,
      );
      console.log(`an edit read back ${seen} ms after the nudge`);
      // Only these domains changed: only their RateLimits need to look again.
      assert.deepEqual(status("ratelimit-engine-b")!.changed, ["team-a/api", "team-a/web.v2"]);
      assert.deepEqual(status("ratelimit-engine-b")!.loaded!["team-a/api"], [
        "team-a/api.rule_0.client: unit=MINUTE requests_per_unit=7, shadow_mode: false, quota_mode: false",
        "team-a/api.rule_default: unit=HOUR requests_per_unit=1000, shadow_mode: false, quota_mode: false",
      ]);

      // A Pod that is not Ready is still asked: it says why it is not.
      pods = {
        state: "listed",
        pods: [
          enginePod("ratelimit-engine-a", { ip: "127.0.0.1", ready: false }),
          enginePod("ratelimit-engine-b", { ip: "127.0.0.1" }),
        ],
      };
      poller.podsChanged();
      await within(2_000, () => status("ratelimit-engine-a")?.ready, (r) => r === false);
      assert.equal(status("ratelimit-engine-a")!.redis, "Reachable");

      // An engine killed: no answer, said with the URL; its Redis state is not known.
      await engines[0].stop();
      await within(
        5_000,
        () => status("ratelimit-engine-a")?.error?.reason,
        (r) => r === "Unreachable",
      );
      const dead = status("ratelimit-engine-a")!;
      assert.equal(dead.redis, "Unknown");
      assert.match(dead.error!.message, /^GET http:\/\/127\.0\.0\.1:\d+\/(healthcheck|rlconfig): /);
      assert.equal(dead.loaded, undefined);
      assert.equal(status("ratelimit-engine-b")!.redis, "Reachable");

      // A Pod gone, or terminating, is no longer published.
      pods = {
        state: "listed",
        pods: [
          enginePod("ratelimit-engine-a", { ip: "127.0.0.1", deleting: true }),
          enginePod("ratelimit-engine-b", { ip: "127.0.0.1" }),
        ],
      };
      poller.podsChanged();
      await within(2_000, () => status("ratelimit-engine-a"), (s) => s === undefined);
    } finally {
      ac.abort();
      await running;
      for (const e of engines) await e.stop();
      await redis?.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name:
    "end to end: a real engine given the operator's filter, read back, is Enforced; Redis lost, an edit not yet held, then held",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "engine-status-e2e-" });
    let redis: RedisServer | undefined;
    let engine: Engine | undefined;
    try {
      const controller = rateLimitControllerFor({
        meshRootNamespace: "istio-system",
        engineStatus: true,
      });
      const global = (requests: number) => ({
        rules: [
          { path: "/orders", limit: { requests, unit: "Second" } },
          { perClient: { header: "X-Api-Key" }, limit: { requests: 1000, unit: "Hour" } },
        ],
        default: { limit: { requests: 10000, unit: "Day" } },
      });
      let rl = rateLimit({ global: global(5) });
      const source = new LocalSource(ENGINE_STATUS);
      const conditionOf = (plan: Plan) =>
        (plan.status as { conditions: Condition[] }).conditions.find((c) =>
          c.type === "GlobalEnforced"
        )!;
      const reconcile = (filter?: KubeObject) =>
        controller.reconcile(
          "demo/httpbin",
          cacheOf([MESH_CRD, rl, ...(filter ? [filter] : []), ...source.list().items]),
          CTX,
        )!;
      // The engine's Pod, as the poller reads it.
      redis = await startRedis(dir);
      const config = await FileConfig.create(dir, []);
      engine = await startEngine({
        name: "a",
        dir,
        redis: redis.addr,
        config: config.source(),
        env: { REDIS_HEALTH_CHECK_ACTIVE_CONNECTION: "true" },
      });
      const e = engine;
      const poller = new EnginePoller({
        pods: () => ({
          state: "listed",
          pods: [enginePod("ratelimit-engine-a", { ip: "127.0.0.1" })],
        }),
        source,
        clock: systemClock,
        log: quiet,
        urlsOf: () => ({ health: `${e.http}/healthcheck`, rlconfig: `${e.debug}/rlconfig` }),
      });
      /** Rounds until the condition for `f` has `reason`; the time it took. */
      const until = async (f: KubeObject, reason: string, ms: number) => {
        const start = Date.now();
        for (;;) {
          await poller.round();
          const c = conditionOf(reconcile(f));
          if (c.reason === reason) return Date.now() - start;
          assert.ok(Date.now() - start < ms, `not ${reason} within ${ms} ms: ${c.message}`);
          await sleep(100);
        }
      };
      await poller.round();
      // The engine Ready: the operator renders the global part; the engine holds nothing yet.
      const first = reconcile();
      const filter = first.apply.find((o) => o.kind === "EnvoyFilter")!;
      assert.equal(conditionOf(first).reason, "DomainNotLoaded");
      // The engine given exactly what the filter carries (what the xDS server sends it).
      await config.write([engineDomainOfFilter(filter)! as EngineDomain]);
      await until(filter, "Enforced", 5_000);
      const held = conditionOf(reconcile(filter));
      assert.deepEqual([held.status, held.reason], ["True", "Enforced"]);
      // Redis stopped: the engine says so within seconds, and so does the condition.
      await redis.stop();
      const lost = await until(filter, "RedisUnreachable", 30_000);
      console.log(`Redis stopped: GlobalEnforced RedisUnreachable after ${lost} ms`);
      await redis.start();
      const back = await until(filter, "Enforced", 20_000);
      console.log(`Redis back: GlobalEnforced Enforced after ${back} ms`);
      // An edit: the new filter carries other lines; the engine still holds the old ones.
      rl = rateLimit({ global: global(7), generation: 2 });
      const edited = reconcile(filter);
      const next = edited.apply.find((o) => o.kind === "EnvoyFilter")!;
      const pending = conditionOf(reconcile(next));
      assert.deepEqual([pending.status, pending.reason], ["Unknown", "DomainNotLoaded"]);
      assert.match(pending.message, /holding another version of it: ratelimit-engine-a/);
      await config.write([engineDomainOfFilter(next)! as EngineDomain]);
      const loaded = await until(next, "Enforced", 5_000);
      console.log(`the edit held and read back ${loaded} ms after the engine was given it`);
    } finally {
      await engine?.stop();
      await redis?.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test("poller: a Pod that does not answer is asked again after a backoff, at once when it changes", async () => {
  const clock = new ManualClock();
  const asked: string[] = [];
  const fakeFetch = (input: string | URL | Request): Promise<Response> => {
    asked.push(String(input));
    return Promise.reject(new TypeError("connection refused"));
  };
  let pods: EnginePodsView = {
    state: "listed",
    pods: [enginePod("e-1", { ip: "10.0.0.1" }), enginePod("e-2")],
  };
  const source = new LocalSource(ENGINE_STATUS);
  const poller = new EnginePoller({
    pods: () => pods,
    source,
    clock,
    log: quiet,
    periodMs: 5_000,
    fetch: fakeFetch as typeof fetch,
  });
  const status = (pod: string) =>
    engineStatusOf(source.list().items.find((o) => o.metadata.name === pod));
  assert.deepEqual(await poller.round(), { ok: false });
  // By Pod IP, on the engine's ports.
  assert.deepEqual(asked.sort(), [
    "http://10.0.0.1:6070/rlconfig",
    "http://10.0.0.1:8080/healthcheck",
  ]);
  assert.deepEqual(engineUrlsOf("10.0.0.1"), {
    health: "http://10.0.0.1:8080/healthcheck",
    rlconfig: "http://10.0.0.1:6070/rlconfig",
  });
  assert.equal(status("e-1")!.error!.reason, "Unreachable");
  assert.match(status("e-1")!.error!.message, /connection refused/);
  // No IP yet: said, nothing asked.
  assert.deepEqual(status("e-2"), {
    ready: true,
    redis: "Unknown",
    error: { reason: "NoAddress", message: "the Pod has no IP yet" },
    since: status("e-2")!.since,
  });
  // Backing off: 5 s, then 10 s, 20 s ... up to MAX_POD_BACKOFF_MS.
  const roundsAskingIn = async (ms: number, step = 1_000) => {
    let rounds = 0;
    for (let t = 0; t < ms; t += step) {
      await clock.advance(step);
      const before = asked.length;
      await poller.round();
      if (asked.length > before) rounds++;
    }
    return rounds;
  };
  assert.equal(await roundsAskingIn(4_000), 0);
  assert.equal(await roundsAskingIn(1_000), 1); // at 5 s
  assert.equal(await roundsAskingIn(9_000), 0);
  assert.equal(await roundsAskingIn(1_000), 1); // 10 s later
  assert.equal(await roundsAskingIn(200_000, 10_000) <= 200_000 / 40_000 + 1, true);
  // Once at the bound, asked once each MAX_POD_BACKOFF_MS.
  assert.equal(await roundsAskingIn(MAX_POD_BACKOFF_MS * 3, 10_000), 3);
  // The Pod changed (Ready now false): asked at once.
  pods = { state: "listed", pods: [enginePod("e-1", { ip: "10.0.0.1", ready: false })] };
  const before = asked.length;
  await poller.round();
  assert.equal(asked.length, before + 2);
  assert.equal(status("e-2"), undefined, "a Pod no longer listed is not published");
  // Listing fails: said in the engine's own status; what was read stays.
  pods = { state: "failed", reason: PODS_UNKNOWN, message: "list pods: forbidden" };
  assert.deepEqual(await poller.round(), { ok: false });
  assert.deepEqual(
    enginesStatusOf(source.list().items.find((o) => o.metadata.name === ENGINES_STATUS_NAME)),
    { listed: false, reason: PODS_UNKNOWN, message: "list pods: forbidden" },
  );
  assert.ok(status("e-1"));
  // Not listed yet: nothing said, no gauge series (not a false zero); listed with no Pod: zeros.
  const fresh = new LocalSource(ENGINE_STATUS);
  const metrics = new Metrics();
  let view: EnginePodsView = { state: "listing" };
  const early = new EnginePoller({ pods: () => view, source: fresh, clock, log: quiet, metrics });
  await early.round();
  assert.equal(fresh.list().items.length, 0);
  assert.doesNotMatch(metrics.render(), /platform_operator_engine_pods\{/);
  view = { state: "listed", pods: [] };
  await early.round();
  assert.match(
    metrics.render(),
    /platform_operator_engine_pods\{ready="true",redis="Reachable"\} 0/,
  );
});

Deno.test("poller: a nudge brings a round at once and settling rounds a follow-up apart", async () => {
  const clock = new ManualClock();
  let rounds = 0;
  const poller = new EnginePoller({
    pods: () => {
      rounds++;
      return { state: "listed", pods: [] };
    },
    source: new LocalSource(ENGINE_STATUS),
    clock,
    log: quiet,
    periodMs: 5_000,
    followUpMs: 1_000,
  });
  const ac = new AbortController();
  const running = poller.run(ac.signal);
  await clock.advance(1);
  assert.equal(rounds, 1);
  await clock.advance(4_000);
  assert.equal(rounds, 1, "a period apart at rest");
  await clock.advance(1_000);
  assert.equal(rounds, 2);
  poller.nudge();
  await clock.advance(1);
  assert.equal(rounds, 3, "at once after a nudge");
  await clock.advance(3_000);
  assert.equal(rounds, 6, "three settling rounds a second apart");
  await clock.advance(4_000);
  assert.equal(rounds, 6);
  await clock.advance(1_000);
  assert.equal(rounds, 7, "then a period apart again");
  poller.podsChanged();
  await clock.advance(1);
  assert.equal(rounds, 8, "at once when the Pods change");
  ac.abort();
  await clock.advance(1);
  await running;
});

Deno.test("poller: a change of the `changed` token nudges it within a follow-up", async () => {
  const clock = new ManualClock();
  let rounds = 0;
  let filters: readonly unknown[] = [];
  const poller = new EnginePoller({
    pods: () => {
      rounds++;
      return { state: "listed", pods: [] };
    },
    source: new LocalSource(ENGINE_STATUS),
    clock,
    log: quiet,
    periodMs: 5_000,
    followUpMs: 1_000,
    changed: () => filters,
  });
  const ac = new AbortController();
  const running = poller.run(ac.signal);
  await clock.advance(1);
  assert.equal(rounds, 1);
  await clock.advance(2_500);
  assert.equal(rounds, 1, "the same token: nothing");
  filters = [{}];
  await clock.advance(1_000);
  assert.equal(rounds, 2, "a new token: a round within a follow-up");
  await clock.advance(3_000);
  assert.equal(rounds, 5, "then the settling rounds");
  ac.abort();
  await clock.advance(1);
  await running;
});

Deno.test("poller: a round that throws is logged and polling goes on", async () => {
  const clock = new ManualClock();
  let rounds = 0;
  const lines: string[] = [];
  const log = createLogger({ clock, sink: (l) => lines.push(l) });
  const poller = new EnginePoller({
    pods: () => {
      if (++rounds === 1) throw new Error("boom");
      return { state: "listed", pods: [] };
    },
    source: new LocalSource(ENGINE_STATUS),
    clock,
    log,
    periodMs: 5_000,
  });
  const ac = new AbortController();
  const running = poller.run(ac.signal);
  await clock.advance(1);
  await clock.advance(5_000);
  assert.equal(rounds, 2);
  assert.ok(lines.some((l) => l.includes("reading the engine back failed") && l.includes("boom")));
  ac.abort();
  await clock.advance(1);
  await running;
});

Deno.test("pods: listed by their labels in the engine's namespace, kept small, failures said", async () => {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock, ["platform-ratelimit", "other"]);
  let changes = 0;
  cluster.failNext("list", new ApiError(403, "Forbidden", "pods is forbidden"));
  const pods = new EnginePods({
    cluster,
    clock,
    random: systemRandom,
    log: quiet,
    onChange: () => changes++,
  });
  assert.deepEqual(pods.view(), { state: "listing" });
  const ac = new AbortController();
  const running = pods.run(ac.signal);
  try {
    await clock.advance(10);
    const failed = pods.view();
    assert.equal(failed.state, "failed");
    assert.ok(failed.state === "failed" && failed.reason === PODS_UNKNOWN);
    assert.match(
      failed.state === "failed" ? failed.message : "",
      /engine's Pods \(app\.kubernetes\.io\/managed-by=platform-operator,app\.kubernetes\.io\/name=ratelimit-engine in namespace platform-ratelimit\) are not known: .*forbidden/i,
    );
    cluster.put(RESOURCES.Pod, enginePod("ratelimit-engine-1", { ip: "10.0.0.1" }));
    // Not the engine's: other labels, another namespace.
    cluster.put(RESOURCES.Pod, {
      ...enginePod("web"),
      metadata: { name: "web", namespace: "platform-ratelimit", labels: { app: "web" } },
    });
    cluster.put(RESOURCES.Pod, {
      ...enginePod("x"),
      metadata: { ...enginePod("x").metadata, namespace: "other" },
    });
    await clock.until(() => pods.view().state === "listed", 60_000);
    const view = pods.view();
    assert.ok(view.state === "listed");
    assert.deepEqual(view.pods.map((p) => p.metadata.name), ["ratelimit-engine-1"]);
    // Kept: what reading it needs, no more.
    const kept = view.pods[0];
    assert.deepEqual(kept.status, {
      phase: "Running",
      podIP: "10.0.0.1",
      conditions: [{ type: "Ready", status: "True" }],
    });
    assert.equal(kept.spec, undefined);
    assert.equal(kept.metadata.annotations, undefined);
    assert.ok(changes > 0);
    const seen = changes;
    cluster.put(RESOURCES.Pod, enginePod("ratelimit-engine-1", { ip: "10.0.0.1", ready: false }));
    await clock.advance(10);
    assert.ok(changes > seen, "a change is told");
    const notReady = pods.view();
    assert.ok(
      notReady.state === "listed" &&
        (notReady.pods[0].status as Record<string, unknown>).conditions === undefined,
    );
  } finally {
    ac.abort();
    await clock.advance(1);
    await running;
  }
  assert.equal(
    ENGINE_POD_SELECTOR,
    "app.kubernetes.io/managed-by=platform-operator,app.kubernetes.io/name=ratelimit-engine",
  );
  assert.equal(
    (ENGINE_POD_PROJECTION.keep(enginePod("p")).status as Record<string, unknown>).podIP,
    undefined,
  );
});
