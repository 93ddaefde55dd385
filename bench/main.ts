/**
 * `deno task bench [--quick] [--cluster] [--only=a,b] [--json=FILE]`: the operator's benchmarks.
 * Each prints figures (medians over repeated runs) with a baseline measured in the same run, their
 * ratio, and the target from issue 7. Not a test: nothing here fails on a slow figure (the summary
 * says which targets were met; tests/bench/ratios_test.ts guards the reducer's ratios). `--quick`
 * uses small counts (CI) and skips the control-plane benches unless `--cluster` is given.
 */
import { buildStatus } from "../tools/cluster/mod.ts";
import { benchCluster } from "./cluster/mod.ts";
import { CLUSTER_PHASES, clusterOptions, type ClusterPhase } from "./cluster/options.ts";
import { PEER_ENV, peerCheckout } from "./cluster/peer.ts";
import { benchDataplane, dataplaneOptions } from "./dataplane.ts";
import { benchIstiod, istiodCostOptions } from "./istiod_cost.ts";
import { benchGlobal, globalLimitsOptions } from "./global_limits.ts";
import { benchReducers, reducerOptions } from "./reducer.ts";
import { Report } from "./report.ts";
import { benchSim, simOptions } from "./sim.ts";
import { DEFAULT_TAG } from "../tools/image/image.ts";
import { GoCache, goVersion } from "../tools/gobuild.ts";
import { cacheDir, istioCheckBuild, MODULE_DIR } from "../tools/istio-check/build.ts";
import {
  cacheDir as engineCacheDir,
  MODULE_DIR as ENGINE_MODULE_DIR,
  ratelimitEngineBuilds,
} from "../tools/ratelimit-engine/build.ts";

/** The benches, in run order. */
export const SECTIONS = ["reducer", "dataplane", "sim", "cluster", "istiod", "global"] as const;
/** A bench name. */
export type Section = typeof SECTIONS[number];

/** The `--help` text. */
export const USAGE = `Usage: deno task bench [--quick] [--cluster] [--only=${
  SECTIONS.join(",")
}] [--json=FILE] [--peer=PATH] [--image=TAG]
       [--phases=${CLUSTER_PHASES.join(",")}] [--latency-size=N] [--latency-changes=M]
       [--istiod-proxies=N] [--global-edits=N] [--runs=N] [--rest-seconds=N]
  --quick      small counts, a few seconds a bench (CI); skips the control plane unless --cluster
  --cluster    with --quick: run the control-plane benches too (100 RateLimits, about 2 min;
               the istiod bench with 20 proxies, about 2 min more; the global one with 10 edits,
               about 30 s)
  --only=...   run only these benches, in order: ${SECTIONS.join(", ")}
  --json=FILE  also write every figure and skip as JSON
  --peer=PATH  a checkout of kyma-project/api-gateway (default: $${PEER_ENV}): the control-plane
               benches build its RateLimit controller there and measure it beside the operator
               (bench/peers/kyma-ratelimit/README.md); without one they say so and run the rest
  --image=TAG  also measure the operator as its image runs it (podman run of TAG, which
               ./deno task image builds as ${DEFAULT_TAG}), a subject of its own
  --phases=... only these phases of the control-plane benches (startup needs converge)
  --latency-size=N     the latency phase's RateLimits Ready (default 1,000; 100 with --quick)
  --latency-changes=M  changes of each kind it times one at a time (default 50; 10 with --quick)
  --istiod-proxies=N   the istiod bench's Pods, proxies and RateLimits (default 1,000; 20 with
               --quick): a real istiod, proxy stand-ins, the operator asking istiod through a
               counter; apply to Accepted, and requests to istiod a minute at rest
  --global-edits=N     the global bench's edits, one after another (default 100; 10 with --quick):
               the operator serving two real rate limit engines (host processes) over xDS; apply
               to each engine's loaded /rlconfig and to GlobalEnforced, p50, p99 and max
  --runs=N     convergence runs of the control-plane bench, each the baseline then every subject
               (default 3; 1 with --quick)
  --rest-seconds=N     the window at rest after run 1 (default 240; 10 with --quick): writes at
               rest and settled memory (the peer requeues every 3 minutes: keep 240 with it)
Environment: BENCH_OPERATOR_ROOT=DIR runs the operator from another tree (before/after);
BENCH_OPERATOR_CPU_PROF=DIR writes each operator process's CPU profile there as it exits; plot a
control-plane run's JSON with: deno run -A bench/plot.ts FILE.json --out=FILE.svg
Figures are medians over repeated runs, each with a baseline measured in the same run and their
ratio; the summary lists the targets met and missed. Results and how to read them: bench/RESULTS.md`;

/** Parsed command line. */
export interface BenchArgs {
  help?: boolean;
  quick: boolean;
  cluster: boolean;
  only: Section[];
  json?: string;
  peer?: string;
  image?: string;
  phases?: ClusterPhase[];
  latencySize?: number;
  latencyChanges?: number;
  istiodProxies?: number;
  globalEdits?: number;
  /** Convergence runs of the control-plane bench (default 3, 1 with --quick). */
  runs?: number;
  /** Seconds of the window at rest after run 1 (default 240, 10 with --quick). */
  restSeconds?: number;
}

function count(arg: string, flag: string): number {
  const n = Number(arg.slice(flag.length + 3));
  if (!Number.isInteger(n) || n < 1) {
    throw new Error(`--${flag} must be a positive integer: ${arg}`);
  }
  return n;
}

/** Parses the command line; throws a message naming the bad argument. */
export function parseArgs(args: readonly string[]): BenchArgs {
  const out: BenchArgs = { quick: false, cluster: false, only: [...SECTIONS] };
  for (const a of args) {
    if (a === "--help" || a === "-h") out.help = true;
    else if (a === "--quick") out.quick = true;
    else if (a === "--cluster") out.cluster = true;
    else if (a.startsWith("--only=")) {
      const names = a.slice("--only=".length).split(",").filter((s) => s);
      const bad = names.filter((n) => !(SECTIONS as readonly string[]).includes(n));
      if (bad.length > 0) {
        throw new Error(`unknown bench ${bad.join(", ")}: use ${SECTIONS.join(", ")}`);
      }
      out.only = names as Section[];
    } else if (a.startsWith("--json=")) out.json = a.slice("--json=".length);
    else if (a.startsWith("--peer=")) out.peer = a.slice("--peer=".length);
    else if (a.startsWith("--image=")) out.image = a.slice("--image=".length);
    else if (a.startsWith("--latency-size=")) out.latencySize = count(a, "latency-size");
    else if (a.startsWith("--latency-changes=")) out.latencyChanges = count(a, "latency-changes");
    else if (a.startsWith("--istiod-proxies=")) out.istiodProxies = count(a, "istiod-proxies");
    else if (a.startsWith("--global-edits=")) out.globalEdits = count(a, "global-edits");
    else if (a.startsWith("--runs=")) out.runs = count(a, "runs");
    else if (a.startsWith("--rest-seconds=")) out.restSeconds = count(a, "rest-seconds");
    else if (a.startsWith("--phases=")) {
      const names = a.slice("--phases=".length).split(",").filter((s) => s);
      const bad = names.filter((n) => !(CLUSTER_PHASES as readonly string[]).includes(n));
      if (bad.length > 0) {
        throw new Error(`unknown phase ${bad.join(", ")}: use ${CLUSTER_PHASES.join(", ")}`);
      }
      out.phases = names as ClusterPhase[];
    } else {
      throw new Error(
        `unknown argument ${a}: use --quick, --cluster, --only=..., --json=FILE, --peer=PATH, ` +
          "--image=TAG, " +
          "--phases=..., --latency-size=N, --latency-changes=M, --istiod-proxies=N, " +
          "--global-edits=N, --runs=N, --rest-seconds=N",
      );
    }
  }
  return out;
}

/** Why the control-plane benches cannot or should not run, or undefined when they run. */
export async function clusterSkipReason(args: BenchArgs): Promise<string | undefined> {
  if (args.quick && !args.cluster) {
    return "--quick skips the control-plane benches (minutes, a real API server); add --cluster to run them";
  }
  const { stale, goAvailable } = await buildStatus();
  if (stale.length > 0 && !goAvailable) {
    return `the control-plane binaries (${
      stale.join(", ")
    }) are not built and there is no go to build them`;
  }
  return undefined;
}

/** Why the istiod bench cannot or should not run, or undefined when it runs. */
export async function istiodSkipReason(args: BenchArgs): Promise<string | undefined> {
  const why = await clusterSkipReason(args);
  if (why) return why;
  const { stale } = await new GoCache(cacheDir()).status([await istioCheckBuild()]);
  if (stale.length > 0 && await goVersion(MODULE_DIR) === null) {
    return "istiod (pilot-discovery) and the proxy stand-in are not built and there is no go to build them";
  }
  return undefined;
}

/** Why the global bench cannot or should not run, or undefined when it runs. */
export async function globalSkipReason(args: BenchArgs): Promise<string | undefined> {
  const why = await clusterSkipReason(args);
  if (why) return why;
  const { stale } = await new GoCache(engineCacheDir()).status(await ratelimitEngineBuilds());
  if (stale.length > 0 && await goVersion(ENGINE_MODULE_DIR) === null) {
    return "the rate limit engine (envoyproxy/ratelimit) is not built and there is no go to build it " +
      "(./deno task build --only=ratelimit-engine)";
  }
  const redis = await new Deno.Command("redis-server", { args: ["--version"] }).output()
    .then((o) => o.success, () => false);
  if (!redis) return "no redis-server (Debian's redis-server package) for the engines to count in";
  return undefined;
}

async function main(argv: string[]): Promise<number> {
  let args: BenchArgs;
  try {
    args = parseArgs(argv);
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    return 2;
  }
  if (args.help) {
    console.log(USAGE);
    return 0;
  }
  const report = new Report();
  const want = (s: Section) => args.only.includes(s);
  if (want("reducer")) await benchReducers(report, reducerOptions(args.quick));
  if (want("dataplane")) benchDataplane(report, dataplaneOptions(args.quick));
  if (want("sim")) await benchSim(report, simOptions(args.quick));
  if (want("cluster")) {
    const why = await clusterSkipReason(args);
    if (why) report.skip("control plane", why);
    else {
      const o = clusterOptions(args.quick, peerCheckout(args.peer));
      const latency = {
        size: args.latencySize ?? o.latency.size,
        changes: args.latencyChanges ?? o.latency.changes,
      };
      await benchCluster(report, {
        ...o,
        ...(args.runs ? { runs: args.runs } : {}),
        ...(args.restSeconds ? { steadyMs: args.restSeconds * 1000 } : {}),
        latency,
        ...(args.phases ? { phases: args.phases } : {}),
        ...(args.image ? { image: args.image } : {}),
      });
    }
  }
  if (want("istiod")) {
    const why = await istiodSkipReason(args);
    if (why) report.skip("istiod", why);
    else await benchIstiod(report, istiodCostOptions(args.quick, args.istiodProxies));
  }
  if (want("global")) {
    const why = await globalSkipReason(args);
    if (why) report.skip("global", why);
    else await benchGlobal(report, globalLimitsOptions(args.quick, args.globalEdits));
  }
  for (const line of report.summary()) console.log(line);
  if (args.json) {
    await Deno.writeTextFile(
      args.json,
      JSON.stringify({ figures: report.figures, skipped: report.skipped }, null, 2) + "\n",
    );
  }
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
