/**
 * The fault sweep: generated workloads under each seed's swarm fault mix must keep every invariant,
 * converge once faults stop, stay quiet, and enforce exactly the applied limits. CI runs 200 seeds;
 * SIM_SEEDS raises (or lowers) the count, SIM_SEED_FROM moves the window.
 */
import assert from "node:assert/strict";
import { faultsFor } from "../../sim/result.ts";
import { runSeed } from "../../sim/sweep.ts";

const count = Number(Deno.env.get("SIM_SEEDS") ?? 200);
const from = Number(Deno.env.get("SIM_SEED_FROM") ?? 1);

Deno.test(`sweep: ${count} seeds from ${from} with swarm faults`, async () => {
  const failures: string[] = [];
  let faulty = 0;
  for (let seed = from; seed < from + count; seed++) {
    const faults = faultsFor("default", seed);
    if (faults.crashes > 0 || faults.watchStall > 0 || faults.conflict > 0) faulty++;
    const r = await runSeed(seed, { faults });
    if (!r.ok) {
      failures.push(
        `seed ${seed} at ${r.failedAt}: ${r.failure}\n  replay: deno task sim --seed ${seed}`,
      );
    }
  }
  assert.deepEqual(
    failures,
    [],
    `${failures.length} of ${count} seeds failed:\n${failures.join("\n")}`,
  );
  // The swarm really injects: most seeds crash the operator, stall watches or conflict writes.
  if (count >= 20) assert.ok(faulty > count / 2, `only ${faulty} of ${count} seeds had faults`);
});

Deno.test("sweep: a seed without faults passes and writes", async () => {
  const r = await runSeed(11, { faults: faultsFor("none", 11) });
  assert.ok(r.ok, r.failure ?? "");
  assert.ok(r.writes > 0);
});
