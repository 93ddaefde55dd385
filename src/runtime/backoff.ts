/** Jittered exponential backoff, with chance from the injected Random so replays are exact. */
import type { Random } from "./clock.ts";

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
