/**
 * The swarm's process-level faults (sim/chaos.ts) do what they say: a crash lands right after a Plan
 * write, a lost Lease moves leadership to the standby, and what someone else deleted of the
 * operator's objects is made again; the operator keeps every invariant through all of them.
 */
import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import type { LeaseSpec } from "../../src/runtime/lease.ts";
import { isPlanWrite } from "../../sim/chaos.ts";
import type { FaultConfig } from "../../sim/faults.ts";
import { LEASE_NAME, OPERATOR_NAMESPACE } from "../../sim/operator.ts";
import { faultsFor } from "../../sim/fault_choice.ts";
import { Simulation } from "../../sim/simulation.ts";
import { SIM_EPOCH } from "../../sim/clock.ts";
import { runSeed } from "../../sim/seed_run.ts";

const OPERATOR_API = "operator.platform-project.io/v1alpha1";

/** A Serverless and a Scaler installed under `faults` for 150 s, then liveness. */
async function run(seed: number, faults: Partial<FaultConfig>): Promise<Simulation> {
  const sim = new Simulation({
    seed,
    faults: faultsFor(faults as Record<string, number>, seed),
  });
  await sim.boot();
  sim.scheduleSwarm(140_000);
  for (const kind of ["Serverless", "Scaler"] as const) {
    await sim.drive(sim.user.apply(RESOURCES[kind], {
      apiVersion: OPERATOR_API,
      kind,
      metadata: { name: "default", namespace: OPERATOR_NAMESPACE },
      spec: {},
    }, { fieldManager: "kubectl", force: true }));
  }
  await sim.runUntil(150_000);
  sim.startLiveness();
  assert.ok(await sim.settle(30 * 60_000), "settled");
  assert.ok(sim.checker.ok, JSON.stringify(sim.checker.violations));
  return sim;
}

Deno.test("chaos: a plan crash comes right after a Plan write, before its answer", async () => {
  const sim = await run(3, { planCrashes: 3 });
  const crashes = sim.trace.timeline.filter((e) => e.event === "crash");
  assert.ok(crashes.length >= 2, JSON.stringify(crashes));
  for (const c of crashes) {
    const m = /^(\S+) right after (\S+) (\S+) (\S+)$/.exec(c.event === "crash" ? c.detail : "");
    assert.ok(m, `crash ${JSON.stringify(c)}`);
    const [, identity, verb, kind, ref] = m;
    // Its last write is the one the crash followed: the rest of its Plan never happened.
    const last = sim.cluster.log.records.filter((r) =>
      r.actor === `operator/${identity}` && isPlanWrite(r)
    ).at(-1)!;
    assert.deepEqual(
      [last.verb, last.kind, `${last.namespace ? `${last.namespace}/` : ""}${last.name}`],
      [verb, kind, ref],
    );
  }
  assert.equal(sim.operator.starts, 1 + crashes.length);
  for (const kind of ["Serverless", "Scaler"] as const) {
    const o = sim.cluster.store.get(RESOURCES[kind], OPERATOR_NAMESPACE, "default");
    assert.equal((o?.status as { state?: string }).state, "Ready", `${kind} converged`);
  }
});

Deno.test("chaos: a lost Lease makes the leader step down and the standby take over", async () => {
  const sim = await run(2, { leaseLoss: 2, standbys: 1 });
  const lost = sim.trace.timeline.filter((e) =>
    e.event === "phase" && e.detail.startsWith("lease lost")
  );
  assert.ok(lost.length >= 1, "a lease was lost");
  const lease = sim.cluster.store.get(RESOURCES.Lease, OPERATOR_NAMESPACE, LEASE_NAME);
  assert.ok(((lease?.spec as LeaseSpec).leaseTransitions ?? 0) >= 1, "leadership moved");
  assert.equal(sim.operator.running.length, 2, "both replicas still run");
});

Deno.test("chaos: objects someone else deleted are made again", async () => {
  const sim = await run(1, { ownedDeletes: 4 });
  assert.ok(sim.ownedDeletions.length >= 3, JSON.stringify(sim.ownedDeletions));
  for (const d of sim.ownedDeletions) {
    const type = sim.cluster.store.types.byKind(d.apiVersion, d.kind)!;
    const back = sim.cluster.store.get(type, d.namespace, d.name);
    assert.ok(back && !back.metadata.deletionTimestamp, `${d.kind} ${d.name} is back`);
  }
});

Deno.test("chaos: sweep seeds pass with every new fault kind on, and replay byte for byte", async () => {
  const mix = (seed: number) =>
    faultsFor({ slowWrite: 0.1, planCrashes: 2, leaseLoss: 2, standbys: 1, ownedDeletes: 3 }, seed);
  const hashes: string[] = [];
  for (const seed of [1, 2, 3]) {
    const r = await runSeed(seed, { faults: mix(seed) });
    assert.ok(r.ok, `seed ${seed} at ${r.failedAt}: ${r.failure}`);
    hashes.push(r.traceHash);
  }
  assert.equal((await runSeed(1, { faults: mix(1) })).traceHash, hashes[0]);
});

Deno.test("chaos: a lead lost to API faults alone is on the timeline and counts as a disturbance", async () => {
  // No injected Lease fault: only unanswered requests, some of them the leader's renewals.
  const sim = new Simulation({ seed: 5, faults: faultsFor({ timeout: 0.5 }, 5) });
  await sim.boot();
  await sim.runUntil(120_000);
  const phases = sim.trace.timeline.flatMap((e) => e.event === "phase" ? [e] : []);
  assert.deepEqual(phases.filter((e) => /^(lease lost|partition)/.test(e.detail)), []);
  const lost = phases.filter((e) => e.detail.startsWith("lead lost"));
  assert.ok(lost.length >= 1, JSON.stringify(phases));
  assert.match(lost[0].detail, /^lead lost: platform-operator-0 stopped leading \(.+\)$/);
  // Invariants that judge an undisturbed operator skip the time across it (sim/invariants.ts).
  const at = SIM_EPOCH + parseFloat(lost[0].t) * 1000;
  assert.equal(sim.operatorSteadySince(at - 1), false);
  const last = SIM_EPOCH + parseFloat(lost.at(-1)!.t) * 1000;
  assert.equal(sim.operatorSteadySince(last + 1), true);
});
