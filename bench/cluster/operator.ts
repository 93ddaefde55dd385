/**
 * The operator under bench: the same process `deno task start` runs (via the e2e harness's
 * OperatorProcess), with what the benches read of it: readiness, resident memory from
 * /proc/<pid>/status, metrics, and the timestamps of its JSON log.
 */
import { join } from "node:path";
import { OperatorProcess } from "../../tools/operator/process.ts";
import { BENCH_DIR, until } from "./env.ts";

/**
 * Environment variable: V8 flags added to the operator's own (`--v8-flags=...` beside
 * OPERATOR_DENO_FLAGS'), for the operator and for the floors it is judged against, so a flag's
 * worth is measured the same way as the operator is (docs/benchmarks.md, "What the idle figure is
 * made of"). Not for an image: its flags are its own.
 */
export const OPERATOR_V8_FLAGS_ENV = "BENCH_OPERATOR_V8_FLAGS";

/** The Deno arguments OPERATOR_V8_FLAGS_ENV adds: none when it is unset or empty. */
export function extraDenoArgs(): string[] {
  const flags = Deno.env.get(OPERATOR_V8_FLAGS_ENV)?.trim();
  return flags ? [`--v8-flags=${flags}`] : [];
}

/**
 * Environment variable: a directory where each operator process (not the floors) writes a V8 CPU
 * profile when it exits (`--cpu-prof --cpu-prof-dir=DIR`); `bench/profile.ts FILE` reads one.
 */
export const OPERATOR_CPU_PROF_ENV = "BENCH_OPERATOR_CPU_PROF";

/** The Deno arguments OPERATOR_CPU_PROF_ENV adds: none when it is unset or empty. */
export function cpuProfArgs(): string[] {
  const dir = Deno.env.get(OPERATOR_CPU_PROF_ENV)?.trim();
  return dir ? ["--cpu-prof", `--cpu-prof-dir=${dir}`] : [];
}

/**
 * Starts the operator against the bench cluster as user `platform-operator`, with the flags of
 * deploy/deployment.yaml (leader election on, so the Lease is renewed as in production), and
 * OPERATOR_V8_FLAGS_ENV's V8 flags and OPERATOR_CPU_PROF_ENV's profile when run from a tree.
 */
export function startOperator(
  kubeconfig: string,
  identity: string,
  logLevel: "info" | "debug" = "info",
  root?: string,
  image?: string,
): Promise<OperatorProcess> {
  return OperatorProcess.start({
    kubeconfig,
    identity,
    logDir: join(BENCH_DIR, "logs"),
    logLevel,
    leaderElect: true,
    ...(root ? { root } : {}),
    ...(image ? { image } : { denoArgs: [...extraDenoArgs(), ...cpuProfArgs()] }),
  });
}

/** Environment variable: run the operator from another tree (a before/after comparison). */
export const OPERATOR_ROOT_ENV = "BENCH_OPERATOR_ROOT";
/** A second tree whose operator the crowded phase measures beside it, as "before" (crowded.ts). */
export const BEFORE_OPERATOR_ROOT_ENV = "BENCH_BEFORE_OPERATOR_ROOT";

/** Waits until `/readyz` answers 200 (caches synced, leading); fails early if the process exits. */
export async function waitReady(op: OperatorProcess, timeoutMs = 120_000): Promise<void> {
  await until(
    `operator ${op.identity} /readyz`,
    async () => {
      if (!op.running) throw new Error(`operator exited early:\n${await op.logTail()}`);
      const res = await fetch(`http://${op.probeAddr}/readyz`, {
        signal: AbortSignal.timeout(2000),
      });
      await res.body?.cancel();
      return res.ok;
    },
    timeoutMs,
    100,
  );
  if (!op.running) throw new Error(`operator exited early:\n${await op.logTail()}`);
}

/** A process's memory, in MB (MiB), from /proc/<pid>/status. */
export interface Memory {
  /** Resident (VmRSS). */
  rssMb: number;
  /** The most it was resident since it started (VmHWM). */
  peakMb: number;
  /** Of the resident, anonymous pages (RssAnon): heaps, buffers, stacks. */
  anonMb: number;
  /**
   * Of the resident, file-backed pages (RssFile): the pages of its binary and libraries it touched,
   * shared with other processes of the same file, counted whole in each.
   */
  fileMb: number;
}

/** Resident, peak and the resident's anonymous and file-backed parts, from /proc/<pid>/status. */
export async function memoryOf(pid: number): Promise<Memory> {
  const text = await Deno.readTextFile(`/proc/${pid}/status`);
  const kb = (field: string) => {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text);
    if (!m) throw new Error(`no ${field} in /proc/${pid}/status`);
    return Number(m[1]);
  };
  return {
    rssMb: kb("VmRSS") / 1024,
    peakMb: kb("VmHWM") / 1024,
    anonMb: kb("RssAnon") / 1024,
    fileMb: kb("RssFile") / 1024,
  };
}

/** Sum of the samples of metric `name` whose labels include every pair of `labels`. */
export function metricSum(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-z_]+)(\{([^}]*)\})?\s+(\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries(
      [...(m[3] ?? "").matchAll(/([a-zA-Z_]+)="([^"]*)"/g)].map((x) => [x[1], x[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[4]);
  }
  return sum;
}

/** Reconciles so far and keys queued, as a process's metrics say; undefined when unreadable. */
export type WorkProbe = () => Promise<{ total: number; depth: number } | undefined>;

/** The operator's work, from its metrics. */
export function operatorWork(op: OperatorProcess): WorkProbe {
  return async () => {
    const text = await op.metrics();
    if (!text) return undefined;
    return {
      total: metricSum(text, "platform_operator_reconcile_total"),
      depth: metricSum(text, "platform_operator_queue_depth"),
    };
  };
}

/**
 * Waits until a process is idle: empty queues and no reconcile for `quietMs`. Resolves with the
 * number of reconciles it made so far.
 */
export async function waitIdleBy(
  what: string,
  work: WorkProbe,
  quietMs: number,
  timeoutMs: number,
): Promise<number> {
  let last = -1;
  let since = Date.now();
  return await until(
    `${what} idle`,
    async () => {
      const w = await work();
      if (!w) return undefined;
      if (w.total !== last || w.depth > 0) {
        last = w.total;
        since = Date.now();
        return undefined;
      }
      return Date.now() - since >= quietMs ? w.total : undefined;
    },
    timeoutMs,
    500,
  );
}

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat. */
export async function cpuSeconds(pid: number): Promise<number> {
  const text = await Deno.readTextFile(`/proc/${pid}/stat`);
  // Fields after the parenthesised command name; utime and stime are the 14th and 15th.
  const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(rest[11]) + Number(rest[12]);
  return ticks / 100; // USER_HZ is 100 on Linux
}

/**
 * Its first reconcile from its log, in milliseconds from spawn (lines from before the spawn are
 * not its own): done is the first `reconciled` line's timestamp, begun that less the reconcile's
 * own `ms`. A reconcile that wrote nothing and only asked to be run again (`requeue_after`) is not
 * counted: at start-up a RateLimit looked at before the EnvoyFilter list has come in does just
 * that (its filter is unknown, not absent), and the bench's RateLimits, all Ready, otherwise end
 * `success`.
 */
export async function firstReconcileOf(
  op: Pick<OperatorProcess, "startedAt" | "logLines">,
): Promise<FirstReconcile | undefined> {
  const since = (l: Record<string, unknown>) =>
    typeof l.ts === "string" ? Date.parse(l.ts) - op.startedAt : NaN;
  const line = (await op.logLines()).find((l) =>
    l.msg === "reconciled" && since(l) >= 0 && !isOnlyRequeue(l)
  );
  if (!line) return undefined;
  const done = since(line);
  return { begunMs: done - (typeof line.ms === "number" ? line.ms : 0), doneMs: done };
}

/** A `reconciled` log line of a reconcile that wrote nothing and only asked to run again. */
export function isOnlyRequeue(line: Record<string, unknown>): boolean {
  return line.result === "requeue_after" && line.writes === 0;
}

/** When a subject's first reconcile began and, once it has, ended (ms from spawn). */
export interface FirstReconcile {
  begunMs: number;
  doneMs?: number;
}

/** The machine's load average over 1, 5 and 15 minutes (/proc/loadavg), "" when unreadable. */
export async function loadAverage(): Promise<string> {
  const text = await Deno.readTextFile("/proc/loadavg").catch(() => "");
  return text.split(" ").slice(0, 3).join(" ");
}
