/**
 * Simulator speed: the fault sweep (each seed a generated workload under its own fault mix, then
 * convergence and a quiet period) in virtual seconds a wall second and seeds a minute, against the
 * same seeds without faults as the baseline.
 */
import { faultsFor } from "../sim/fault_choice.ts";
import { runSeed } from "../sim/seed_run.ts";
import { DEFAULT_SWEEP_SEEDS } from "../src/cli/sim.ts";
import type { Report } from "./report.ts";
import { median } from "./stats.ts";

const SECTION = "simulator (fault sweep)";

/** Target: virtual seconds a wall second (issue 7). */
export const SPEEDUP_TARGET = 1_000;

/** One pass over the seeds. */
export interface SweepTiming {
  seeds: number;
  failed: number;
  virtualMs: number;
  wallMs: number;
}

/** Runs seeds `first`..`first+count-1` once, with their default fault mix or none. */
export async function sweepOnce(
  first: number,
  count: number,
  faults: "default" | "none",
): Promise<SweepTiming> {
  let virtualMs = 0;
  let failed = 0;
  const t0 = performance.now();
  for (let seed = first; seed < first + count; seed++) {
    const r = await runSeed(seed, { faults: faultsFor(faults, seed) });
    virtualMs += r.virtualMs;
    if (!r.ok) failed++;
  }
  return { seeds: count, failed, virtualMs, wallMs: performance.now() - t0 };
}

/** Virtual seconds a wall second of a pass. */
export function speedup(t: SweepTiming): number {
  return t.virtualMs / t.wallMs;
}

/** Seeds a wall minute of a pass. */
export function seedsPerMinute(t: SweepTiming): number {
  return (t.seeds * 60_000) / t.wallMs;
}

/** Sizes of the simulator bench. */
export interface SimOptions {
  /** Seeds a pass (1..seeds). */
  seeds: number;
  /** Passes of each kind (the median is reported). */
  runs: number;
}

/** Default sizes: `quick` for CI, else the standard sweep of `deno task sim` (seeds 1..10). */
export function simOptions(quick: boolean): SimOptions {
  return quick ? { seeds: 3, runs: 3 } : { seeds: DEFAULT_SWEEP_SEEDS, runs: 5 };
}

/** Runs the simulator bench into `report`. */
export async function benchSim(report: Report, o: SimOptions): Promise<void> {
  await sweepOnce(1, 1, "default"); // warm-up: compile the operator and the simulator's code
  const faulty: SweepTiming[] = [];
  const clean: SweepTiming[] = [];
  for (let r = 0; r < o.runs; r++) {
    clean.push(await sweepOnce(1, o.seeds, "none"));
    faulty.push(await sweepOnce(1, o.seeds, "default"));
  }
  const failed = faulty[0].failed;
  const virtualS = faulty[0].virtualMs / 1000;
  const note =
    `median of ${o.runs} passes over seeds 1..${o.seeds} (${
      Math.round(virtualS)
    } virtual s a pass` +
    `${failed > 0 ? `, ${failed} seed(s) failing` : ""}); baseline: the same seeds without faults`;
  const s = median(faulty.map(speedup));
  const b = median(clean.map(speedup));
  report.add({
    section: SECTION,
    name: "virtual seconds a wall second",
    value: s,
    unit: "virtual s/s",
    baseline: { name: "no faults", value: b },
    ratio: b / s,
    target: { of: "value", op: ">=", bound: SPEEDUP_TARGET },
    note,
  });
  const m = median(faulty.map(seedsPerMinute));
  const mb = median(clean.map(seedsPerMinute));
  report.add({
    section: SECTION,
    name: "seeds a minute",
    value: m,
    unit: "seeds/min",
    baseline: { name: "no faults", value: mb },
    ratio: mb / m,
    note: "one seed: a generated workload under its fault mix, convergence, then the quiet period",
  });
}
