/**
 * The interval token bucket of Envoy up to v1.30.0 (`TimerTokenBucket` / `onFillTimer` in
 * `source/extensions/filters/common/local_ratelimit/local_ratelimit_impl.cc` at v1.30.0): a bucket
 * starts full when its filter is applied; every `fillIntervalMs` after that, `tokensPerFill` tokens
 * are added, capped at `maxTokens`; a fill due at time t happens before any request at time t.
 * Envoy v1.31.0 and later refill continuously instead (`continuous.ts`).
 *
 * Buckets are filled lazily: the number of fills due by `now` is computed from the start time, so
 * the result does not depend on how often anyone looks at the bucket.
 */

/** A bucket's configuration, as Envoy's `envoy.type.v3.TokenBucket` holds it. */
export interface BucketSpec {
  maxTokens: number;
  tokensPerFill: number;
  fillIntervalMs: number;
}

/** A bucket's mutable state. */
export interface TokenBucket {
  readonly spec: BucketSpec;
  /** When the filter holding this bucket was applied (epoch or virtual milliseconds). */
  readonly startMs: number;
  /** Fills applied so far. */
  fills: number;
  /** Tokens available after those fills and the consumptions since. */
  tokens: number;
}

/** A full bucket, started at `startMs`. */
export function newBucket(spec: BucketSpec, startMs: number): TokenBucket {
  return { spec, startMs, fills: 0, tokens: spec.maxTokens };
}

/** Fills due by `nowMs` (the fill at exactly `nowMs` included); 0 before the start. */
export function fillsDue(bucket: TokenBucket, nowMs: number): number {
  if (nowMs < bucket.startMs) return 0;
  return Math.floor((nowMs - bucket.startMs) / bucket.spec.fillIntervalMs);
}

/** Applies the fills due by `nowMs`. Time never runs backwards for a bucket: earlier times are no-ops. */
export function refill(bucket: TokenBucket, nowMs: number): void {
  const due = fillsDue(bucket, nowMs);
  if (due <= bucket.fills) return;
  const added = (due - bucket.fills) * bucket.spec.tokensPerFill;
  bucket.tokens = Math.min(bucket.spec.maxTokens, bucket.tokens + added);
  bucket.fills = due;
}

/** Tokens available at `nowMs`, fills applied, nothing consumed. */
export function tokensAt(bucket: TokenBucket, nowMs: number): number {
  refill(bucket, nowMs);
  return bucket.tokens;
}

/** Takes one token at `nowMs` if there is one; true when taken. */
export function consume(bucket: TokenBucket, nowMs: number): boolean {
  refill(bucket, nowMs);
  if (bucket.tokens < 1) return false;
  bucket.tokens -= 1;
  return true;
}

/** The time of the next fill after `nowMs`. */
export function nextFillAt(bucket: TokenBucket, nowMs: number): number {
  return bucket.startMs + (fillsDue(bucket, nowMs) + 1) * bucket.spec.fillIntervalMs;
}

/**
 * x-ratelimit-reset of Envoy v1.30.0 (`remainingFillInterval`): the fill interval in whole seconds
 * less the whole seconds since the bucket's last fill, truncated (`absl::ToInt64Seconds`).
 */
export function fillResetSeconds(bucket: TokenBucket, nowMs: number): number {
  const intervalMs = Math.floor(bucket.spec.fillIntervalMs);
  const lastFill = bucket.startMs + fillsDue(bucket, nowMs) * bucket.spec.fillIntervalMs;
  const since = Math.max(0, nowMs - lastFill);
  return Math.trunc((intervalMs - 1000 * Math.floor(since / 1000)) / 1000);
}

/** Tokens added per second on average: Envoy orders matched descriptors by this (lowest first). */
export function fillRate(spec: BucketSpec): number {
  return spec.tokensPerFill / (spec.fillIntervalMs / 1000);
}
