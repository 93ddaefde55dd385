/**
 * Idleness of a subject, used for memory readings only: a bench waits for empty queues and no
 * reconcile for a quiet period, at most IDLE_BOUND_MS, then takes the reading anyway and marks it.
 * Time to Ready never waits on idleness (ready.ts: when the last status says Ready, from watch
 * events), so a subject that never goes quiet still finishes every phase: the peer requeues each
 * RateLimit 3 minutes after its last reconcile, and on a slow machine its pass over 1,000 took
 * about 150 s with no gap between reconciles as long as 5 s.
 */
import { fmt } from "../stats.ts";
import { type Memory, memoryOf } from "./operator.ts";
import type { Running } from "./subject.ts";

/** The longest a bench waits for a subject to go idle before it reads memory anyway. */
export const IDLE_BOUND_MS = 120_000;

/** How a wait for idleness ended. */
export interface Settled {
  /** True when the subject went quiet within the bound. */
  idle: boolean;
  /** The bound the wait had. */
  boundMs: number;
  /** Its reconciles so far, when it went idle. */
  reconciles?: number;
}

/**
 * Waits until `r` has empty queues and made no reconcile for `quietMs`, at most `boundMs`; never
 * fails on a subject that keeps working, it says so instead.
 */
export async function settle(
  r: Pick<Running, "waitIdle">,
  quietMs: number,
  boundMs = IDLE_BOUND_MS,
): Promise<Settled> {
  try {
    return { idle: true, boundMs, reconciles: await r.waitIdle(quietMs, boundMs) };
  } catch {
    return { idle: false, boundMs };
  }
}

/** The mark a figure taken without idleness carries at the start of its note ("" when idle). */
export function idleMark(s: Settled): string {
  return s.idle
    ? ""
    : `NOT IDLE: still reconciling after the ${fmt(s.boundMs / 1000)} s bound, so taken then; `;
}

/** How memory is sampled once idle (or past the bound). */
export interface Sampling {
  everyMs: number;
  /** Sampled at least this long... */
  minMs: number;
  /** ...and until three samples in a row lie within 1 MB, at most this long. */
  maxMs: number;
}

const SAMPLING: Sampling = { everyMs: 5_000, minMs: 30_000, maxMs: 120_000 };

/**
 * Resident memory (MB) of a running subject once idle for `quietMs` (at most `boundMs`) and
 * settled: sampled every 5 s for at least 30 s and until three samples in a row lie within 1 MB
 * (at most 2 minutes). A garbage-collected runtime gives memory back some seconds after work stops
 * (V8's memory reducer about 20 s after the operator goes idle, Go's scavenger gradually), so an
 * early reading says more about when it was taken than about what is held. `mark` is the note's
 * prefix (idleMark); `peakMb` the most it held since it started (VmHWM), read at the end.
 */
export async function idleRss(
  r: Pick<Running, "waitIdle" | "pid">,
  quietMs: number,
  boundMs = IDLE_BOUND_MS,
  sampling: Sampling = SAMPLING,
): Promise<
  { mb: number; peakMb: number; settled: Settled; mark: string; split: string }
> {
  const settled = await settle(r, quietMs, boundMs);
  const samples: number[] = [];
  let last: Memory | undefined;
  const t0 = Date.now();
  for (;;) {
    last = await memoryOf(r.pid);
    samples.push(last.rssMb);
    const recent = samples.slice(-3);
    const steady = recent.length === 3 && Math.max(...recent) - Math.min(...recent) < 1;
    const took = Date.now() - t0;
    if ((steady && took >= sampling.minMs) || took >= sampling.maxMs) break;
    await new Promise((res) => setTimeout(res, sampling.everyMs));
  }
  const { peakMb } = await memoryOf(r.pid);
  return { mb: samples.at(-1)!, peakMb, settled, mark: idleMark(settled), split: rssSplit(last) };
}

/**
 * What a reading is made of, for its note: `of it 19.2 MB anonymous, 41.6 MB file-backed (…)`.
 * The file-backed part is the pages of Deno's binary (or the peer's) that the process touched, as
 * mapped; an idle process keeps them until the kernel needs the memory.
 */
export function rssSplit(m: Pick<Memory, "anonMb" | "fileMb">): string {
  return `of it ${fmt(m.anonMb, 1)} MB anonymous (heaps, buffers, stacks) and ${
    fmt(m.fileMb, 1)
  } MB file-backed (the pages of its binary and libraries it touched)`;
}
