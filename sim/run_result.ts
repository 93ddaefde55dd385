/**
 * What one run (a scenario or a seed of the sweep) reports, and how it ends (the quiet check, the
 * failures that stop it).
 */
import { ViolationStop } from "./run_errors.ts";
import { QUIET_MS, type Simulation } from "./simulation.ts";
import { offset, type TimelineEntry } from "./trace.ts";

/**
 * How a run ended: `passed`; `failed` (a check of the run failed: an invariant, an expectation,
 * liveness, the quiet period); `unfinished` (the run itself could not go on: a request that never
 * finished, a livelock, an exception out of the simulated program or the simulator).
 */
export type SeedOutcome = "passed" | "failed" | "unfinished";

/** The outcome of one run. */
export interface RunResult {
  /** The scenario's name, or `seed N` for the sweep. */
  name: string;
  /** The scenario file, when the run is a scenario. */
  file?: string;
  seed: number;
  /** The Envoy version the mesh ran. */
  envoy: string;
  /** outcome === "passed". */
  ok: boolean;
  outcome: SeedOutcome;
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
  /** The stack of what stopped an unfinished run. */
  error?: string;
  traceHash: string;
  timeline: TimelineEntry[];
  /** The exact command that replays this run. */
  replay: string;
}

/** Thrown by a run's own checks to end it as failed with this message. */
export class RunFailure extends Error {}

/** Who a run is, for its report. */
export interface RunIdentity {
  name: string;
  file?: string;
  seed: number;
  envoy: string;
  /** The command that replays it. */
  replay: string;
}

/** The message of anything thrown, with its class name when that says more than `Error`. */
function describe(err: unknown): { message: string; stack?: string } {
  if (!(err instanceof Error)) return { message: `thrown: ${String(err)}` };
  const named = err.name && err.name !== "Error" ? `${err.name}: ${err.message}` : err.message;
  return { message: named, stack: err.stack };
}

/**
 * Runs `body` on `sim` and reports the run: passed; failed with the message and virtual time of
 * the check that ended it (a RunFailure, a broken invariant); or unfinished. Anything else thrown
 * (a livelock, a request that never finished, a bug in the simulated program or in the simulator,
 * a promise rejection nobody handled) is reported, with its stack, as unfinished rather than
 * thrown: one run must never stop a sweep from running the others.
 */
export async function reportRun(
  sim: Simulation,
  run: RunIdentity,
  body: () => Promise<void>,
): Promise<RunResult> {
  let outcome: SeedOutcome = "passed";
  let failure: string | undefined;
  let failedAt: string | undefined;
  let error: string | undefined;
  // Only one run executes at a time in an isolate, so a rejection nobody handled is this run's.
  const onRejection = (e: PromiseRejectionEvent) => {
    e.preventDefault();
    sim.escaped.push(e.reason);
  };
  globalThis.addEventListener("unhandledrejection", onRejection);
  try {
    await body();
    await sim.checkEscaped();
  } catch (err) {
    failedAt = offset(sim.clock.now());
    if (err instanceof RunFailure || err instanceof ViolationStop) {
      outcome = "failed";
      failure = err.message;
    } else {
      outcome = "unfinished";
      const d = describe(err);
      failure = d.message;
      error = d.stack;
    }
  } finally {
    globalThis.removeEventListener("unhandledrejection", onRejection);
  }
  return {
    name: run.name,
    ...(run.file ? { file: run.file } : {}),
    seed: run.seed,
    envoy: run.envoy,
    ok: outcome === "passed",
    outcome,
    virtualMs: sim.now,
    steps: sim.driver.steps,
    writes: sim.operatorWrites,
    ...(failure ? { failure, failedAt } : {}),
    ...(error ? { error } : {}),
    traceHash: sim.trace.digest(),
    timeline: sim.trace.timeline,
    replay: run.replay,
  };
}

/**
 * The report of a run that threw before it could report itself (the runner, not the simulated
 * program, failed: building the world, loading a module, a worker that died or never answered).
 */
export function unfinishedRun(run: RunIdentity, err: unknown): RunResult {
  const d = describe(err);
  return {
    name: run.name,
    ...(run.file ? { file: run.file } : {}),
    seed: run.seed,
    envoy: run.envoy,
    ok: false,
    outcome: "unfinished",
    virtualMs: 0,
    steps: 0,
    writes: 0,
    failure: d.message,
    failedAt: "0s",
    ...(d.stack ? { error: d.stack } : {}),
    traceHash: "",
    timeline: [],
    replay: run.replay,
  };
}

/**
 * Runs `sim`'s quiet periods (`Simulation.quiet`) and throws a RunFailure when the world kept
 * changing or the operator wrote while nothing changed.
 */
export async function expectQuiet(
  sim: Simulation,
  periodMs = QUIET_MS,
  maxPeriods = 4,
): Promise<void> {
  const quiet = await sim.quiet(periodMs, maxPeriods);
  if (!quiet.quiet) {
    throw new RunFailure(
      `quiet: the world kept changing for ${(maxPeriods * periodMs) / 60_000} min`,
    );
  }
  if (quiet.writes.length > 0) {
    throw new RunFailure(
      `quiet: ${quiet.writes.length} operator write(s) while nothing changed, first: ${
        quiet.writes[0]
      }`,
    );
  }
}
