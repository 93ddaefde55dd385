/**
 * `deno task sim [FILE...] [--seed N] [--seeds N] [--faults none|default] [--envoy VERSION]
 * [--json]`: runs the
 * operator in the deterministic simulator. Without files it runs every scenario in sim/scenarios/
 * and a sweep of generated workloads under swarm faults; `--seed` without files replays sweep
 * seeds. One line a run; a failure adds the first differing field and the command that replays it.
 */
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import {
  DEFAULT_ENVOY,
  type EnvoyBehaviour,
  envoyBehaviour,
  NEWEST_ISTIO,
} from "../dataplane/mod.ts";
import type { FaultChoice, RunResult } from "../../sim/result.ts";
import { faultsFor } from "../../sim/result.ts";
import { parseScenario, type Scenario } from "../../sim/scenario/format.ts";
import { runScenario } from "../../sim/scenario/run.ts";
import { runSeed } from "../../sim/sweep.ts";

/** Sweep seeds run when neither `--seeds` nor SIM_SEEDS says otherwise. */
export const DEFAULT_SWEEP_SEEDS = 10;

const SCENARIO_DIR = new URL("../../sim/scenarios/", import.meta.url);

const HELP = `Usage: deno task sim [FILE...] [--seed N] [--seeds N] [--faults none|default]
                     [--envoy VERSION] [--json]

Runs the operator (the real runtime and reconcilers) against the in-memory cluster on virtual time.

  FILE...          scenario files to run (default: every sim/scenarios/*.yaml, then a seed sweep)
  --seed N         with files: the seed of every scenario (default: the file's seed, else 1);
                   without files: replay sweep seeds from N (and run no scenarios)
  --seeds N        how many sweep seeds (default ${DEFAULT_SWEEP_SEEDS}, or SIM_SEEDS; 1 with --seed)
  --faults F       none or default (the seed's swarm mix); for scenarios it overrides the file's
                   \`faults:\`, for the sweep the default is default
  --envoy VERSION  the Envoy of the mesh's proxies (default ${DEFAULT_ENVOY}, Istio ${NEWEST_ISTIO}'s; 1.30
                   refills by timer); for scenarios it overrides the file's \`envoy:\`
  --json           one JSON object a run, with the timeline of statuses and responses

Exit status: 0 when every run passed, 1 when one failed, 2 on bad arguments or scenario files.`;

/** Parsed command line. */
export interface SimArgs {
  files: string[];
  seed?: number;
  seeds?: number;
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
    else if (flag === "--faults") {
      const v = value();
      if (v !== "none" && v !== "default") {
        throw new Error(`--faults is none or default, got ${JSON.stringify(v)}`);
      }
      out.faults = v;
    } else if (flag === "--envoy") {
      const b = envoyBehaviour(value() ?? "");
      if (!b.ok) throw new Error(`--envoy: ${b.error}`);
      out.envoy = b.value;
    } else if (a.startsWith("-")) throw new Error(`unknown flag ${a}`);
    else out.files.push(a);
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

function seconds(ms: number): string {
  const s = Math.round(ms) / 1000;
  if (s < 60) return `${s}s`;
  const whole = Math.round(s); // rounded once, so 1499.9 s is 25m0s, not 24m60s
  return `${Math.floor(whole / 60)}m${whole % 60}s`;
}

function line(r: RunResult): string[] {
  const what = r.file
    ? `${r.file} (seed ${r.seed}, Envoy ${r.envoy})`
    : `${r.name} (Envoy ${r.envoy})`;
  const head = `${r.ok ? "PASS" : "FAIL"}  ${what}  virtual ${
    seconds(r.virtualMs)
  }  steps ${r.steps}  writes ${r.writes}  trace ${r.traceHash}`;
  if (r.ok) return [head];
  return [
    head,
    `      at ${r.failedAt}: ${r.failure}`,
    `      seed ${r.seed}; replay: ${r.replay}`,
  ];
}

function json(r: RunResult): string {
  const { virtualMs, ...rest } = r;
  return JSON.stringify({ ...rest, virtualSeconds: Math.round(virtualMs) / 1000 });
}

/** Runs the command; resolves to the exit status. `write` receives each output line. */
export async function runSim(
  args: readonly string[],
  write: (line: string) => void = console.log,
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
  const sweepOnly = opts.files.length === 0 && opts.seed !== undefined;
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
  const sweepCount = opts.files.length > 0
    ? 0
    : opts.seeds ?? (sweepOnly ? 1 : envSeeds ? Number(envSeeds) : DEFAULT_SWEEP_SEEDS);
  const firstSeed = opts.seed ?? 1;
  const faultFlag = opts.faults ? ` --faults ${opts.faults}` : "";
  const envoyFlag = opts.envoy ? ` --envoy ${opts.envoy.version}` : "";
  const envoy = opts.envoy ? { envoy: opts.envoy } : {};
  const results: RunResult[] = [];
  const started = performance.now();
  const report = (r: RunResult) => {
    results.push(r);
    for (const l of opts.json ? [json(r)] : line(r)) write(l);
  };
  for (const { file, scenario } of scenarios) {
    report(
      await runScenario(scenario, {
        file,
        ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
        ...(opts.faults ? { faults: opts.faults as FaultChoice } : {}),
        ...envoy,
        replay: (seed) => `deno task sim ${file} --seed ${seed}${faultFlag}${envoyFlag}`,
      }),
    );
  }
  const sweepFaults = opts.faults ?? "default";
  for (let seed = firstSeed; seed < firstSeed + sweepCount; seed++) {
    report(
      await runSeed(seed, {
        faults: faultsFor(sweepFaults, seed),
        ...envoy,
        replay: (s) =>
          `deno task sim --seed ${s}${sweepFaults === "none" ? " --faults none" : ""}${envoyFlag}`,
      }),
    );
  }
  const failed = results.filter((r) => !r.ok).length;
  if (!opts.json) {
    const virtual = results.reduce((n, r) => n + r.virtualMs, 0);
    const wall = (performance.now() - started) / 1000;
    const speed = wall > 0 ? Math.round(virtual / 1000 / wall) : 0;
    write(
      `${
        results.length - failed
      } passed, ${failed} failed (${scenarios.length} scenarios, ${sweepCount} sweep seeds, ` +
        `${seconds(virtual)} virtual in ${wall.toFixed(1)}s: ${speed} virtual s a wall s)`,
    );
  }
  return failed > 0 ? 1 : 0;
}

/** The `sim` command. */
export function main(args: string[]): Promise<number> {
  return runSim(args);
}
