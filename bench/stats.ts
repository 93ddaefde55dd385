/**
 * Timing and statistics for the benchmarks: medians over repeated runs, a subject and its baseline
 * timed alternately in the same process (so a noisy neighbour slows both), and rates.
 */

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
}

/** Medians of a subject loop and its baseline, as units a second. */
export interface LoopComparison {
  /** Subject: units a second (median over runs). */
  rate: number;
  /** Baseline: units a second (median over runs). */
  baselineRate: number;
  /** Subject time a unit over baseline time a unit (≥ 1 when the subject does more work). */
  ratio: number;
  /** Every run's milliseconds. */
  samples: { subject: number[]; baseline: number[] };
}

let sink: unknown;
/** The values loops returned, kept reachable (never read) so their work stays observable. */
export function blackhole(): unknown {
  return sink;
}

function timeOnce(loop: Loop, n: number): number {
  const t0 = performance.now();
  sink = loop(n);
  return performance.now() - t0;
}

/** Times `subject` and `baseline` alternately, `runs` times each, and compares their medians. */
export function compareLoops(subject: Loop, baseline: Loop, opts: LoopOptions): LoopComparison {
  for (let i = 0; i < (opts.warmup ?? 1); i++) {
    timeOnce(baseline, opts.n);
    timeOnce(subject, opts.n);
  }
  const s: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < opts.runs; i++) {
    b.push(timeOnce(baseline, opts.n));
    s.push(timeOnce(subject, opts.n));
  }
  const rate = perSecond(opts.n, median(s));
  const baselineRate = perSecond(opts.n, median(b));
  return { rate, baselineRate, ratio: baselineRate / rate, samples: { subject: s, baseline: b } };
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
