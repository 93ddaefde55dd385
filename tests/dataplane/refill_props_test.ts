/**
 * The model's buckets against the reference written from Envoy's arithmetic (envoy_reference.ts),
 * in both behaviours: Envoy 1.30 (interval, reset = seconds to the next fill), 1.33 (continuous,
 * no reset header) and 1.38 (continuous, reset = seconds to the next token). Schedules have
 * fractional times, bursts at one instant, and gaps of exactly one token's time.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { type EnvoyBehaviour, envoyBehaviour, makeBucket } from "../../src/dataplane/mod.ts";
import { RefAtomic, RefLimiter, type RefSpec } from "./envoy_reference.ts";

const NS = 1_000_000;

function behaviour(v: string): EnvoyBehaviour {
  const b = envoyBehaviour(v);
  if (!b.ok) throw new Error(b.error);
  return b.value;
}
const VERSIONS = ["1.30", "1.33", "1.38"].map(behaviour);

/** Fill intervals as the CRD allows them (whole seconds or minutes) and as Envoy allows (≥ 50 ms). */
const intervalArb = fc.oneof(
  fc.integer({ min: 1, max: 120 }).map((s) => s * 1000),
  fc.integer({ min: 1, max: 10 }).map((m) => m * 60_000),
  fc.integer({ min: 50, max: 5000 }),
);

export const specArb: fc.Arbitrary<RefSpec> = fc.record({
  maxTokens: fc.integer({ min: 1, max: 20 }),
  tokensPerFill: fc.oneof(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 40 })),
  fillIntervalMs: intervalArb,
});

/** A gap before the next burst, in ns: none, a fraction, whole ms, or exactly k tokens' time. */
function gapArb(spec: RefSpec): fc.Arbitrary<number> {
  const tokenNs = (spec.fillIntervalMs * NS) / spec.tokensPerFill;
  const exact = Number.isInteger(tokenNs)
    ? [fc.integer({ min: 1, max: 3 }).map((k) => k * tokenNs)]
    : [];
  return fc.oneof(
    fc.constant(0),
    fc.integer({ min: 1, max: 5 * spec.fillIntervalMs * NS }),
    fc.integer({ min: 0, max: 5 * spec.fillIntervalMs }).map((ms) => ms * NS),
    ...exact,
    ...exact,
  );
}

/** Bursts: (gap in ns, how many requests at that instant). */
function scheduleArb(spec: RefSpec): fc.Arbitrary<Array<[number, number]>> {
  return fc.array(fc.tuple(gapArb(spec), fc.integer({ min: 1, max: 4 })), { maxLength: 40 });
}

const caseArb = specArb.chain((spec) =>
  fc.record({
    spec: fc.constant(spec),
    schedule: scheduleArb(spec),
    startMs: fc.constantFrom(0, 1_767_225_600_000),
  })
);

Deno.test("property: each bucket agrees with the reference (decisions, remaining, reset)", () => {
  fc.assert(
    fc.property(caseArb, ({ spec, schedule, startMs }) => {
      for (const envoy of VERSIONS) {
        const model = makeBucket(spec, startMs, envoy);
        const ref = new RefLimiter([spec], envoy.minor);
        let ns = 0;
        for (const [gap, count] of schedule) {
          // The epoch-sized start holds whole milliseconds only, as the simulator's clock does.
          ns += startMs === 0 ? gap : Math.round(gap / NS) * NS;
          const t = startMs + ns / NS;
          for (let i = 0; i < count; i++) {
            const want = ref.request(0, BigInt(ns));
            const got = {
              admitted: model.consume(t),
              limit: spec.maxTokens,
              remaining: model.remaining(t),
              ...(envoy.reset === "none" ? {} : { reset: model.reset(t) }),
            };
            assert.deepEqual(got, want, `Envoy ${envoy.version} at ${ns} ns, request ${i + 1}`);
          }
        }
      }
    }),
    { seed: 11, numRuns: 400 },
  );
});

Deno.test("property: caps beyond 2^53 (maxTokens × interval in ns) stay exact", () => {
  // Weeks-long intervals (a few tokens, then empty: the edges matter) and huge bursts.
  const bigSpec = fc.oneof(
    fc.record({
      maxTokens: fc.integer({ min: 1, max: 5 }),
      tokensPerFill: fc.oneof(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 4e9 })),
      fillIntervalMs: fc.integer({ min: 50_000, max: 900_000 }).map((m) => m * 60_000),
    }),
    fc.record({
      maxTokens: fc.integer({ min: 200_000, max: 4_294_967_295 }),
      tokensPerFill: fc.integer({ min: 1, max: 4_294_967_295 }),
      fillIntervalMs: fc.integer({ min: 1, max: 600 }).map((m) => m * 60_000),
    }),
  );
  const caseBig = bigSpec.chain((spec) =>
    fc.record({
      spec: fc.constant(spec),
      schedule: fc.array(
        fc.tuple(
          fc.oneof(gapArb(spec), fc.integer({ min: 0, max: 1e12 })),
          fc.integer({ min: 1, max: 3 }),
        ),
        { maxLength: 20 },
      ),
    })
  );
  fc.assert(
    fc.property(caseBig, ({ spec, schedule }) => {
      const model = makeBucket(spec, 0, behaviour("1.38"));
      const ref = new RefAtomic(spec);
      let ns = 0;
      for (const [gap, count] of schedule) {
        ns += gap;
        for (let i = 0; i < count; i++) {
          const at = `at ${ns} ns, request ${i + 1}`;
          assert.equal(model.consume(ns / NS), ref.consume(BigInt(ns)), at);
          assert.equal(model.remaining(ns / NS), ref.remaining(BigInt(ns)), at);
          assert.equal(model.reset(ns / NS), ref.reset(BigInt(ns)), at);
        }
      }
    }),
    { seed: 5, numRuns: 300 },
  );
});

Deno.test("the edge: exactly one token accrued admits; a nanosecond less does not", () => {
  // 2 tokens every 10 s: one token takes 5 s.
  const spec = { maxTokens: 2, tokensPerFill: 2, fillIntervalMs: 10_000 };
  for (const [t, want] of [[5000, true], [4999.999999, false]] as const) {
    const b = makeBucket(spec, 0, behaviour("1.38"));
    assert.ok(b.consume(0) && b.consume(0));
    assert.equal(b.consume(t), want, `at ${t} ms`);
    const ref = new RefAtomic(spec);
    ref.consume(0n);
    ref.consume(0n);
    assert.equal(ref.consume(BigInt(Math.round(t * NS))), want, `reference at ${t} ms`);
  }
  // 1 token every 3 s, from empty: 3 s later exactly one, at 2.999 s not yet.
  const third = makeBucket(
    { maxTokens: 1, tokensPerFill: 1, fillIntervalMs: 3000 },
    0,
    behaviour("1.38"),
  );
  assert.ok(third.consume(0));
  assert.equal(third.consume(2999), false);
  assert.equal(third.consume(3000), true);
});

Deno.test("the issue's example: 2 every 10s, requests at 0, 0, 5 s", () => {
  const spec = { maxTokens: 2, tokensPerFill: 2, fillIntervalMs: 10_000 };
  const run = (v: string) => {
    const b = makeBucket(spec, 0, behaviour(v));
    return [0, 0, 5000].map((t) => [b.consume(t), b.remaining(t), b.reset(t)]);
  };
  // 1.38: the third is admitted (one token accrued in 5 s); reset 0 while a whole token is left,
  // else the seconds to the next one (5 s after taking the accrued one).
  assert.deepEqual(run("1.38"), [[true, 1, 0], [true, 0, 5], [true, 0, 5]]);
  // 1.30: the timer adds 2 at 10 s only; reset counts down to that fill.
  assert.deepEqual(run("1.30"), [[true, 1, 10], [true, 0, 10], [false, 0, 5]]);
  // 1.33: continuous, but no reset header.
  assert.deepEqual(run("1.33").map(([a, r, x]) => [a, r, x]), [
    [true, 1, undefined],
    [true, 0, undefined],
    [true, 0, undefined],
  ]);
});

Deno.test("versions: accepted range, behaviours, refusals", () => {
  assert.equal(behaviour("1.38").refill, "continuous");
  assert.equal(behaviour("v1.30.2").refill, "interval");
  assert.equal(behaviour("1.31").reset, "none");
  assert.equal(behaviour("1.35").reset, "token");
  assert.equal(behaviour("1.33").multipleOfRule, true);
  assert.equal(behaviour("1.34").multipleOfRule, false);
  for (const bad of ["1.29", "1.39", "2.0", "1.3", "latest"]) {
    assert.equal(envoyBehaviour(bad).ok, false, bad);
  }
  const old = envoyBehaviour("1.22");
  assert.ok(!old.ok && /use 1\.30/.test(old.error));
});
