/**
 * Envoy's continuous token bucket, Envoy v1.31.0 and later: `AtomicTokenBucketImpl` in
 * `source/common/common/token_bucket_impl.{h,cc}`, wrapped by `AtomicTokenBucket` (v1.31.0 to
 * v1.33.x) and `RateLimitTokenBucket` (v1.34.0+) in
 * `source/extensions/filters/common/local_ratelimit/local_ratelimit_impl.{h,cc}`, with the same
 * arithmetic. Envoy keeps one number T
 * (`time_in_seconds_`), the instant the bucket would have been empty:
 *
 *     fill_rate = max(tokens_per_fill / fill_interval_seconds, 1 / (365 × 24 × 3600))
 *     tokens(now) = min(max_tokens, (now − T) × fill_rate)         starts full: T = start − max / rate
 *     consume:   tokens(now) < 1 → refused, T unchanged;  else T = now − (tokens(now) − 1) / fill_rate
 *     x-ratelimit-remaining = uint64(tokens(now))
 *     x-ratelimit-reset = uint64(ms((1 − tokens) / fill_rate × 1000) / 1000), 0 when tokens ≥ 1
 *
 * `fill_interval` is a `std::chrono::milliseconds` there (whole milliseconds). Envoy computes in
 * doubles of its monotonic clock, whose origin a model cannot know; the model keeps the same
 * quantities exactly instead: tokens times the fill interval in nanoseconds, an integer whenever
 * request times are whole nanoseconds (Go durations are), so "exactly one token accrued" admits,
 * as `total < 1 ? refuse : take` does on exact inputs. The reset header keeps Envoy's doubles.
 */
import type { BucketSpec } from "./bucket.ts";

/** The slowest fill Envoy allows: one token a year (`kMinFillRate`). */
const MIN_FILL_RATE = 1 / (365 * 24 * 60 * 60);
const NS_PER_MS = 1e6;

/** A continuous bucket: the level is tokens × `unit`, exact. */
export interface ContinuousBucket {
  readonly spec: BucketSpec;
  /** Takes one token at `nowMs` if a whole one has accrued; true when taken. */
  consume(nowMs: number): boolean;
  /** Tokens at `nowMs`, fractional. Earlier times than the last look change nothing. */
  tokensAt(nowMs: number): number;
  /** Whole tokens at `nowMs` (x-ratelimit-remaining). */
  wholeTokens(nowMs: number): number;
  /** x-ratelimit-reset at `nowMs` as Envoy ≥ 1.35 computes it. */
  resetSeconds(nowMs: number): number;
}

/** Nanoseconds a token takes: the fill interval in whole ms over tokens_per_fill, floored at a year. */
function unitNs(spec: BucketSpec): number {
  const intervalMs = Math.floor(spec.fillIntervalMs);
  const rate = Math.max(spec.tokensPerFill / (intervalMs / 1000), MIN_FILL_RATE);
  // With the one-token-a-year floor in force, a token takes exactly a year.
  return rate === MIN_FILL_RATE
    ? 365 * 24 * 3600 * 1e9 * spec.tokensPerFill
    : intervalMs * NS_PER_MS;
}

/** Envoy's reset arithmetic in doubles, from exact tokens. */
function resetOf(spec: BucketSpec, tokens: number): number {
  if (tokens >= 1) return 0;
  const rate = Math.max(
    spec.tokensPerFill / (Math.floor(spec.fillIntervalMs) / 1000),
    MIN_FILL_RATE,
  );
  const ms = Math.trunc(((1 - tokens) / rate) * 1000);
  return Math.floor(ms / 1000);
}

/** Exact in doubles: every level fits in 2^53 because the cap does. */
class SmallBucket implements ContinuousBucket {
  #level: number;
  #atMs: number;
  constructor(
    readonly spec: BucketSpec,
    startMs: number,
    private readonly unit: number,
    private readonly cap: number,
  ) {
    this.#level = cap;
    this.#atMs = startMs;
  }

  #advance(nowMs: number): void {
    if (!(nowMs > this.#atMs)) return;
    const dt = Math.round((nowMs - this.#atMs) * NS_PER_MS);
    this.#atMs = nowMs;
    if (this.#level === this.cap) return;
    const added = dt * this.spec.tokensPerFill;
    // An unsafe product is beyond 2^53, so beyond the cap too.
    const room = this.cap - this.#level;
    this.#level = Number.isSafeInteger(added) && added < room ? this.#level + added : this.cap;
  }

  consume(nowMs: number): boolean {
    this.#advance(nowMs);
    if (this.#level < this.unit) return false;
    this.#level -= this.unit;
    return true;
  }

  tokensAt(nowMs: number): number {
    this.#advance(nowMs);
    return this.#level / this.unit;
  }

  wholeTokens(nowMs: number): number {
    this.#advance(nowMs);
    return (this.#level - (this.#level % this.unit)) / this.unit;
  }

  resetSeconds(nowMs: number): number {
    return resetOf(this.spec, this.tokensAt(nowMs));
  }
}

/** The same with BigInt, for caps (maxTokens × interval in ns) beyond 2^53. */
class BigBucket implements ContinuousBucket {
  #level: bigint;
  #atMs: number;
  readonly #unit: bigint;
  readonly #cap: bigint;
  constructor(readonly spec: BucketSpec, startMs: number, unit: number) {
    this.#unit = BigInt(unit);
    this.#cap = BigInt(spec.maxTokens) * this.#unit;
    this.#level = this.#cap;
    this.#atMs = startMs;
  }

  #advance(nowMs: number): void {
    if (!(nowMs > this.#atMs)) return;
    const dt = BigInt(Math.round((nowMs - this.#atMs) * NS_PER_MS));
    this.#atMs = nowMs;
    const level = this.#level + dt * BigInt(this.spec.tokensPerFill);
    this.#level = level < this.#cap ? level : this.#cap;
  }

  consume(nowMs: number): boolean {
    this.#advance(nowMs);
    if (this.#level < this.#unit) return false;
    this.#level -= this.#unit;
    return true;
  }

  tokensAt(nowMs: number): number {
    this.#advance(nowMs);
    const whole = this.#level / this.#unit;
    return Number(whole) + Number(this.#level % this.#unit) / Number(this.#unit);
  }

  wholeTokens(nowMs: number): number {
    this.#advance(nowMs);
    return Number(this.#level / this.#unit);
  }

  resetSeconds(nowMs: number): number {
    return resetOf(this.spec, this.tokensAt(nowMs));
  }
}

/** A full continuous bucket as of `startMs` (Envoy's `init_fill`). */
export function newContinuousBucket(spec: BucketSpec, startMs: number): ContinuousBucket {
  const unit = unitNs(spec);
  const cap = spec.maxTokens * unit;
  return Number.isSafeInteger(cap)
    ? new SmallBucket(spec, startMs, unit, cap)
    : new BigBucket(spec, startMs, unit);
}
