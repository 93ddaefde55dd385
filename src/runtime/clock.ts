/** Time and chance: the runtime gets both from here so the simulator can replace them. */

/** A source of time. The live one is the system clock; the simulator's is virtual. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
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

/** The system clock. */
export const systemClock: Clock = {
  now: () => Date.now(),
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

/** Math.random as a Random. */
export const systemRandom: Random = { next: () => Math.random() };

export { kubeTime } from "../api/time.ts";
