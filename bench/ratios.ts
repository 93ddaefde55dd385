/**
 * The guard on the in-process reducer bench: each figure's ratio to its in-run baseline, as
 * `deno task bench --only=reducer --quick` measures it, against the ratio recorded in
 * bench/ratios.json. A figure fails when its ratio is more than `tolerance` (1.5) times the
 * recorded one: ratios, not rates, so a slower machine, which slows a figure and its baseline
 * alike, does not fail it. tests/bench/ratios_test.ts runs the check in CI.
 *
 * `deno run -A bench/ratios.ts` measures and prints each ratio beside the recorded one.
 * `deno run -A bench/ratios.ts --record="WHY"` measures in five fresh processes and writes their
 * medians to bench/ratios.json with the commit, date and why; the recorded values move only in a
 * commit that says why.
 */
import { benchReducers, reducerOptions } from "./reducer.ts";
import { Report } from "./report.ts";
import { median } from "./stats.ts";

/** bench/ratios.json. */
export const RATIOS_FILE = new URL("./ratios.json", import.meta.url);

/** What bench/ratios.json records. */
export interface RecordedRatios {
  /** A figure fails above its recorded ratio times this. */
  tolerance: number;
  /** The commit the ratios were measured on, and a note of the tree's state. */
  commit: string;
  /** When (UTC) and where they were measured, and why they were recorded. */
  date: string;
  machine: string;
  why: string;
  /** Each figure's ratio to its in-run baseline, by figure name. */
  ratios: Record<string, number>;
}

/** Ratios by figure name. */
export type Ratios = Record<string, number>;

/** Reads bench/ratios.json. */
export async function recordedRatios(file: URL = RATIOS_FILE): Promise<RecordedRatios> {
  return JSON.parse(await Deno.readTextFile(file)) as RecordedRatios;
}

/** One quick run of the reducer bench: each figure's ratio. */
export async function measureRatios(): Promise<Ratios> {
  const report = new Report(() => {});
  await benchReducers(report, reducerOptions(true));
  const out: Ratios = {};
  for (const f of report.figures) if (f.ratio !== undefined) out[f.name] = f.ratio;
  return out;
}

/**
 * What fails: a figure whose ratio is over its recorded one times the tolerance, a figure with
 * no recorded ratio, and a recorded figure the bench no longer measures.
 */
export function overTolerance(measured: Ratios, recorded: RecordedRatios): string[] {
  const out: string[] = [];
  for (const [name, ratio] of Object.entries(measured)) {
    const was = recorded.ratios[name];
    if (was === undefined) {
      out.push(`${name}: ratio ${ratio.toFixed(2)}, none recorded in bench/ratios.json`);
    } else if (ratio > was * recorded.tolerance) {
      out.push(
        `${name}: ratio ${ratio.toFixed(2)} is ${(ratio / was).toFixed(2)} times the ${was} ` +
          `recorded at ${recorded.commit} (at most ${recorded.tolerance})`,
      );
    }
  }
  for (const name of Object.keys(recorded.ratios)) {
    if (!(name in measured)) out.push(`${name}: recorded, but the bench no longer measures it`);
  }
  return out;
}

/**
 * Measures up to `attempts` times while a figure fails, keeping each figure's lowest ratio: load
 * from other processes comes and goes, and a figure must fail every time to fail. The ratios
 * kept, and what fails with them.
 */
export async function checkRatios(
  recorded: RecordedRatios,
  measure: () => Promise<Ratios> = measureRatios,
  attempts = 3,
): Promise<{ ratios: Ratios; failures: string[]; attempts: number }> {
  const ratios: Ratios = {};
  let failures: string[] = [];
  let made = 0;
  while (made < attempts && (made === 0 || failures.length > 0)) {
    made++;
    for (const [name, r] of Object.entries(await measure())) {
      ratios[name] = Math.min(ratios[name] ?? Infinity, r);
    }
    failures = overTolerance(ratios, recorded);
  }
  return { ratios, failures, attempts: made };
}

/** Each figure's median over runs. */
export function medians(runs: readonly Ratios[]): Ratios {
  const out: Ratios = {};
  for (const name of Object.keys(runs[0] ?? {})) {
    out[name] = Number(median(runs.map((r) => r[name])).toFixed(2));
  }
  return out;
}

async function git(...args: string[]): Promise<string> {
  const out = await new Deno.Command("git", { args, stdout: "piped", stderr: "null" }).output();
  return new TextDecoder().decode(out.stdout).trim();
}

/** Ratios measured in a fresh process (`--once`): as CI measures, JIT state and all. */
async function measureInChild(): Promise<Ratios> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--frozen",
      `--config=${new URL("../deno.json", import.meta.url).pathname}`,
      new URL(import.meta.url).pathname,
      "--once",
    ],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (!out.success) throw new Error("a measuring run failed");
  return JSON.parse(new TextDecoder().decode(out.stdout)) as Ratios;
}

async function main(args: string[]): Promise<number> {
  if (args.includes("--once")) {
    console.log(JSON.stringify(await measureRatios()));
    return 0;
  }
  const recorded = await recordedRatios();
  const why = args.find((a) => a.startsWith("--record="))?.slice("--record=".length);
  if (why === undefined) {
    const measured = await measureRatios();
    for (const [name, r] of Object.entries(measured)) {
      const was = recorded.ratios[name];
      const times = was === undefined ? "(none recorded)" : `${(r / was).toFixed(2)}×`;
      console.log(`${name}: ${r.toFixed(2)} against ${was ?? "–"} ${times}`);
    }
    const failures = overTolerance(measured, recorded);
    for (const f of failures) console.log(`FAILS ${f}`);
    return failures.length > 0 ? 1 : 0;
  }
  if (why.trim() === "") {
    console.error('error: --record needs a reason: --record="why the ratios move"');
    return 2;
  }
  const runs: Ratios[] = [];
  for (let i = 0; i < 5; i++) runs.push(await measureInChild());
  const dirty = (await git("status", "--porcelain", "--", "src", "bench")) !== "";
  const next: RecordedRatios = {
    tolerance: recorded.tolerance,
    commit: `${dirty ? "uncommitted on top of " : ""}${await git("rev-parse", "--short", "HEAD")}`,
    date: new Date().toISOString().slice(0, 16).replace("T", " ") + " UTC",
    machine: `${navigator.hardwareConcurrency} cores, ${Deno.build.os}, Deno ${Deno.version.deno}`,
    why: why.trim(),
    ratios: medians(runs),
  };
  await Deno.writeTextFile(RATIOS_FILE, JSON.stringify(next, null, 2) + "\n");
  console.log(JSON.stringify(next, null, 2));
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
