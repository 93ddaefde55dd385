/**
 * Where a steady-state RateLimit reconcile spends its time, by step:
 * `deno run -A bench/reducer_profile.ts [--rules=4] [--peers=10] [--n=20000]` runs the reducer
 * bench's loop (bench/reducer.ts, nothing to change) in a child `deno run --cpu-prof` and prints
 * each step's share of the samples taken inside `reconcileRateLimit`, as a Markdown table.
 */
import { join } from "node:path";
import { type CpuProfile, stepShares } from "./profile.ts";
import { rateLimitInputs, rateLimitLoops } from "./reducer.ts";

/** The reducer's steps, by the functions that do them (the outermost one on a stack counts). */
export const RECONCILE_STEPS: Readonly<Record<string, readonly string[]>> = {
  "parse": ["parseRateLimit"],
  "validate": ["validateSpec"],
  "render": ["renderEnvoyFilter"],
  "size check (stored bytes)": ["storedBytes", "sizeProblem"],
  "scope (meta, reach, Pods, conflicts)": [
    "readMeta",
    "isOurs",
    "reachOf",
    "podsInReach",
    "podSelection",
    "selectPods",
    "selectorIndex",
    "patchContexts",
    "filterContexts",
    "strayPods",
    "olderOf",
    "olderConflicts",
    "keep",
  ],
  "status (in force, Pods, conditions, message, rates)": [
    "inForceOf",
    "enforcement",
    "updateConditions",
    "conditionEvents",
    "bucketRates",
    "whereText",
    "limitsText",
    "refusal",
    "applyFailure",
    "rowFor",
    "kubeTime",
    "sentence",
  ],
};

function flag(args: readonly string[], name: string, fallback: number): number {
  const a = args.find((x) => x.startsWith(`--${name}=`));
  const n = a === undefined ? fallback : Number(a.slice(name.length + 3));
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer`);
  return n;
}

/** The child's part: warm up, then reconcile `n` times. */
function loop(args: readonly string[]): void {
  const { subject } = rateLimitLoops(
    rateLimitInputs(flag(args, "rules", 4), flag(args, "peers", 10)),
  );
  subject(2_000);
  subject(flag(args, "n", 20_000));
}

async function main(args: string[]): Promise<number> {
  if (args.includes("--loop")) {
    loop(args);
    return 0;
  }
  const dir = await Deno.makeTempDir({ prefix: "reducer-prof-" });
  try {
    const config = new URL("../deno.json", import.meta.url).pathname;
    const child = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "--frozen",
        `--config=${config}`,
        "--cpu-prof",
        `--cpu-prof-dir=${dir}`,
        new URL(import.meta.url).pathname,
        "--loop",
        ...args,
      ],
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    if (!child.success) return 1;
    // The largest profile is the main thread's.
    const files = await Promise.all(
      [...Deno.readDirSync(dir)].map(async (e) => ({
        path: join(dir, e.name),
        size: (await Deno.stat(join(dir, e.name))).size,
      })),
    );
    const main = files.sort((a, b) => b.size - a.size)[0];
    if (!main) throw new Error("no .cpuprofile written");
    const profile = JSON.parse(await Deno.readTextFile(main.path)) as CpuProfile;
    // Only the timed loop's reconciles (`subject` in bench/reducer.ts), not those setting up.
    const rows = stepShares(profile, "reconcileRateLimit", RECONCILE_STEPS, { under: "subject" });
    const total = rows.reduce((s, r) => s + r.ms, 0);
    console.log(`| step | ms | share |\n| --- | ---: | ---: |`);
    for (const r of rows) {
      console.log(`| ${r.step} | ${r.ms.toFixed(0)} | ${(100 * r.share).toFixed(1)}% |`);
    }
    console.log(`| inside reconcileRateLimit | ${total.toFixed(0)} | 100% |`);
    return 0;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
