/**
 * `deno task sim [FILE...] [--seed N] [--seeds N] [--window DAY] [--workers N] [--faults F]
 * [--envoy VERSION] [--json]`: runs the operator in the deterministic simulator. Without files it runs every scenario
 * in sim/scenarios/ and a sweep of generated workloads under swarm faults; `--seed` without files
 * replays sweep seeds. One line a run; a run that did not pass adds what ended it, the command that
 * replays it and the last steps of its trace.
 */
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import {
  DEFAULT_ENVOY,
  type EnvoyBehaviour,
  envoyBehaviour,
  NEWEST_ISTIO,
} from "../dataplane/mod.ts";
import { sweep } from "../../sim/pool.ts";
import { type RunResult, unfinishedRun } from "../../sim/run_result.ts";
import type { FaultChoice } from "../../sim/fault_choice.ts";
import { parseScenario, type Scenario } from "../../sim/scenario/format.ts";
import { runScenario } from "../../sim/scenario/run.ts";
import { MAX_SEED } from "../../sim/prng.ts";
import { seedWindow } from "../../sim/seed_window.ts";
import { count, runJson, runLines, summaryLine, tally } from "./sim_report.ts";
import { type FlagSpec, parseFlags, UsageError } from "./flags.ts";
import { readInput } from "./input.ts";
import {
  commandProgram,
  commandUsage,
  CONSOLE,
  errorLine,
  failUsage,
  type Output,
  USAGE_EXIT,
} from "./usage.ts";

/** Sweep seeds run when neither `--seeds` nor SIM_SEEDS says otherwise. */
export const DEFAULT_SWEEP_SEEDS = 10;

/** Workers when `--workers` is not given: one a core. */
export function defaultWorkers(): number {
  return Math.max(1, navigator.hardwareConcurrency || 1);
}

const SCENARIO_DIR = new URL("../../sim/scenarios/", import.meta.url);

const PROGRAM = commandProgram("sim");

const HELP = `${
  commandUsage(
    "sim",
    `[FILE...] [--seed N] [--seeds N] [--window DAY] [--workers N] [--faults F]
     [--envoy VERSION] [--json]`,
  )
}

Runs the operator (the real runtime and reconcilers) against the in-memory cluster on virtual time.

  FILE...          scenario files to run (default: every sim/scenarios/*.yaml, then a seed sweep)
  --seed N         with files: the seed of every scenario (default: the file's seed, else 1);
                   without files: replay sweep seeds from N (and run no scenarios)
  --seeds N        how many sweep seeds (default ${DEFAULT_SWEEP_SEEDS}, or SIM_SEEDS; 1 with --seed,
                   200 with --window)
  --window DAY     without files: sweep the rotating window of a UTC day (YYYY-MM-DD or today),
                   the seeds CI ran that day (and run no scenarios)
  --workers N      run sweep seeds on N Web Workers (default: one a core, now ${defaultWorkers()});
                   1 runs them in this process; results print in seed order either way
  --faults F       none or default (the seed's swarm mix); for scenarios it overrides the file's
                   \`faults:\` but its standbys, for the sweep the default is default
  --envoy VERSION  the Envoy of the mesh's proxies (default ${DEFAULT_ENVOY}, Istio ${NEWEST_ISTIO}'s; 1.30
                   refills by timer); for scenarios it overrides the file's \`envoy:\`
  --json           one JSON object a run, with the timeline of statuses and responses
  -h, --help       show this help

A run passes, fails (a check failed: invariant, expectation, liveness, quiet period) or is
unfinished (it could not go on: a request that never finished, a livelock, an exception); the
sweep reports it and goes on to the next seed.

Exit status: 0 when every run passed, 1 when one failed or was unfinished, 2 on bad arguments or
scenario files.`;

/** Parsed command line. */
export interface SimArgs {
  files: string[];
  seed?: number;
  seeds?: number;
  window?: string;
  workers?: number;
  faults?: "none" | "default";
  /** `--envoy`, checked. */
  envoy?: EnvoyBehaviour;
  json: boolean;
  help: boolean;
}

const FLAGS = {
  seed: { type: "string" },
  seeds: { type: "string" },
  window: { type: "string" },
  workers: { type: "string" },
  faults: { type: "string" },
  envoy: { type: "string" },
  json: { type: "boolean" },
} as const satisfies Record<string, FlagSpec>;

/** Parses the arguments; throws an Error with a usage message when they are wrong. */
export function parseSimArgs(args: readonly string[]): SimArgs {
  const parsed = parseFlags(args, FLAGS, true);
  if (parsed.help) return { files: [], json: false, help: true };
  const v = parsed.values;
  const out: SimArgs = { files: parsed.positionals, json: v.json ?? false, help: false };
  const int = (flag: string, value: string) => {
    if (!/^[0-9]+$/.test(value)) {
      throw new UsageError(`${flag} needs a non-negative integer, got ${JSON.stringify(value)}`);
    }
    const n = Number(value);
    if (n > MAX_SEED) {
      throw new UsageError(`${flag}: ${value} is above the maximum ${MAX_SEED} (2^53-1)`);
    }
    return n;
  };
  if (v.seed !== undefined) out.seed = int("--seed", v.seed);
  if (v.seeds !== undefined) {
    out.seeds = int("--seeds", v.seeds);
    // No seed would run, and the run would pass: as --workers, at least one.
    if (out.seeds < 1) throw new UsageError("--seeds needs at least 1");
  }
  if (v.window !== undefined) out.window = v.window;
  if (v.workers !== undefined) {
    out.workers = int("--workers", v.workers);
    if (out.workers < 1) throw new UsageError("--workers needs at least 1");
  }
  if (v.envoy !== undefined) {
    const b = envoyBehaviour(v.envoy);
    if (!b.ok) throw new UsageError(`--envoy: ${b.error}`);
    out.envoy = b.value;
  }
  if (v.faults !== undefined) {
    if (v.faults !== "none" && v.faults !== "default") {
      throw new UsageError(`--faults is none or default, got ${JSON.stringify(v.faults)}`);
    }
    out.faults = v.faults;
  }
  if (out.files.length > 0) {
    // With files only scenarios run: a sweep flag would be silently ignored.
    if (out.seeds !== undefined) {
      throw new UsageError(
        "--seeds sets the sweep, which files replace (--seed N sets their seed)",
      );
    }
    if (out.workers !== undefined) {
      throw new UsageError("--workers runs sweep seeds; files run in this process");
    }
  }
  if (out.window !== undefined) {
    if (out.seed !== undefined) {
      throw new UsageError("--window and --seed both pick the first seed");
    }
    if (out.files.length > 0) throw new UsageError("--window sweeps seeds: it takes no files");
    seedWindow(out.window);
  }
  return out;
}

/** The scenario files of sim/scenarios/, sorted. */
export async function scenarioFiles(): Promise<string[]> {
  const dir = fileURLToPath(SCENARIO_DIR);
  const names: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (e.isFile && /\.ya?ml$/.test(e.name)) names.push(e.name);
  }
  return names.sort().map((n) => relative(Deno.cwd(), `${dir}${n}`));
}

/** What tests may put in place of the defaults. */
export interface SimDeps {
  /** URL of a module exporting `runSeed` in place of sim/seed_run.ts's (see sim/pool.ts). */
  runner?: string;
  /** Wall-clock bound on one seed in a worker. */
  seedTimeoutMs?: number;
}

/** Runs the command; resolves to the exit status. Results go to `output.out`, errors to `output.err`. */
export async function runSim(
  args: readonly string[],
  output: Output = CONSOLE,
  deps: SimDeps = {},
): Promise<number> {
  const write = (line: string) => output.out(line);
  let opts: SimArgs;
  try {
    opts = parseSimArgs(args);
  } catch (err) {
    return failUsage(output, PROGRAM, (err as Error).message);
  }
  if (opts.help) {
    write(HELP);
    return 0;
  }
  const scenarios: { file: string; scenario: Scenario }[] = [];
  const window = opts.window !== undefined ? seedWindow(opts.window) : undefined;
  const sweepOnly = opts.files.length === 0 && (opts.seed !== undefined || window !== undefined);
  const envSeeds = Deno.env.get("SIM_SEEDS");
  const sweepCount = opts.files.length > 0 ? 0 : opts.seeds ??
    (window ? window.count : sweepOnly ? 1 : envSeeds ? Number(envSeeds) : DEFAULT_SWEEP_SEEDS);
  if (!Number.isSafeInteger(sweepCount) || sweepCount < 0) {
    return failUsage(output, PROGRAM, `SIM_SEEDS needs a non-negative integer, got ${envSeeds}`);
  }
  const firstSeed = window?.from ?? opts.seed ?? 1;
  // Not `firstSeed + sweepCount - 1 > MAX_SEED`: past MAX_SEED a sum is rounded (seed + 1 ===
  // seed), and the sweep would run nothing or one seed again.
  if (sweepCount - 1 > MAX_SEED - firstSeed) {
    return failUsage(
      output,
      PROGRAM,
      `${sweepCount} seeds from ${firstSeed} go past the largest seed ${MAX_SEED} (2^53-1)`,
    );
  }
  try {
    const files = opts.files.length > 0 ? opts.files : sweepOnly ? [] : await scenarioFiles();
    for (const file of files) {
      scenarios.push({ file, scenario: parseScenario(await readInput(file), file) });
    }
  } catch (err) {
    output.err(errorLine((err as Error).message));
    return USAGE_EXIT;
  }
  const workers = Math.min(opts.workers ?? defaultWorkers(), Math.max(1, sweepCount));
  const faultFlag = opts.faults ? ` --faults ${opts.faults}` : "";
  const envoyFlag = opts.envoy ? ` --envoy ${opts.envoy.version}` : "";
  const t = tally(scenarios.length, sweepCount, workers);
  const started = performance.now();
  const report = (r: RunResult) => {
    count(t, r);
    for (const l of opts.json ? [runJson(r)] : runLines(r)) write(l);
  };
  if (window && !opts.json) {
    write(`window ${window.day}: seeds ${firstSeed}..${firstSeed + sweepCount - 1}`);
  }
  for (const { file, scenario } of scenarios) {
    const replay = (seed: number) => `deno task sim ${file} --seed ${seed}${faultFlag}${envoyFlag}`;
    const seed = opts.seed ?? scenario.seed ?? 1;
    try {
      report(
        await runScenario(scenario, {
          file,
          ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
          ...(opts.faults ? { faults: opts.faults as FaultChoice } : {}),
          ...(opts.envoy ? { envoy: opts.envoy } : {}),
          replay,
        }),
      );
    } catch (err) {
      const envoy = opts.envoy?.version ?? scenario.envoy?.version ?? DEFAULT_ENVOY;
      report(unfinishedRun({ name: scenario.name, file, seed, envoy, replay: replay(seed) }, err));
    }
  }
  const sweepFaults = opts.faults ?? "default";
  const sweepStarted = performance.now();
  await sweep({
    from: firstSeed,
    count: sweepCount,
    workers,
    faults: sweepFaults,
    ...(opts.envoy ? { envoy: opts.envoy.version } : {}),
    replay: (s) =>
      `deno task sim --seed ${s}${sweepFaults === "none" ? " --faults none" : ""}${envoyFlag}`,
    timeline: opts.json,
    ...deps,
  }, report);
  t.sweepWallMs = performance.now() - sweepStarted;
  t.wallMs = performance.now() - started;
  if (!opts.json) write(summaryLine(t));
  return t.failed + t.unfinished > 0 ? 1 : 0;
}

/** The `sim` command. */
export function main(args: string[]): Promise<number> {
  return runSim(args);
}
