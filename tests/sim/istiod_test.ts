/**
 * The simulated istiod and its proxies (sim/istiod.ts) and what one operator process learns of
 * them (sim/istiod_feed.ts): proxies connect, take pushes and answer them as Envoy does (a filter
 * the model refuses is rejected and the last accepted config kept), syncz and dumps read with the
 * operator's own readers (src/api/istiod.ts), and the feed publishes ProxyStatus objects with the
 * real poller's rules (src/kube/istiod_source.ts), with the same figures (src/api/istiod.ts).
 */
import assert from "node:assert/strict";
import { filterLimits } from "../../src/reconcile/ratelimit/input.ts";
import {
  heldLimitsOf,
  ISTIOD_STATUS_NAME,
  PROXY_STATUS,
  proxyStatusOf,
  pushNumber,
  verdictOf,
} from "../../src/api/istiod.ts";
import { RESOURCES } from "../../src/api/resources.ts";
import { LOCAL_RATELIMIT_FILTER } from "../../src/dataplane/mod.ts";
import { DEFAULT_FOLLOW_UP_MS, DEFAULT_PERIOD_MS } from "../../src/api/istiod.ts";
import { STAT_PREFIX } from "../../src/reconcile/ratelimit/render.ts";
import { LocalSource } from "../../src/runtime/mod.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { brokenFilter } from "../../sim/chaos.ts";
import { NO_FAULTS } from "../../sim/faults.ts";
import { ProxyStatusFeed } from "../../sim/istiod_feed.ts";
import { Simulation } from "../../sim/simulation.ts";
import { demoWorkload } from "../../sim/workload.ts";
import { parseScenario } from "../../sim/scenario/format.ts";
import { runScenario } from "../../sim/scenario/run.ts";
import { neverAsksIstiod } from "./mutants.ts";

const RATE_LIMIT: KubeObject = {
  apiVersion: "gateway.platform-project.io/v1alpha1",
  kind: "RateLimit",
  metadata: { name: "rl", namespace: "demo" },
  spec: {
    selectorLabels: { app: "httpbin" },
    local: { defaultBucket: { maxTokens: 4, tokensPerFill: 2, fillInterval: "10s" } },
  },
};

/** A booted simulation without faults with the demo workload and, at 5 s, RATE_LIMIT. */
async function demo(): Promise<Simulation> {
  const sim = new Simulation({ seed: 3, faults: NO_FAULTS });
  await sim.boot();
  for (const obj of demoWorkload()) {
    const type = sim.cluster.store.types.byKind(obj.apiVersion, obj.kind)!;
    await sim.drive(sim.user.apply(type, obj, { fieldManager: "kubectl", force: true }));
  }
  await sim.runUntil(5_000);
  await sim.drive(
    sim.user.apply(RESOURCES.RateLimit, RATE_LIMIT, { fieldManager: "kubectl", force: true }),
  );
  await sim.runUntil(30_000);
  return sim;
}

function demoProxy(sim: Simulation) {
  const p = sim.istiod.proxies.find((x) => x.pod.namespace === "demo");
  assert.ok(p, "no proxy for the demo Pod");
  return p;
}

function condition(sim: Simulation, type: string): string {
  const rl = sim.cluster.store.get(RESOURCES.RateLimit, "demo", "rl");
  const c = (rl?.status as { conditions?: { type: string; status: string; reason: string }[] })
    ?.conditions?.find((x) => x.type === type);
  return c ? `${c.status}/${c.reason}` : "(none)";
}

Deno.test("istiod: a sidecar takes the operator's filter, its dump shows the limits, and the RateLimit is Accepted", async () => {
  const sim = await demo();
  const p = demoProxy(sim);
  assert.equal(p.standing, "accepted");
  const filter = sim.cluster.store.get(RESOURCES.EnvoyFilter, "demo", "rl")!;
  assert.equal(p.limits, sim.istiod.limitsOf(filter, p));
  const [sync] = sim.istiod.syncz().filter((x) => x.id === p.id);
  assert.deepEqual(verdictOf(sync), { state: "Acked" });
  assert.equal(sync.type, "sidecar");
  // istiod's nonce shape: the push counter reads back.
  assert.ok((pushNumber(sync.listeners.acked) ?? 0) >= 1, sync.listeners.acked);
  const held = heldLimitsOf(sim.istiod.dump(p.id), LOCAL_RATELIMIT_FILTER, STAT_PREFIX);
  // With the digest the filter's route patch carries (its route metadata, merged as istiod does).
  const digest = filterLimits(filter)?.digest;
  assert.equal(typeof digest, "string");
  assert.deepEqual(held, {
    limits: [{
      shadow: false,
      buckets: [{ maxTokens: 4, tokensPerFill: 2, fillInterval: "10s" }],
      digest,
    }],
    unreadable: 0,
  });
  assert.equal(condition(sim, "Accepted"), "True/Accepted");
  const gateway = sim.istiod.proxies.find((x) => x.pod.namespace === "mesh-system");
  assert.equal(gateway?.standing, "accepted");
  assert.equal(gateway?.context, "GATEWAY");
});

Deno.test("istiod: a broken filter of another team is rejected, the proxy keeps its last config, and fixing it brings Accepted back", async () => {
  const sim = await demo();
  const p = demoProxy(sim);
  const before = p.limits;
  const other = brokenFilter("other", false);
  await sim.drive(
    sim.user.apply(RESOURCES.EnvoyFilter, other, { fieldManager: "team", force: true }),
  );
  await sim.runUntil(50_000);
  assert.equal(p.standing, "rejected");
  assert.match(
    p.lastError,
    /virtualInbound: EnvoyFilter demo\/other: .*actions: must have at least 1/,
  );
  assert.equal(p.limits, before, "the proxy keeps what it accepted last");
  assert.equal(condition(sim, "Accepted"), "False/ProxyRejected");
  assert.equal(condition(sim, "Ready"), "True/Applied");
  await sim.drive(sim.user.delete(RESOURCES.EnvoyFilter, "demo", "other"));
  await sim.runUntil(70_000);
  assert.equal(p.standing, "accepted");
  assert.equal(condition(sim, "Accepted"), "True/Accepted");
});

Deno.test("istiod: a proxy held back is not connected and not in syncz; cleared, it connects and takes the push", async () => {
  const sim = await demo();
  const p = demoProxy(sim);
  sim.istiod.holdBack({ namespace: "demo", name: "httpbin" });
  assert.equal(p.standing, "notConnected");
  assert.equal(sim.istiod.syncz().some((x) => x.id === p.id), false);
  assert.equal(sim.istiod.dump(p.id), undefined);
  await sim.runUntil(60_000);
  assert.equal(condition(sim, "Accepted"), "Unknown/Pending");
  sim.istiod.clear({ namespace: "demo", name: "httpbin" });
  await sim.runUntil(90_000);
  assert.equal(p.standing, "accepted");
  assert.equal(condition(sim, "Accepted"), "True/Accepted");
});

Deno.test("istiod: a proxy told to reject a push rejects only that many", async () => {
  const sim = await demo();
  const p = demoProxy(sim);
  sim.istiod.rejectPushes({ namespace: "demo" }, 1);
  const bigger = { ...RATE_LIMIT, spec: { ...RATE_LIMIT.spec as object, enforce: false } };
  await sim.drive(
    sim.user.apply(RESOURCES.RateLimit, bigger, { fieldManager: "kubectl", force: true }),
  );
  await sim.runUntil(50_000);
  assert.equal(p.standing, "rejected");
  assert.match(p.lastError, /injected fault/);
  assert.equal(condition(sim, "Accepted"), "False/ProxyRejected");
  // The next push (the limit edited back) is taken.
  await sim.drive(
    sim.user.apply(RESOURCES.RateLimit, RATE_LIMIT, { fieldManager: "kubectl", force: true }),
  );
  await sim.runUntil(70_000);
  assert.equal(p.standing, "accepted");
  assert.equal(condition(sim, "Accepted"), "True/Accepted");
});

Deno.test("istiod: the feed confirms a reading one follow-up later, says why when istiod is unreachable, and asks again a second later", async () => {
  const sim = await demo();
  const p = demoProxy(sim);
  const source = new LocalSource(PROXY_STATUS);
  const feed = new ProxyStatusFeed({
    istiod: sim.istiod,
    source,
    clock: sim.clock.view(),
    namespace: "platform-system",
    wants: () => true,
    token: () => 0,
  });
  const status = () =>
    proxyStatusOf(source.list().items.find((o) => o.metadata.name === p.pod.name));
  feed.start();
  await sim.driver.runFor(0);
  const first = status()?.held;
  assert.ok(first && "limits" in first, JSON.stringify(first));
  assert.equal(first.confirmed, false);
  await sim.driver.runFor(DEFAULT_FOLLOW_UP_MS);
  const second = status()?.held;
  assert.ok(second && "limits" in second && second.confirmed, JSON.stringify(second));
  sim.istiod.unreachable(undefined);
  await sim.driver.runFor(DEFAULT_PERIOD_MS);
  const istiod = source.list().items.find((o) => o.metadata.name === ISTIOD_STATUS_NAME);
  assert.deepEqual(istiod?.status, {
    reachable: false,
    reason: "Unreachable",
    message: "dial tcp 10.96.0.15:15014: connect: connection refused",
  });
  assert.ok(status(), "the proxies stay as last seen");
  // As the real poller: asked again a second after the first failure (not a period later).
  sim.istiod.reachable();
  await sim.driver.runFor(DEFAULT_FOLLOW_UP_MS);
  const again = source.list().items.find((o) => o.metadata.name === ISTIOD_STATUS_NAME);
  assert.deepEqual(again?.status, { reachable: true, proxies: 2 });
  feed.stop();
});

Deno.test("istiod: a dump shows a push still queued while syncz shows the last one acknowledged", async () => {
  const sim = await demo();
  const p = demoProxy(sim);
  const read = () =>
    JSON.stringify(
      heldLimitsOf(sim.istiod.dump(p.id), LOCAL_RATELIMIT_FILTER, STAT_PREFIX).limits,
    );
  const before = read();
  assert.equal(read(), p.limits);
  const more = {
    ...RATE_LIMIT,
    spec: {
      selectorLabels: { app: "httpbin" },
      local: { defaultBucket: { maxTokens: 5, tokensPerFill: 2, fillInterval: "10s" } },
    },
  };
  await sim.drive(
    sim.user.apply(RESOURCES.RateLimit, more, { fieldManager: "kubectl", force: true }),
  );
  let ahead = false;
  for (let ms = 0; ms < 5_000 && !ahead; ms++) {
    await sim.driver.runFor(1);
    const [sync] = sim.istiod.syncz().filter((x) => x.id === p.id);
    ahead = read() !== before && verdictOf(sync).state === "Acked" && p.limits === before;
  }
  assert.ok(ahead, "no moment where the dump was ahead of the acknowledged push");
  await sim.runUntil(60_000);
  assert.equal(p.limits, read());
  assert.notEqual(p.limits, before);
  assert.equal(condition(sim, "Accepted"), "True/Accepted");
});

Deno.test("istiod: a filter deleted and made again at generation 1 with another content is pushed", async () => {
  const rendered = (await demo()).cluster.store.get(RESOURCES.EnvoyFilter, "demo", "rl")!;
  const team = (maxTokens: number): KubeObject => ({
    apiVersion: rendered.apiVersion,
    kind: rendered.kind,
    metadata: { name: "team", namespace: "demo" },
    spec: JSON.parse(
      JSON.stringify(rendered.spec).replaceAll('"max_tokens":4', `"max_tokens":${maxTokens}`),
    ),
  });
  const sim = new Simulation({ seed: 3, faults: NO_FAULTS });
  await sim.boot();
  for (const obj of [...demoWorkload(), team(4)]) {
    const type = sim.cluster.store.types.byKind(obj.apiVersion, obj.kind)!;
    await sim.drive(sim.user.apply(type, obj, { fieldManager: "kubectl", force: true }));
  }
  await sim.runUntil(20_000);
  const p = demoProxy(sim);
  const first = sim.cluster.store.get(RESOURCES.EnvoyFilter, "demo", "team")!;
  assert.equal(p.limits, sim.istiod.limitsOf(first, p));
  await sim.drive(sim.user.delete(RESOURCES.EnvoyFilter, "demo", "team"));
  await sim.drive(
    sim.user.apply(RESOURCES.EnvoyFilter, team(7), { fieldManager: "kubectl", force: true }),
  );
  const again = sim.cluster.store.get(RESOURCES.EnvoyFilter, "demo", "team")!;
  assert.equal(again.metadata.generation, first.metadata.generation);
  await sim.runUntil(40_000);
  assert.notEqual(p.limits, sim.istiod.limitsOf(first, p));
  assert.equal(p.limits, sim.istiod.limitsOf(again, p));
});

Deno.test("istiod: a scenario ends with every RateLimit whose proxies hold its filter Accepted", async () => {
  const file = new URL("../../sim/scenarios/ratelimit-workload.yaml", import.meta.url);
  const sc = parseScenario(await Deno.readTextFile(file), "ratelimit-workload.yaml");
  assert.ok((await runScenario(sc)).ok);
  const broken = await runScenario(sc, { operator: neverAsksIstiod().operator });
  assert.equal(broken.ok, false);
  assert.match(
    broken.failure ?? "",
    /^liveness: RateLimit demo\/httpbin: every proxy it reaches holds its limits, expected Accepted=True, got .*Accepted=Unknown\/IstiodNotAsked/,
  );
});
