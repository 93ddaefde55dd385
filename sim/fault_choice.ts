/** How the fault mix of a run is chosen: none, the seed's swarm mix, or explicit rates. */
import { type FaultConfig, NO_FAULTS, swarm } from "./faults.ts";
import { Prng } from "./prng.ts";

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
