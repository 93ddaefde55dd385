/**
 * Where a seed runs cannot change it: the same seeds swept in this process and on two workers give
 * the same outcome, trace hash and timeline seed by seed, equal to each seed run on its own, and the
 * results arrive in seed order.
 */
import assert from "node:assert/strict";
import { sweep } from "../../sim/pool.ts";
import { type RunResult } from "../../sim/run_result.ts";
import { faultsFor } from "../../sim/fault_choice.ts";
import { runSeed } from "../../sim/seed_run.ts";
import { seedWindow, utcDay, WINDOW_SEEDS } from "../../sim/seed_window.ts";

async function swept(from: number, count: number, workers: number): Promise<RunResult[]> {
  const out: RunResult[] = [];
  await sweep({
    from,
    count,
    workers,
    faults: "default",
    replay: (s) => `deno task sim --seed ${s}`,
    timeline: true,
  }, (r) => out.push(r));
  return out;
}

const key = (r: RunResult) =>
  `${r.seed} ${r.outcome} ${r.traceHash} ${r.steps} ${r.writes} ${r.timeline.length}`;

Deno.test("pool: 1 and 2 workers give each seed the same trace hash and timeline, in seed order", async () => {
  // 100150.. holds seeds of another start than CI's 1..200, run after different neighbours.
  for (const from of [1, 100_150]) {
    const one = await swept(from, 8, 1);
    const two = await swept(from, 8, 2);
    assert.deepEqual(one.map((r) => r.seed), [...Array(8).keys()].map((i) => from + i));
    assert.deepEqual(two.map(key), one.map(key));
    for (let i = 0; i < one.length; i++) assert.deepEqual(two[i].timeline, one[i].timeline);
    // Alone, without the seeds before it in the same isolate: still the same run.
    const last = one.at(-1)!;
    const alone = await runSeed(last.seed, { faults: faultsFor("default", last.seed) });
    assert.equal(alone.traceHash, last.traceHash);
  }
});

Deno.test("pool: passing runs drop their timeline unless asked (memory of long sweeps)", async () => {
  const out: RunResult[] = [];
  await sweep({ from: 11, count: 2, workers: 2, faults: "none", replay: String }, (r) => {
    out.push(r);
  });
  assert.deepEqual(out.map((r) => [r.seed, r.outcome, r.timeline.length]), [
    [11, "passed", 0],
    [12, "passed", 0],
  ]);
});

Deno.test("window: each UTC day has its own block of 200 seeds, clear of CI's fixed 1..200", () => {
  const a = seedWindow("2026-11-22");
  const b = seedWindow("2026-11-23");
  assert.deepEqual(a, { day: "2026-11-22", from: 20_779 * WINDOW_SEEDS, count: WINDOW_SEEDS });
  assert.equal(b.from, a.from + WINDOW_SEEDS);
  assert.ok(a.from > 200);
  const now = new Date("2026-11-22T23:59:59Z");
  assert.deepEqual(seedWindow("today", now), a);
  assert.equal(utcDay(now), "2026-11-22");
  assert.throws(() => seedWindow("2026-13-01"), /a window is a UTC day/);
  assert.throws(() => seedWindow("22.11.2026"), /a window is a UTC day/);
});
