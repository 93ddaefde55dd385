/**
 * Timing and statistics for the benchmarks: medians over repeated runs, a subject and its baseline
 * timed alternately in the same process (so a noisy neighbour slows both), and rates.
 */
import process from "node:process";

/** The median of `xs` (the mean of the two middle values for an even count); NaN when empty. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** The `p`-th percentile of `xs` by nearest rank (p99 of 50 samples is the largest); NaN when empty. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length, Math.max(1, Math.ceil((p / 100) * s.length))) - 1];
}

/** Items a second, from a count and a duration in milliseconds. */
export function perSecond(count: number, ms: number): number {
  return ms > 0 ? (count * 1000) / ms : Infinity;
}

/**
 * A loop to time: called once per run with the iteration count, it does `n` units of work and
 * returns something derived from them, which is kept so the optimiser cannot drop the work.
 */
export type Loop = (n: number) => unknown;

/** Options of {@link compareLoops}. */
export interface LoopOptions {
  /** Units of work a run. */
  n: number;
  /** Timed runs of each loop (the median is reported). */
  runs: number;
  /** Untimed runs of each loop first (JIT warm-up). Default 1. */
  warmup?: number;
  /**
   * Untimed runs go on, both loops in turn, until they took at least this long together (on
   * `clock`): V8 optimizes a function after it has run a while, and a reconcile's many functions
   * reach their last tier later than a parse's few, so a warm-up of one short run times the
   * subject while it is still being compiled. Default 0.
   */
  warmupMs?: number;
  /**
   * Each timed run calls its loop (with `n`) as many times as takes at least this long, found
   * after the warm-up: `n` cache reads take microseconds, too short to time against a timer's
   * resolution and a scheduler's slices. Default 0: once.
   */
  minMs?: number;
  /** What a run's time is; default `wall`. */
  clock?: Clock;
}

/**
 * `wall`: elapsed time. `cpu`: this process's CPU time (user and system, every thread: the
 * garbage collector's helpers count), which other processes on the machine do not lengthen as
 * they do elapsed time by taking turns on its cores; on a quiet machine the two are close.
 */
export type Clock = "wall" | "cpu";

function clockMs(clock: Clock): number {
  if (clock === "wall") return performance.now();
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** Medians of a subject loop and its baseline, as units a second. */
export interface LoopComparison {
  /** Subject: units a second (median over runs). */
  rate: number;
  /** Baseline: units a second (median over runs). */
  baselineRate: number;
  /**
   * Subject time a unit over baseline time a unit (≥ 1 when the subject does more work): the
   * median of each run's ratio to the baseline run just before it, so that load from other
   * processes, which comes and goes, weighs on both sides of each ratio alike.
   */
  ratio: number;
  /** Every run's milliseconds (for `calls` calls of its loop). */
  samples: { subject: number[]; baseline: number[] };
  /** Calls of each loop a timed run. */
  calls: { subject: number; baseline: number };
}

let sink: unknown;
/** The values loops returned, kept reachable (never read) so their work stays observable. */
export function blackhole(): unknown {
  return sink;
}

function timeCalls(loop: Loop, n: number, calls: number, clock: Clock = "wall"): number {
  const t0 = clockMs(clock);
  for (let i = 0; i < calls; i++) sink = loop(n);
  return clockMs(clock) - t0;
}

/**
 * Calls of `loop` (with `n`) that take at least `minMs` together: doubled from one until they do,
 * or scaled up at once when a run is far too short (at most 8 timed tries).
 */
function callsFor(loop: Loop, n: number, minMs: number, clock: Clock): number {
  let calls = 1;
  for (let tries = 0; minMs > 0 && tries < 8; tries++) {
    const ms = timeCalls(loop, n, calls, clock);
    if (ms >= minMs) break;
    calls = Math.max(calls * 2, Math.ceil((calls * minMs) / Math.max(ms, minMs / 1000)));
  }
  return calls;
}

/** The most untimed runs of each loop a `warmupMs` asks for (a loop of no work takes no time). */
const MAX_WARMUP = 10_000;

/**
 * Times `subject` and `baseline` alternately, `runs` times each, and compares them: their median
 * rates, and the median ratio of a subject run to the baseline run before it.
 */
export function compareLoops(subject: Loop, baseline: Loop, opts: LoopOptions): LoopComparison {
  const clock = opts.clock ?? "wall";
  const warmUntil = clockMs(clock) + (opts.warmupMs ?? 0);
  for (let i = 0; i < (opts.warmup ?? 1) || (clockMs(clock) < warmUntil && i < MAX_WARMUP); i++) {
    timeCalls(baseline, opts.n, 1, clock);
    timeCalls(subject, opts.n, 1, clock);
  }
  const minMs = opts.minMs ?? 0;
  const calls = {
    subject: callsFor(subject, opts.n, minMs, clock),
    baseline: callsFor(baseline, opts.n, minMs, clock),
  };
  const s: number[] = [];
  const b: number[] = [];
  const ratios: number[] = [];
  for (let i = 0; i < opts.runs; i++) {
    b.push(timeCalls(baseline, opts.n, calls.baseline, clock));
    s.push(timeCalls(subject, opts.n, calls.subject, clock));
    ratios.push((s[i] / calls.subject) / (b[i] / calls.baseline));
  }
  const rate = perSecond(opts.n * calls.subject, median(s));
  const baselineRate = perSecond(opts.n * calls.baseline, median(b));
  return { rate, baselineRate, ratio: median(ratios), samples: { subject: s, baseline: b }, calls };
}

/** Formats a number with thousands separators and at most `digits` decimals. */
export function fmt(x: number, digits = 0): string {
  if (!Number.isFinite(x)) return String(x);
  return x.toLocaleString("en-US", { maximumFractionDigits: digits });
}

/** Formats a rate compactly: 12.3 M, 45.6 k, 789. */
export function fmtRate(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  if (x >= 1e6) return `${fmt(x / 1e6, 2)} M`;
  if (x >= 1e4) return `${fmt(x / 1e3, 1)} k`;
  return fmt(x, x < 10 ? 2 : 0);
}
