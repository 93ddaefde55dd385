/**
 * A reference for the token buckets, written directly from Envoy's code and nothing of the model:
 *
 * - Envoy v1.30.0, `source/extensions/filters/common/local_ratelimit/local_ratelimit_impl.cc`:
 *   a timer fires every default fill_interval; each tick adds tokens_per_fill to the default
 *   bucket and, on every N-th tick (N = descriptor / default interval), to each descriptor bucket,
 *   capped, and records `fill_time_`; a request takes one token if there is one.
 *   x-ratelimit-reset = `ToInt64Seconds(fill_interval - Seconds((now - fill_time) / 1s))`.
 * - Envoy v1.31.0+, `source/common/common/token_bucket_impl.{h,cc}` (`AtomicTokenBucketImpl`):
 *   one number, `time_in_seconds_` (T), kept here as an exact rational; tokens = min(max,
 *   (now - T) × fill_rate); consuming one moves T to now - (tokens - 1) / fill_rate.
 *   x-ratelimit-reset (v1.35.0+, `resetSeconds`): `uint64(ms((1 - tokens) / fill_rate × 1000)) / 1000`.
 *
 * Times are exact nanoseconds since the limit was applied (bigint).
 */

/** An exact rational. */
export class Q {
  readonly n: bigint;
  readonly d: bigint;
  constructor(n: bigint, d: bigint = 1n) {
    const sign = d < 0n ? -1n : 1n;
    const g = gcd(n < 0n ? -n : n, d < 0n ? -d : d) || 1n;
    this.n = (sign * n) / g;
    this.d = (sign * d) / g;
  }
  add(o: Q): Q {
    return new Q(this.n * o.d + o.n * this.d, this.d * o.d);
  }
  sub(o: Q): Q {
    return new Q(this.n * o.d - o.n * this.d, this.d * o.d);
  }
  mul(o: Q): Q {
    return new Q(this.n * o.n, this.d * o.d);
  }
  div(o: Q): Q {
    return new Q(this.n * o.d, this.d * o.n);
  }
  lt(o: Q): boolean {
    return this.n * o.d < o.n * this.d;
  }
  min(o: Q): Q {
    return o.lt(this) ? o : this;
  }
  floor(): bigint {
    const q = this.n / this.d;
    return this.n < 0n && q * this.d !== this.n ? q - 1n : q;
  }
  /** The nearest double (the quotient of two exact doubles when they fit, as Envoy's would be). */
  toNumber(): number {
    const whole = this.floor();
    return Number(whole) + Number(this.n - whole * this.d) / Number(this.d);
  }
}

function gcd(a: bigint, b: bigint): bigint {
  while (b) [a, b] = [b, a % b];
  return a;
}

/** A token bucket as the config holds it. */
export interface RefSpec {
  maxTokens: number;
  tokensPerFill: number;
  fillIntervalMs: number;
}

/** `kMinFillRate`: one token a year. */
const MIN_RATE = new Q(1n, 365n * 24n * 3600n);

/** `AtomicTokenBucketImpl` with init_fill, at fill_rate = tokens_per_fill / fill_interval (ms). */
export class RefAtomic {
  #t: Q;
  readonly #max: Q;
  readonly #rate: Q;
  readonly #rateDouble: number;
  /** `startNs`: when the bucket was made (full); 0, when the limit was applied, unless given. */
  constructor(readonly spec: RefSpec, startNs = 0n) {
    const intervalMs = BigInt(Math.floor(spec.fillIntervalMs));
    const rate = new Q(BigInt(spec.tokensPerFill) * 1000n, intervalMs);
    this.#rate = rate.lt(MIN_RATE) ? MIN_RATE : rate;
    this.#rateDouble = Math.max(
      spec.tokensPerFill / (Number(intervalMs) / 1000),
      1 / (365 * 24 * 3600),
    );
    this.#max = new Q(BigInt(spec.maxTokens));
    this.#t = new Q(startNs, 1_000_000_000n).sub(this.#max.div(this.#rate));
  }
  #total(nowNs: bigint): Q {
    const now = new Q(nowNs, 1_000_000_000n);
    return this.#max.min(now.sub(this.#t).mul(this.#rate));
  }
  consume(nowNs: bigint): boolean {
    const total = this.#total(nowNs);
    if (total.lt(new Q(1n))) return false;
    this.#t = new Q(nowNs, 1_000_000_000n).sub(total.sub(new Q(1n)).div(this.#rate));
    return true;
  }
  remaining(nowNs: bigint): number {
    return Number(this.#total(nowNs).floor());
  }
  reset(nowNs: bigint): number {
    const tokens = this.#total(nowNs).toNumber();
    if (tokens >= 1) return 0;
    return Math.floor(Math.trunc(((1 - tokens) / this.#rateDouble) * 1000) / 1000);
  }
}

/** One bucket of the v1.30 limiter. */
export interface RefTimerBucket {
  spec: RefSpec;
  tokens: number;
  fillTimeNs: bigint;
  /** Refilled on every `multiplier`-th tick. */
  multiplier: number;
}

/** `LocalRateLimiterImpl` of v1.30.0: the default bucket's timer drives every bucket. */
export class RefTimerLimiter {
  readonly buckets: RefTimerBucket[];
  #ticks = 0;
  readonly #tickNs: bigint;
  /** `specs[0]` is the default bucket; the rest are descriptor buckets. */
  constructor(specs: RefSpec[]) {
    this.#tickNs = BigInt(specs[0].fillIntervalMs) * 1_000_000n;
    this.buckets = specs.map((spec) => ({
      spec,
      tokens: spec.maxTokens,
      fillTimeNs: 0n,
      multiplier: spec.fillIntervalMs / specs[0].fillIntervalMs,
    }));
  }
  /** Fires the ticks due by `nowNs` (a tick at exactly `nowNs` fires first). */
  advance(nowNs: bigint): void {
    while (BigInt(this.#ticks + 1) * this.#tickNs <= nowNs) {
      this.#ticks++;
      const at = BigInt(this.#ticks) * this.#tickNs;
      for (const b of this.buckets) {
        if (this.#ticks % b.multiplier !== 0) continue;
        b.tokens = Math.min(b.spec.maxTokens, b.tokens + b.spec.tokensPerFill);
        b.fillTimeNs = at;
      }
    }
  }
  consume(i: number, nowNs: bigint): boolean {
    this.advance(nowNs);
    const b = this.buckets[i];
    if (b.tokens === 0) return false;
    b.tokens--;
    return true;
  }
  remaining(i: number, nowNs: bigint): number {
    this.advance(nowNs);
    return this.buckets[i].tokens;
  }
  reset(i: number, nowNs: bigint): number {
    this.advance(nowNs);
    const b = this.buckets[i];
    const wholeSeconds = (nowNs - b.fillTimeNs) / 1_000_000_000n;
    return Math.trunc((Math.floor(b.spec.fillIntervalMs) - Number(wholeSeconds) * 1000) / 1000);
  }
}

/** What a generated RateLimit's proxy answers, by Envoy version, for the headers' values. */
export interface RefAnswer {
  admitted: boolean;
  limit: number;
  remaining: number;
  /** undefined when that Envoy sends no x-ratelimit-reset. */
  reset?: number;
}

/**
 * A limiter for a config of a default bucket and descriptor buckets where each request matches at
 * most one descriptor (the generated filter's shape: `always_consume_default_token_bucket: false`).
 * `version` is the Envoy minor version.
 */
export class RefLimiter {
  readonly #timer?: RefTimerLimiter;
  readonly #atomic: RefAtomic[];
  constructor(readonly specs: RefSpec[], readonly minor: number) {
    this.#timer = minor <= 30 ? new RefTimerLimiter(specs) : undefined;
    this.#atomic = specs.map((s) => new RefAtomic(s));
  }
  /** Bucket 0 is the default one; `i` is the matched descriptor's bucket, or 0. */
  request(i: number, nowNs: bigint): RefAnswer {
    const spec = this.specs[i];
    if (this.#timer) {
      const admitted = this.#timer.consume(i, nowNs);
      return {
        admitted,
        limit: spec.maxTokens,
        remaining: this.#timer.remaining(i, nowNs),
        reset: this.#timer.reset(i, nowNs),
      };
    }
    const b = this.#atomic[i];
    const admitted = b.consume(nowNs);
    return {
      admitted,
      limit: spec.maxTokens,
      remaining: b.remaining(nowNs),
      ...(this.minor >= 35 ? { reset: b.reset(nowNs) } : {}),
    };
  }
}
