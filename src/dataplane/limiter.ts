/**
 * One bucket of a proxy, whichever Envoy it follows: the interval bucket of Envoy ≤ 1.30
 * (`bucket.ts`, unchanged) or the continuous bucket of Envoy ≥ 1.31 (`continuous.ts`), with the
 * x-ratelimit header values that version sends.
 */
import {
  type BucketSpec,
  consume,
  fillResetSeconds,
  newBucket,
  type TokenBucket,
  tokensAt,
} from "./bucket.ts";
import { type ContinuousBucket, newContinuousBucket } from "./continuous.ts";
import type { EnvoyBehaviour } from "./envoy.ts";

/** A bucket as a proxy uses it. */
export interface RateBucket {
  readonly spec: BucketSpec;
  /** Takes one token at `nowMs` if there is a whole one; true when taken. */
  consume(nowMs: number): boolean;
  /** Tokens at `nowMs`, nothing taken (fractional in a continuous bucket). */
  tokensAt(nowMs: number): number;
  /** x-ratelimit-remaining at `nowMs`: whole tokens. */
  remaining(nowMs: number): number;
  /** x-ratelimit-reset at `nowMs` as this Envoy sends it; undefined when it sends none. */
  reset(nowMs: number): number | undefined;
}

class Interval implements RateBucket {
  readonly #b: TokenBucket;
  constructor(readonly spec: BucketSpec, startMs: number, private readonly sendReset: boolean) {
    this.#b = newBucket(spec, startMs);
  }
  consume(nowMs: number): boolean {
    return consume(this.#b, nowMs);
  }
  tokensAt(nowMs: number): number {
    return tokensAt(this.#b, nowMs);
  }
  remaining(nowMs: number): number {
    return Math.floor(tokensAt(this.#b, nowMs));
  }
  reset(nowMs: number): number | undefined {
    return this.sendReset ? fillResetSeconds(this.#b, nowMs) : undefined;
  }
}

class Continuous implements RateBucket {
  readonly #b: ContinuousBucket;
  constructor(readonly spec: BucketSpec, startMs: number, private readonly sendReset: boolean) {
    this.#b = newContinuousBucket(spec, startMs);
  }
  consume(nowMs: number): boolean {
    return this.#b.consume(nowMs);
  }
  tokensAt(nowMs: number): number {
    return this.#b.tokensAt(nowMs);
  }
  remaining(nowMs: number): number {
    return this.#b.wholeTokens(nowMs);
  }
  reset(nowMs: number): number | undefined {
    return this.sendReset ? this.#b.resetSeconds(nowMs) : undefined;
  }
}

/** A full bucket as of `startMs`, refilled the way `envoy` does. */
export function makeBucket(spec: BucketSpec, startMs: number, envoy: EnvoyBehaviour): RateBucket {
  return envoy.refill === "interval"
    ? new Interval(spec, startMs, envoy.reset === "fill")
    : new Continuous(spec, startMs, envoy.reset === "token");
}
