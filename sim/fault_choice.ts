/** How the fault mix of a run is chosen: none, the seed's swarm mix, or explicit rates. */
import { z } from "zod";
import { formatErrors } from "../src/api/issues.ts";
import { type FaultConfig, NO_FAULTS, swarm } from "./faults.ts";
import { Prng } from "./prng.ts";
import { fieldErrors, strict, unknownName } from "./schema.ts";

/** A fault choice: `none`, `default` (the seed's swarm mix), or explicit rates over none. */
export type FaultChoice = "none" | "default" | Record<string, number | string>;

/**
 * Most times a run-wide fault (crash, clock jump, plan crash, lost Lease, deletion, broken filter,
 * istiod outage) fires.
 */
const MAX_FAULT_TIMES = 100;

/** Most standby operator replicas (each runs a whole operator). */
const MAX_STANDBYS = 10;

/** Most watch events retained per type. */
const MAX_HISTORY_SIZE = 100_000;

const RATE = z.number().min(0).max(1);
const TIMES = z.number().int().min(0).max(MAX_FAULT_TIMES);

/** Each setting of a fault mix, with its type and bounds (what they mean: FaultConfig). */
const SETTINGS: { [K in keyof FaultConfig]: z.ZodType<FaultConfig[K]> } = {
  conflict: RATE,
  throttle: RATE,
  serverError: RATE,
  timeout: RATE,
  watchDrop: RATE,
  watchStall: RATE,
  watchGone: RATE,
  goneAs: z.enum(["event", "throw"]),
  historySize: z.number().int().min(1).max(MAX_HISTORY_SIZE),
  crashes: TIMES,
  replicaFailure: RATE,
  slowDeployment: RATE,
  clockJumps: TIMES,
  slowWrite: RATE,
  planCrashes: TIMES,
  leaseLoss: TIMES,
  standbys: z.number().int().min(0).max(MAX_STANDBYS),
  ownedDeletes: TIMES,
  proxyRejects: RATE,
  proxyNeverConnects: RATE,
  brokenFilters: TIMES,
  istiodOutages: TIMES,
  metricsOutages: TIMES,
  dnsOutages: TIMES,
  listOutages: TIMES,
};

/** Explicit rates: some settings of FaultConfig, the others as in NO_FAULTS. */
export const FaultRates = strict(
  Object.fromEntries(Object.entries(SETTINGS).map(([k, s]) => [k, s.optional()])) as {
    [K in keyof FaultConfig]: z.ZodOptional<z.ZodType<FaultConfig[K]>>;
  },
  { unknown: (key, known) => unknownName("fault kind", key, known, false) },
);

/** The fault mix a choice gives for `seed`; throws an Error naming a setting it cannot take. */
export function faultsFor(choice: FaultChoice | undefined, seed: number): FaultConfig {
  if (choice === undefined || choice === "none") return NO_FAULTS;
  if (choice === "default") return swarm(new Prng(seed).fork("swarm"));
  const r = FaultRates.safeParse(choice);
  if (!r.success) throw new Error(formatErrors(fieldErrors(r.error, choice, ["faults"])));
  return { ...NO_FAULTS, ...r.data };
}

/** True when a fault mix injects anything at all. */
export function hasFaults(f: FaultConfig): boolean {
  return Object.entries(f).some(([k, v]) =>
    typeof v === "number" && k !== "historySize" && v > 0
  ) || f.historySize < NO_FAULTS.historySize;
}
