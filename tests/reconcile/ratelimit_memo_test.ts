/**
 * What the RateLimit reducer remembers of frozen objects (render.ts `Known`: problems and the
 * filter's stored size) and how it indexes long frozen lists of peers and Pods (scope.ts `labelIndex`)
 * change no output: the Plan of a frozen input, reconciled once or again, under any byte budget,
 * is the Plan of the same input unfrozen, to the byte (key order included), and so with a
 * namespace of more peers and Pods than INDEX_MIN. The rates rewritten without BigInt read as
 * the ones they replaced.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { deepFreeze, storedBytes } from "../../src/api/json.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { type RateLimitInput, reconcileRateLimit } from "../../src/reconcile/ratelimit/mod.ts";
import { bucketRates, type FilterLimits } from "../../src/reconcile/ratelimit/input.ts";
import { INDEX_MIN } from "../../src/reconcile/ratelimit/scope.ts";
import { bucket, pod, rateLimit, withProxy } from "./ratelimit_fixtures.ts";

const labelsArb = fc.dictionary(
  fc.constantFrom("app", "tier", "istio"),
  fc.constantFrom("x", "y", "ingressgateway"),
  { maxKeys: 2 },
);

const ruleArb = fc.record({
  path: fc.constantFrom("/a", "/b", "/<&>"),
  headers: fc.dictionary(fc.constantFrom("X-A", "x-a", "X-B"), fc.constantFrom("1", "2")),
  perClient: fc.constantFrom(undefined, { header: "X-User" }, { clientIP: true }),
  bucket: fc.constantFrom(bucket(5, 1, "1s"), bucket(2, 2, "2m"), bucket(1, 1, "45s")),
}, { requiredKeys: ["bucket"] });

/** RateLimits of a few names, ages and namespaces, mostly valid, some not. */
const rateLimitArb = fc.record({
  name: fc.constantFrom("httpbin", "a", "b", "c"),
  namespace: fc.constantFrom("demo", "istio-system"),
  created: fc.constantFrom("2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z"),
  selectorLabels: labelsArb,
  buckets: fc.array(ruleArb, { maxLength: 3 }),
  enforce: fc.constantFrom(undefined, false),
}).map((o) => rateLimit({ ...o, uid: `uid-${o.namespace}-${o.name}` }));

const podArb = fc.record({
  name: fc.constantFrom("p", "q"),
  namespace: fc.constantFrom("demo", "istio-system"),
  labels: labelsArb,
  proxy: fc.constantFrom(undefined, "sidecar", "router"),
}).map(({ name, namespace, labels, proxy }) => {
  const p = pod(name, labels, namespace);
  return proxy ? withProxy(p, proxy as "sidecar" | "router") : p;
});

/** A world; `long` gives more peers and Pods than INDEX_MIN, so frozen lists are indexed. */
const worldArb = (long: boolean) =>
  fc.record({
    self: rateLimitArb,
    peers: fc.array(
      rateLimitArb,
      long ? { minLength: INDEX_MIN, maxLength: INDEX_MIN + 8 } : {
        maxLength: 4,
      },
    ),
    pods: fc.array(
      podArb,
      long ? { minLength: INDEX_MIN, maxLength: INDEX_MIN + 8 } : {
        maxLength: 4,
      },
    ),
    withFilter: fc.boolean(),
    withStatus: fc.boolean(),
  }).map((w): RateLimitInput => {
    const base: RateLimitInput = {
      rateLimit: w.self,
      peers: w.peers,
      pods: w.pods,
      meshInstalled: true,
      now: 1_700_000_000_000,
    };
    const first = reconcileRateLimit(structuredClone(base));
    const self = w.withStatus && first.status ? { ...w.self, status: first.status } : w.self;
    const filter = w.withFilter ? first.apply[0] : undefined;
    return { ...base, rateLimit: self, ...(filter ? { envoyFilter: filter } : {}) };
  });

/** The Plan as bytes: key order counts. */
function bytesOf(input: RateLimitInput): string {
  return JSON.stringify(reconcileRateLimit(input));
}

for (const long of [false, true]) {
  Deno.test(`property: frozen or not, once or again, any budget, the same Plan (${long ? "indexed lists" : "short lists"})`, () => {
    fc.assert(
      fc.property(worldArb(long), (w) => {
        const plain = bytesOf(structuredClone(w));
        const frozen = deepFreeze(structuredClone(w));
        assert.equal(bytesOf(frozen), plain);
        assert.equal(bytesOf(frozen), plain, "again: what was kept gives the same");
        // Frozen lists of unfrozen objects are not indexed; the Plan is the same either way.
        assert.equal(
          bytesOf({ ...structuredClone(w), peers: Object.freeze(structuredClone(w.peers)) }),
          plain,
        );
        const filter = JSON.parse(plain).apply[0] as KubeObject | undefined;
        const exact = filter ? storedBytes(filter) : 2000;
        for (const budget of [exact + 1, exact, exact - 1, 100]) {
          assert.equal(
            bytesOf({ ...frozen, maxFilterBytes: budget }),
            bytesOf({ ...structuredClone(w), maxFilterBytes: budget }),
            `budget ${budget}`,
          );
        }
      }),
      { seed: 47, numRuns: long ? 150 : 400 },
    );
  });
}

/** bucketRates as it computed before: BigInt products, a regular expression for the interval. */
function bucketRatesByBigInt(limits: FilterLimits, pods: number) {
  return limits.buckets.map((b) => {
    const m = /^(\d+)s$/.exec(b.fillInterval);
    const s = m ? BigInt(m[1]) : 0n;
    const per = m && s > 0n && s % 60n === 0n ? `${s / 60n}m` : b.fillInterval;
    return {
      bucket: b.bucket,
      perPod: `${b.tokensPerFill}/${per}`,
      workload: `${BigInt(b.tokensPerFill) * BigInt(pods)}/${per}`,
    };
  });
}

Deno.test("property: rates are those BigInt arithmetic gives, past 2^53 too", () => {
  const refill = fc.record({
    bucket: fc.constant("default"),
    maxTokens: fc.nat(),
    tokensPerFill: fc.oneof(
      fc.integer({ min: 0, max: 9_999_999_999 }),
      fc.constantFrom(4294967295, 9_999_999_967),
    ),
    fillInterval: fc.oneof(
      fc.stringMatching(/^[0-9]{1,20}s$/),
      // The last is 60 × 16666666666666667, which a Number reads as 10^18.
      fc.constantFrom("60s", "0s", "0060s", "120s", "59s", "1m", "x", "1000000000000000020s"),
    ),
  });
  // Products past 2^53 that a Number would round (not all of them print differently).
  const pods = fc.oneof(
    fc.integer({ min: 0, max: 1000 }),
    fc.constantFrom(2_000_000_011, 999_999_937),
  );
  fc.assert(
    fc.property(fc.array(refill, { minLength: 1, maxLength: 3 }), pods, (buckets, n) => {
      const limits = { shadow: false, buckets };
      assert.deepEqual(bucketRates(limits, n), bucketRatesByBigInt(limits, n));
    }),
    { seed: 47, numRuns: 2000 },
  );
});

Deno.test("a frozen RateLimit's filter is sized again when it is rendered for other contexts", () => {
  const rl = deepFreeze(rateLimit({ selectorLabels: { app: "x" } }));
  const sidecar = withProxy(pod("s", { app: "x" }), "sidecar");
  const gateway = withProxy(pod("g", { app: "x" }), "router");
  const base: RateLimitInput = {
    rateLimit: rl,
    peers: [],
    pods: [sidecar],
    meshInstalled: true,
    now: 1_700_000_000_000,
  };
  const one = reconcileRateLimit(base).apply[0];
  const both = reconcileRateLimit({ ...base, pods: [sidecar, gateway] }).apply[0];
  assert.ok(one && both && storedBytes(both) > storedBytes(one), "two contexts render more");
  // The budget fits the one-context filter exactly: counted, kept; two contexts must not fit.
  const budget = storedBytes(one);
  const state = (pods: KubeObject[]) =>
    (reconcileRateLimit({ ...base, pods, maxFilterBytes: budget }).status as { state: string })
      .state;
  assert.equal(state([sidecar]), "Ready");
  assert.equal(state([sidecar, gateway]), "Error");
  assert.equal(state([sidecar]), "Ready");
});
