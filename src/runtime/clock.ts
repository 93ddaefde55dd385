/**
 * Time and chance, and the backoff built from them: the runtime gets all three from here so the
 * simulator can replace them (a backoff's jitter comes from the injected Random, so replays are exact).
 */

/** A source of time. The live one is the system clock; the simulator's is virtual. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /**
   * Milliseconds on a clock that never steps (`performance.now()` on the system clock), for
   * durations that must not move when the wall clock is set (NTP, a resumed VM): the leader
   * election's deadlines and a standby's timing of the Lease, as client-go's monotonic readings.
   * Absent on virtual clocks, whose `now()` never steps on its own: use `monotonicOf`.
   */
  monotonic?(): number;
  /** Resolves after `ms`; rejects with the signal's reason when `signal` aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * Resolves once pending timers and I/O have had a turn, so a long run of work that never waits
   * on I/O does not starve them. Absent on virtual clocks: there, nothing else is waiting.
   */
  yield?(): Promise<void>;
}

/** A source of chance in [0, 1). The live one is Math.random; the simulator's is its seeded PRNG. */
export interface Random {
  next(): number;
}

/** Milliseconds on `clock`'s monotonic clock, or its `now()` when it has none. */
export function monotonicOf(clock: Clock): number {
  return clock.monotonic?.() ?? clock.now();
}

/** The system clock. */
export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  sleep: (ms, signal) =>
    new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    }),
  yield: () => new Promise((resolve) => setTimeout(resolve, 0)),
};

/**
 * The reason to abort a timer's signal with when no one reads why: one shared value, since
 * `abort()` with no reason builds a DOMException, stack and all (a twentieth of a simulated run).
 */
export const TIMER_CANCELLED: Error = new Error("timer cancelled");

/** Math.random as a Random. */
export const systemRandom: Random = { next: () => Math.random() };

/* Jittered exponential backoff. */

/** Bounds of a backoff. */
export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  /** Growth per attempt; default 2. */
  factor?: number;
}

/**
 * The delay before retry number `attempt` (0-based): `initialMs × factor^attempt`, capped at
 * `maxMs`, then "equal jitter" (uniform in [d/2, d]) so that many retries do not move in step.
 */
export function backoffDelay(attempt: number, opts: BackoffOptions, random: Random): number {
  const raw = opts.initialMs * Math.pow(opts.factor ?? 2, Math.min(attempt, 64));
  const capped = Math.min(raw, opts.maxMs);
  return Math.round(capped / 2 + random.next() * (capped / 2));
}

/** A backoff that counts its own attempts. */
export class Backoff {
  #attempt = 0;
  constructor(readonly opts: BackoffOptions, readonly random: Random) {}
  /** The next delay; each call grows the following one. */
  next(): number {
    return backoffDelay(this.#attempt++, this.opts, this.random);
  }
  /** Back to the initial delay (after a success). */
  reset(): void {
    this.#attempt = 0;
  }
  /** Failures since the last reset. */
  get attempts(): number {
    return this.#attempt;
  }
}
