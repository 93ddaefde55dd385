/**
 * What creating RateLimits costs the operator, counted on the simulated cluster without faults:
 * one reconcile each (its own writes, whether their answer or the watch shows them first, do not
 * wake it again: `settlesInOnePass`), two writes each (its EnvoyFilter and its status) and the two
 * Events docs/ratelimit-status.md shows for a new limit (Applied, Enforced).
 */
import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { ControllerSpec } from "../../src/runtime/mod.ts";
import { allControllersFor } from "../../src/controllers/registry.ts";
import { DEFAULT_MESH } from "../../src/dataplane/mod.ts";
import { NO_FAULTS } from "../../sim/faults.ts";
import { Simulation } from "../../sim/simulation.ts";
import { podObject, rateLimitObject } from "../../bench/fixtures.ts";

const N = 20;
const NAMESPACE = "created";

/** The operator as the cluster bench runs it: no istiod asked, no global engine. */
function controllers(settle: boolean): ControllerSpec[] {
  return allControllersFor({ meshRootNamespace: DEFAULT_MESH.rootNamespace }).map((c) =>
    c.name === "ratelimit" ? { ...c, settlesInOnePass: settle } : c
  );
}

interface Counts {
  reconciles: number;
  /** Writes of objects, Events not counted. */
  writes: number;
  events: string[];
  ready: number;
  /** True when every Event was written after the last object write. */
  eventsAfterWrites: boolean;
}

/** Creates N RateLimits on their Pods (sidecars injected) and counts what the operator did. */
async function create(settle: boolean, seed: number): Promise<Counts> {
  const sim = new Simulation({
    seed,
    faults: NO_FAULTS,
    operator: { controllers: controllers(settle) },
  });
  await sim.boot();
  const ns: KubeObject = {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: NAMESPACE, labels: { "istio-injection": "enabled" } },
  };
  await sim.drive(sim.user.create(RESOURCES.Namespace, ns));
  for (let i = 0; i < N; i++) {
    await sim.drive(sim.user.create(RESOURCES.Pod, podObject(i, { namespace: NAMESPACE })));
  }
  await sim.runUntil(60_000);
  const metrics = sim.operator.manager!.metrics;
  const reconciles = () =>
    metrics.reconcileTotal.get({ controller: "ratelimit", result: "success" });
  const since = sim.cluster.log.records.length;
  const before = reconciles();
  // Created at once, as a burst: the reconciles' writes first, their Events after.
  await sim.drive(Promise.all(
    Array.from(
      { length: N },
      (_, i) =>
        sim.user.create(
          RESOURCES.RateLimit,
          rateLimitObject({ i, rules: 2, namespace: NAMESPACE }),
        ),
    ),
  ));
  await sim.runUntil(3 * 60_000);
  const events = sim.cluster.store.objects(RESOURCES.Event)
    .filter((e) => (e.involvedObject as { kind?: string }).kind === "RateLimit")
    .map((e) => `${e.type} ${e.reason}`).sort();
  const ready = sim.cluster.store.objects(RESOURCES.RateLimit)
    .filter((o) => (o.status as { state?: string } | undefined)?.state === "Ready").length;
  await sim.drive(sim.operator.stop());
  const all = sim.cluster.log.operatorWritesSince(since);
  const writes = all.filter((r) => r.kind !== "Event");
  const eventsFirst = all.findIndex((r) => r.kind === "Event");
  const objectsLast = all.findLastIndex((r) => r.kind !== "Event");
  return {
    reconciles: reconciles() - before,
    writes: writes.length,
    events,
    ready,
    eventsAfterWrites: eventsFirst > objectsLast,
  };
}

for (const seed of [1, 2, 3]) {
  Deno.test(`creating ${N} RateLimits: one reconcile, two writes and two Events each (seed ${seed})`, async () => {
    const c = await create(true, seed);
    assert.equal(c.ready, N, "every RateLimit Ready");
    assert.equal(c.reconciles, N, "one reconcile a RateLimit");
    assert.equal(c.writes, 2 * N, "its EnvoyFilter and its status");
    const each = ["Normal Applied", "Normal Enforced"];
    assert.deepEqual(c.events, each.flatMap((e) => Array(N).fill(e)));
    assert.ok(c.eventsAfterWrites, "Events wait until the reconciles' writes are done");
  });
}

Deno.test("without settlesInOnePass each RateLimit is reconciled twice: its own writes wake it", async () => {
  const c = await create(false, 1);
  assert.equal(c.ready, N);
  assert.equal(c.reconciles, 2 * N);
  assert.equal(c.writes, 2 * N, "the second pass writes nothing");
});
