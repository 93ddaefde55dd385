/** The same seed gives the same trace, byte for byte (hashed); another seed gives another. */
import assert from "node:assert/strict";
import { faultsFor } from "../../sim/fault_choice.ts";
import { parseScenario } from "../../sim/scenario/format.ts";
import { runScenario } from "../../sim/scenario/run.ts";
import { runSeed } from "../../sim/seed_run.ts";

Deno.test("determinism: one sweep seed with faults run twice gives the same trace hash", async () => {
  const seed = 7;
  const a = await runSeed(seed, { faults: faultsFor("default", seed) });
  const b = await runSeed(seed, { faults: faultsFor("default", seed) });
  assert.equal(a.traceHash, b.traceHash);
  assert.equal(a.steps, b.steps);
  assert.equal(a.writes, b.writes);
  assert.deepEqual(a.timeline, b.timeline);
  const c = await runSeed(seed + 1, { faults: faultsFor("default", seed + 1) });
  assert.notEqual(c.traceHash, a.traceHash);
});

Deno.test("determinism: a scenario run twice gives the same trace hash; another seed changes it", async () => {
  const file = "sim/scenarios/ratelimit-per-pod-buckets.yaml";
  const scenario = parseScenario(await Deno.readTextFile(file), file);
  const a = await runScenario(scenario);
  const b = await runScenario(scenario);
  assert.ok(a.ok, a.failure ?? "");
  assert.equal(a.traceHash, b.traceHash);
  const c = await runScenario(scenario, { seed: 99 });
  assert.ok(c.ok, c.failure ?? "");
  assert.notEqual(c.traceHash, a.traceHash);
});
