/**
 * The control-plane benches, on a real kube-apiserver with kwok Pods (tools/cluster):
 * - convergence: N RateLimits on N Pods created at once, time until all are Ready, against a
 *   baseline client that makes only the minimum writes, alternated run by run;
 * - steady state: the operator's API writes in a quiet period with those objects (audit log);
 * - memory: the operator's resident memory with 0, N and 10,000 RateLimits watched;
 * - start-up: from process spawn to the first reconcile (JSON log timestamps).
 */
import type { KubeObject } from "../../src/runtime/cluster.ts";
import { OPERATOR_USER } from "../../tools/cluster/mod.ts";
import type { OperatorProcess } from "../../tools/operator/process.ts";
import { podManifest, rateLimitObject } from "../fixtures.ts";
import type { Report } from "../report.ts";
import { fmt, median } from "../stats.ts";
import { baselinePayloads, runBaseline } from "./baseline.ts";
import { join } from "node:path";
import { BENCH_DIR, BenchCluster } from "./env.ts";
import { memoryOf, msToLog, startOperator, waitIdle, waitReady } from "./operator.ts";
import { ReadyWatch } from "./ready.ts";

const SECTION = "control plane (kube-apiserver + kwok, operator as a process)";

/** Sizes of the control-plane benches. */
export interface ClusterOptions {
  /** RateLimits (and Pods) of a convergence run. */
  count: number;
  /** Rules of each RateLimit. */
  rules: number;
  /** Convergence runs (each: one baseline, one operator). */
  runs: number;
  /** Length of the steady-state window. */
  steadyMs: number;
  /** RateLimits watched for the largest memory figure. */
  memoryMax: number;
  /** Start-up measurements. */
  startupRuns: number;
  /** Create requests in flight. */
  width: number;
}

/** Default sizes: `quick` (CI with --cluster) or the full run of issue 7. */
export function clusterOptions(quick: boolean): ClusterOptions {
  return quick
    ? {
      count: 100,
      rules: 4,
      runs: 1,
      steadyMs: 10_000,
      memoryMax: 1_000,
      startupRuns: 1,
      width: 16,
    }
    : {
      count: 1_000,
      rules: 4,
      runs: 3,
      steadyMs: 60_000,
      memoryMax: 10_000,
      startupRuns: 3,
      width: 16,
    };
}

/** Reconciles of one controller at once: the operator's default, which the baseline matches. */
const OPERATOR_CONCURRENCY = 2;

/** Pods and RateLimits of one run, interleaved so both kinds arrive together. */
function workload(count: number, rules: number, namespace: string, pods: boolean): KubeObject[] {
  return Array.from({ length: count }, (_, i) => [
    ...(pods ? [podManifest(i, namespace)] : []),
    rateLimitObject({ i, rules, namespace }),
  ]).flat();
}

const seconds = (ms: number) => ms / 1000;

/** Runs every control-plane bench into `report`. */
export async function benchCluster(report: Report, o: ClusterOptions): Promise<void> {
  const say = (line: string) => report.info(SECTION, line);
  // Operator logs are appended to by name: start from none, so each figure reads its own run.
  await Deno.remove(join(BENCH_DIR, "logs"), { recursive: true }).catch(() => {});
  const t0 = Date.now();
  const env = await BenchCluster.up((m) => say(`[cluster] ${m}`));
  say(`control plane up in ${fmt(seconds(Date.now() - t0), 1)} s (${env.handle.server})`);
  let op: OperatorProcess | undefined;
  const stopOp = async () => {
    await op?.stop();
    op = undefined;
  };
  const startOp = async (identity: string, logLevel: "info" | "debug" = "info") => {
    op = await startOperator(env.handle.operatorKubeconfig, identity, logLevel);
    await waitReady(op);
    return op;
  };
  try {
    // Memory with nothing to watch.
    const idle = await startOp("bench-idle");
    await waitIdle(idle, 3_000, 60_000);
    const mem0 = await memoryOf(idle.pid);
    await stopOp();

    const base: number[] = [];
    const oper: number[] = [];
    const created: number[] = [];
    const n = o.count;
    for (let r = 0; r < o.runs; r++) {
      // Baseline: no operator running, a client making the minimum writes.
      const bns = `bench-base-${r}`;
      await env.namespace(bns);
      const payloads = baselinePayloads(n, o.rules, bns);
      const watch = new ReadyWatch(env.api, bns);
      await watch.start();
      const stop = new AbortController();
      const baseline = runBaseline(env.api, bns, payloads, OPERATOR_CONCURRENCY, stop.signal);
      const b0 = Date.now();
      created.push(await env.createAll(workload(n, o.rules, bns, true), o.width));
      base.push((await watch.whenReady(n, 1_800_000)) - b0);
      await baseline;
      await watch.stop();
      say(
        `run ${r + 1}: baseline ${fmt(seconds(base[r]), 2)} s (created in ${
          fmt(seconds(created.at(-1)!), 2)
        } s)`,
      );
      await env.deleteNamespaces([bns]);

      // The operator, started and synced before the objects arrive.
      const p = await startOp(`bench-${r}`);
      await waitIdle(p, 2_000, 60_000);
      const ons = `bench-op-${r}`;
      await env.namespace(ons);
      const w = new ReadyWatch(env.api, ons);
      await w.start();
      const o0 = Date.now();
      created.push(await env.createAll(workload(n, o.rules, ons, true), o.width));
      oper.push((await w.whenReady(n, 1_800_000)) - o0);
      await w.stop();
      const reconciles = await waitIdle(p, 5_000, 1_800_000);
      say(
        `run ${r + 1}: operator ${fmt(seconds(oper[r]), 2)} s; idle after ${reconciles} reconciles`,
      );

      if (r === 0) await steadyState(report, env, p, o, n, mem0.rssMb);
      if (r < o.runs - 1) {
        await stopOp();
        await env.deleteNamespaces([ons]);
      }
    }
    const ratio = median(oper) / median(base);
    report.add({
      section: SECTION,
      name: `${fmt(n)} RateLimits (${o.rules} rules) on ${
        fmt(n)
      } Pods, created at once, until all Ready`,
      value: seconds(median(oper)),
      unit: "s",
      baseline: {
        name: `client making 2 writes an object, ${OPERATOR_CONCURRENCY} at once`,
        value: seconds(median(base)),
      },
      ratio,
      target: { of: "ratio", op: "<=", bound: 1.5 },
      note: `median of ${o.runs}; operator runs ${
        oper.map((x) => fmt(seconds(x), 2)).join(", ")
      } s; ` +
        `baseline ${base.map((x) => fmt(seconds(x), 2)).join(", ")} s; creating the objects took ` +
        `${fmt(seconds(median(created)), 2)} s (${o.width} requests at once)`,
    });

    // Start-up with the last run's objects in place: spawn to first reconcile.
    await stopOp();
    const first: number[] = [];
    const synced: number[] = [];
    for (let k = 0; k < o.startupRuns; k++) {
      const p = await startOp(`bench-start-${k}`, "debug");
      await waitIdle(p, 2_000, 300_000);
      const f = await msToLog(p, "reconciled");
      const s = await msToLog(p, "caches synced and leading: reconciling");
      if (f === undefined) throw new Error(`no "reconciled" line in ${p.logPath}`);
      first.push(f);
      if (s !== undefined) synced.push(s);
      await stopOp();
    }
    report.add({
      section: SECTION,
      name: `start-up: process spawn to first reconcile (${fmt(n)} RateLimits present)`,
      value: seconds(median(first)),
      unit: "s",
      target: { of: "value", op: "<=", bound: 1 },
      note: `median of ${o.startupRuns}: ${
        first.map((x) => fmt(seconds(x), 2)).join(", ")
      } s; caches synced ` +
        `and leading at ${
          synced.map((x) =>
            fmt(seconds(x), 2)
          ).join(", ")
        } s (JSON log ts minus spawn time)`,
    });

    // Memory with many more RateLimits watched (no Pods), 1,000 a namespace.
    const p = await startOp("bench-memory");
    const extra = o.memoryMax - n;
    if (extra > 0) {
      const namespaces = Array.from(
        { length: Math.ceil(extra / 1000) },
        (_, k) => `bench-mem-${k}`,
      );
      const watches: ReadyWatch[] = [];
      const objects: KubeObject[] = [];
      for (const [k, ns] of namespaces.entries()) {
        await env.namespace(ns);
        const w = new ReadyWatch(env.api, ns);
        await w.start();
        watches.push(w);
        const size = Math.min(1000, extra - k * 1000);
        objects.push(...workload(size, o.rules, ns, false));
      }
      const m0 = Date.now();
      await env.createAll(objects, o.width);
      for (const [k, w] of watches.entries()) {
        await w.whenReady(Math.min(1000, extra - k * 1000), 3_600_000);
      }
      watches.forEach((w) => void w.stop());
      say(
        `${fmt(extra)} more RateLimits created and Ready in ${fmt(seconds(Date.now() - m0), 1)} s`,
      );
    }
    await waitIdle(p, 5_000, 3_600_000);
    const memMax = await memoryOf(p.pid);
    report.add({
      section: SECTION,
      name: `operator resident memory, ${fmt(o.memoryMax)} RateLimits watched`,
      value: memMax.rssMb,
      unit: "MB",
      ...(o.memoryMax >= 10_000 ? { target: { of: "value", op: "<=", bound: 150 } } : {}),
      note: `VmRSS after the operator went idle; peak (VmHWM) ${fmt(memMax.peakMb, 1)} MB; ` +
        `${fmt(n)} with Pods, the rest without; EnvoyFilters as many`,
    });
  } finally {
    await stopOp().catch(() => {});
    await env.down();
  }
}

/** Steady state after the first operator run: writes in a quiet window, and memory. */
async function steadyState(
  report: Report,
  env: BenchCluster,
  op: OperatorProcess,
  o: ClusterOptions,
  n: number,
  idleRssMb: number,
): Promise<void> {
  const since = Date.now();
  await new Promise((r) => setTimeout(r, o.steadyMs));
  const writes = await env.handle.writes({ user: OPERATOR_USER, sinceMs: since });
  const leases = writes.filter((w) => w.objectRef?.resource === "leases");
  const other = writes.filter((w) => w.objectRef?.resource !== "leases");
  const byResource = new Map<string, number>();
  for (const w of other) {
    const k = `${w.verb} ${w.objectRef?.resource ?? "?"}${
      w.objectRef?.subresource ? `/${w.objectRef.subresource}` : ""
    }`;
    byResource.set(k, (byResource.get(k) ?? 0) + 1);
  }
  report.add({
    section: SECTION,
    name: `API writes in ${fmt(o.steadyMs / 1000)} s of steady state, ${fmt(n)} RateLimits`,
    value: other.length,
    unit: "writes",
    target: { of: "value", op: "<=", bound: 0 },
    note:
      `from the audit log (user ${OPERATOR_USER}); leader Lease renewals counted apart: ${leases.length}` +
      (other.length > 0
        ? `; writes: ${[...byResource].map(([k, v]) => `${k} ×${v}`).join(", ")}`
        : ""),
  });
  report.add({
    section: SECTION,
    name: "operator resident memory, 0 RateLimits watched",
    value: idleRssMb,
    unit: "MB",
    note: "VmRSS from /proc/<pid>/status once synced and idle",
  });
  const m = await memoryOf(op.pid);
  report.add({
    section: SECTION,
    name: `operator resident memory, ${fmt(n)} RateLimits watched`,
    value: m.rssMb,
    unit: "MB",
    note: `VmRSS after converging and ${fmt(o.steadyMs / 1000)} s idle; peak (VmHWM) ${
      fmt(m.peakMb, 1)
    } MB; ${fmt(n)} Pods and EnvoyFilters too`,
  });
}
