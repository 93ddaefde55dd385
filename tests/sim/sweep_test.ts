/**
 * The fault sweep: generated workloads under each seed's swarm fault mix must keep every invariant,
 * converge once faults stop, stay quiet, and enforce exactly the applied limits. CI runs two
 * blocks of 200 seeds on one worker a core: the fixed seeds 1..200 (SIM_SEEDS and SIM_SEED_FROM
 * move them), and the rotating window of the current UTC day (sim/seed_window.ts; SIM_WINDOW=YYYY-MM-DD
 * runs another day's), whose seeds change every day and are printed in the test's name.
 */
import assert from "node:assert/strict";
import { sweep } from "../../sim/pool.ts";
import { type RunResult } from "../../sim/run_result.ts";
import { faultsFor } from "../../sim/fault_choice.ts";
import { runSeed } from "../../sim/seed_run.ts";
import { seedWindow } from "../../sim/seed_window.ts";
import { defaultWorkers } from "../../src/cli/sim.ts";

const count = Number(Deno.env.get("SIM_SEEDS") ?? 200);
const from = Number(Deno.env.get("SIM_SEED_FROM") ?? 1);
const window = seedWindow(Deno.env.get("SIM_WINDOW") ?? "today");

/** Sweeps the seeds; returns one line a seed that did not pass, with its replay command. */
async function notPassing(first: number, n: number): Promise<string[]> {
  const out: string[] = [];
  await sweep({
    from: first,
    count: n,
    workers: defaultWorkers(),
    faults: "default",
    replay: (s) => `deno task sim --seed ${s}`,
  }, (r: RunResult) => {
    if (r.ok) return;
    out.push(`seed ${r.seed} ${r.outcome} at ${r.failedAt}: ${r.failure}\n  replay: ${r.replay}`);
  });
  return out;
}

Deno.test(`sweep: ${count} seeds from ${from} with swarm faults`, async () => {
  const failures = await notPassing(from, count);
  assert.deepEqual(
    failures,
    [],
    `${failures.length} of ${count} seeds did not pass:\n${failures.join("\n")}`,
  );
  // The swarm really injects: most seeds crash the operator, stall watches or conflict writes.
  let faulty = 0;
  for (let seed = from; seed < from + count; seed++) {
    const f = faultsFor("default", seed);
    if (f.crashes > 0 || f.watchStall > 0 || f.conflict > 0) faulty++;
  }
  if (count >= 20) assert.ok(faulty > count / 2, `only ${faulty} of ${count} seeds had faults`);
});

Deno.test(
  `sweep: rotating window of ${window.day} (UTC), seeds ${window.from}..${
    window.from + window.count - 1
  }: replay with deno task sim --window ${window.day}`,
  async () => {
    const failures = await notPassing(window.from, window.count);
    assert.deepEqual(
      failures,
      [],
      `${failures.length} of the ${window.count} seeds of ${window.day}'s window did not pass ` +
        `(all: deno task sim --window ${window.day}):\n${failures.join("\n")}`,
    );
  },
);

Deno.test("sweep: a seed without faults passes and writes", async () => {
  const r = await runSeed(11, { faults: faultsFor("none", 11) });
  assert.ok(r.ok, r.failure ?? "");
  assert.ok(r.writes > 0);
});
