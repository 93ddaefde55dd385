/** What one run (a scenario or a seed of the sweep) reports, and how the fault mix of a run is chosen. */
import { type FaultConfig, NO_FAULTS, swarm } from "./faults.ts";
import { Prng } from "./prng.ts";
import type { TimelineEntry } from "./trace.ts";

/** The outcome of one run. */
export interface RunResult {
  /** The scenario's name, or `seed N` for the sweep. */
  name: string;
  /** The scenario file, when the run is a scenario. */
  file?: string;
  seed: number;
  ok: boolean;
  /** Virtual time the run covered, in ms (from the epoch to the end of the quiet period). */
  virtualMs: number;
  /** Events the driver fired. */
  steps: number;
  /** Writes the operator made (leases aside). */
  writes: number;
  /** The first differing field, violated invariant or error. */
  failure?: string;
  /** Virtual time of the failure. */
  failedAt?: string;
  traceHash: string;
  timeline: TimelineEntry[];
  /** The exact command that replays this run. */
  replay: string;
}

/** A fault choice: `none`, `default` (the seed's swarm mix), or explicit rates over none. */
export type FaultChoice = "none" | "default" | Record<string, number | string>;

/** The fault mix a choice gives for `seed`. */
export function faultsFor(choice: FaultChoice | undefined, seed: number): FaultConfig {
  if (choice === undefined || choice === "none") return NO_FAULTS;
  if (choice === "default") return swarm(new Prng(seed).fork("swarm"));
  const out: Record<string, unknown> = { ...NO_FAULTS };
  for (const [k, v] of Object.entries(choice)) {
    if (!(k in NO_FAULTS)) {
      throw new Error(
        `unknown fault setting ${JSON.stringify(k)}; known: ${Object.keys(NO_FAULTS).join(", ")}`,
      );
    }
    if (typeof v !== typeof (NO_FAULTS as unknown as Record<string, unknown>)[k]) {
      throw new Error(
        `fault setting ${k}: expected a ${typeof (NO_FAULTS as unknown as Record<string, unknown>)[
          k
        ]}`,
      );
    }
    out[k] = v;
  }
  return out as unknown as FaultConfig;
}

/** True when a fault mix injects anything at all. */
export function hasFaults(f: FaultConfig): boolean {
  return Object.entries(f).some(([k, v]) =>
    typeof v === "number" && k !== "historySize" && v > 0
  ) || f.historySize < NO_FAULTS.historySize;
}
