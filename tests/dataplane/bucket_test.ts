/** The discrete token bucket: examples, a reference model, and the admission bound. */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  type BucketSpec,
  consume,
  fillsDue,
  newBucket,
  nextFillAt,
  tokensAt,
} from "../../src/dataplane/mod.ts";

Deno.test("starts full; a fill due at t happens before a request at t; capped at maxTokens", () => {
  const b = newBucket({ maxTokens: 2, tokensPerFill: 1, fillIntervalMs: 1000 }, 5000);
  assert.equal(tokensAt(b, 5000), 2);
  assert.ok(consume(b, 5000) && consume(b, 5000));
  assert.ok(!consume(b, 5999), "empty before the first fill");
  assert.ok(consume(b, 6000), "the fill at 6000 comes first");
  assert.ok(!consume(b, 6000));
  assert.equal(tokensAt(b, 60_000), 2, "never above maxTokens");
  assert.equal(nextFillAt(b, 60_000), 61_000);
  assert.equal(fillsDue(b, 4000), 0, "no fills before the start");
});

Deno.test("tokensPerFill above maxTokens still caps the burst", () => {
  const b = newBucket({ maxTokens: 3, tokensPerFill: 10, fillIntervalMs: 1000 }, 0);
  for (let i = 0; i < 3; i++) assert.ok(consume(b, 0));
  assert.ok(!consume(b, 0));
  assert.equal(tokensAt(b, 1000), 3);
});

/**
 * An independent reference: walks every fill one at a time, in order, as Envoy's timer did, and
 * answers each request after the fills due by its time.
 */
function reference(spec: BucketSpec, start: number, times: number[]): boolean[] {
  let tokens = spec.maxTokens;
  let nextFill = start + spec.fillIntervalMs;
  return times.map((t) => {
    while (nextFill <= t) {
      tokens = Math.min(spec.maxTokens, tokens + spec.tokensPerFill);
      nextFill += spec.fillIntervalMs;
    }
    if (tokens >= 1) {
      tokens -= 1;
      return true;
    }
    return false;
  });
}

const specArb = fc.record({
  maxTokens: fc.integer({ min: 1, max: 20 }),
  tokensPerFill: fc.integer({ min: 1, max: 25 }),
  fillIntervalMs: fc.integer({ min: 50, max: 5000 }),
});

/** Non-decreasing arrival times from gaps (many zero gaps: bursts at one instant). */
const arrivalsArb = fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3000 })), {
  maxLength: 120,
}).map((gaps) => {
  let t = 0;
  return gaps.map((g) => (t += g));
});

Deno.test("property: the bucket agrees with the reference model", () => {
  fc.assert(
    fc.property(specArb, fc.integer({ min: 0, max: 10_000 }), arrivalsArb, (spec, start, rel) => {
      const times = rel.map((t) => t + start);
      const b = newBucket(spec, start);
      const got = times.map((t) => consume(b, t));
      assert.deepEqual(got, reference(spec, start, times));
    }),
    { seed: 42, numRuns: 400 },
  );
});

Deno.test("property: admitted by t <= maxTokens + tokensPerFill × fills by t", () => {
  fc.assert(
    fc.property(specArb, arrivalsArb, (spec, times) => {
      const b = newBucket(spec, 0);
      let admitted = 0;
      for (const t of times) {
        if (consume(b, t)) admitted++;
        const bound = spec.maxTokens + spec.tokensPerFill * Math.floor(t / spec.fillIntervalMs);
        assert.ok(admitted <= bound, `${admitted} admitted by ${t}, bound ${bound}`);
      }
    }),
    { seed: 42, numRuns: 400 },
  );
});

Deno.test("property: a full burst at any instant admits exactly the tokens available", () => {
  fc.assert(
    fc.property(specArb, fc.integer({ min: 0, max: 100_000 }), fc.nat(40), (spec, t, extra) => {
      const b = newBucket(spec, 0);
      const before = tokensAt(b, t);
      let admitted = 0;
      for (let i = 0; i < before + extra; i++) if (consume(b, t)) admitted++;
      assert.equal(admitted, before);
      assert.equal(tokensAt(b, t), 0);
    }),
    { seed: 42, numRuns: 200 },
  );
});
