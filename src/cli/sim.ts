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
import { seedWindow } from "../../sim/seed_window.ts";
import { count, runJson, runLines, summaryLine, tally } from "./sim_report.ts";

/** Sweep seeds run when neither `--seeds` nor SIM_SEEDS says otherwise. */
export const DEFAULT_SWEEP_SEEDS = 10;

/** Workers when `--workers` is not given: one a core. */
export function defaultWorkers(): number {
  return Math.max(1, navigator.hardwareConcurrency || 1);
}

const SCENARIO_DIR = new URL("../../sim/scenarios/", import.meta.url);

const HELP =
  `Usage: deno task sim [FILE...] [--seed N] [--seeds N] [--window DAY] [--workers N] [--faults F]
                      [--envoy VERSION] [--json]

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
                   \`faults:\`, for the sweep the default is default
  --envoy VERSION  the Envoy of the mesh's proxies (default ${DEFAULT_ENVOY}, Istio ${NEWEST_ISTIO}'s; 1.30
                   refills by timer); for scenarios it overrides the file's \`envoy:\`
  --json           one JSON object a run, with the timeline of statuses and responses

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

/** Parses the arguments; throws an Error with a usage message when they are wrong. */
export function parseSimArgs(args: readonly string[]): SimArgs {
  const out: SimArgs = { files: [], json: false, help: false };
  const int = (flag: string, v: string | undefined) => {
    if (v === undefined || !/^[0-9]+$/.test(v)) {
      throw new Error(
        `${flag} needs a non-negative integer, got ${
          v === undefined ? "nothing" : JSON.stringify(v)
        }`,
      );
    }
    return Number(v);
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const [flag, inline] = a.startsWith("--") && a.includes("=")
      ? [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)]
      : [a, undefined];
    const value = () => inline ?? args[++i];
    if (flag === "--help" || flag === "-h") out.help = true;
    else if (flag === "--json") out.json = true;
    else if (flag === "--seed") out.seed = int("--seed", value());
    else if (flag === "--seeds") out.seeds = int("--seeds", value());
    else if (flag === "--window") out.window = value() ?? "";
    else if (flag === "--workers") {
      out.workers = int("--workers", value());
      if (out.workers < 1) throw new Error("--workers needs at least 1");
    } else if (flag === "--envoy") {
      const b = envoyBehaviour(value() ?? "");
      if (!b.ok) throw new Error(`--envoy: ${b.error}`);
      out.envoy = b.value;
    } else if (flag === "--faults") {
      const v = value();
      if (v !== "none" && v !== "default") {
        throw new Error(`--faults is none or default, got ${JSON.stringify(v)}`);
      }
      out.faults = v;
    } else if (a.startsWith("-")) throw new Error(`unknown flag ${a}`);
    else out.files.push(a);
  }
  if (out.window !== undefined) {
    if (out.seed !== undefined) throw new Error("--window and --seed both pick the first seed");
    if (out.files.length > 0) throw new Error("--window sweeps seeds: it takes no files");
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

/** Runs the command; resolves to the exit status. `write` receives each output line. */
export async function runSim(
  args: readonly string[],
  write: (line: string) => void = console.log,
  deps: SimDeps = {},
): Promise<number> {
  let opts: SimArgs;
  try {
    opts = parseSimArgs(args);
  } catch (err) {
    write(`error: ${(err as Error).message}\n\n${HELP}`);
    return 2;
  }
  if (opts.help) {
    write(HELP);
    return 0;
  }
  const scenarios: { file: string; scenario: Scenario }[] = [];
  const window = opts.window !== undefined ? seedWindow(opts.window) : undefined;
  const sweepOnly = opts.files.length === 0 && (opts.seed !== undefined || window !== undefined);
  try {
    const files = opts.files.length > 0 ? opts.files : sweepOnly ? [] : await scenarioFiles();
    for (const file of files) {
      scenarios.push({ file, scenario: parseScenario(await Deno.readTextFile(file), file) });
    }
  } catch (err) {
    write(`error: ${(err as Error).message}`);
    return 2;
  }
  const envSeeds = Deno.env.get("SIM_SEEDS");
  const sweepCount = opts.files.length > 0 ? 0 : opts.seeds ??
    (window ? window.count : sweepOnly ? 1 : envSeeds ? Number(envSeeds) : DEFAULT_SWEEP_SEEDS);
  const firstSeed = window?.from ?? opts.seed ?? 1;
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
