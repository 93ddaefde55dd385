/**
 * Properties of reconcileRateLimit over generated worlds, valid and malformed: deterministic; the
 * input (spec included) is never changed; applying the Plan and reconciling again writes nothing;
 * it never throws; every status is a row of RATELIMIT_STATES.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import type { Condition } from "../../src/api/common.ts";
import { rowOfStatus } from "../../src/reconcile/conditions.ts";
import {
  ENFORCED_CONDITION,
  ENFORCED_ROWS,
  RATELIMIT_STATES,
  type RateLimitInput,
  reconcileRateLimit,
} from "../../src/reconcile/ratelimit/mod.ts";
import { renderedGeneration } from "../../src/reconcile/ratelimit/render.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { deepFreeze } from "../../src/api/json.ts";
import {
  applyPlan,
  pod,
  rateLimit,
  reconcileWorld,
  type World,
  writesOf,
} from "./ratelimit_fixtures.ts";

const bucketArb = fc.record({
  maxTokens: fc.oneof(fc.integer({ min: 1, max: 20 }), fc.constantFrom(0, -1, 1.5, "3", 2 ** 32)),
  tokensPerFill: fc.integer({ min: 1, max: 20 }),
  fillInterval: fc.constantFrom("10s", "30s", "1m", "45s", "2m", "100ms", "", "1h"),
});

const ruleArb = fc.record({
  path: fc.constantFrom("/a", "/b", "/a?x", "a"),
  headers: fc.dictionary(
    fc.constantFrom("X-A", "x-a", "X-B", "bad name"),
    fc.constantFrom("1", "2"),
  ),
  bucket: bucketArb,
}, { requiredKeys: ["bucket"] });

const labelsArb = fc.dictionary(
  fc.constantFrom("app", "tier", "bad key"),
  fc.constantFrom("x", "y"),
  {
    maxKeys: 2,
  },
);

/** A RateLimit in the namespace `demo`: mostly well-formed, sometimes not. */
const rateLimitArb = (name: string) =>
  fc.record({
    created: fc.constantFrom("2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z"),
    selectorLabels: labelsArb,
    defaultBucket: bucketArb,
    buckets: fc.array(ruleArb, { maxLength: 3 }),
    enableResponseHeaders: fc.boolean(),
    generation: fc.integer({ min: 1, max: 3 }),
  }).map((o) => rateLimit({ name, ...o }));

/** Anything at all where a RateLimit, or a part of one, should be. */
const garbageArb = fc.oneof(
  fc.anything(),
  rateLimitArb("httpbin").chain((rl) =>
    fc.tuple(fc.constantFrom("spec", "metadata", "status", "kind", "apiVersion"), fc.anything())
      .map(([k, v]) => ({ ...rl, [k]: v }))
  ),
);

const worldArb = fc.record({
  self: fc.oneof({ weight: 4, arbitrary: rateLimitArb("httpbin") }, {
    weight: 1,
    arbitrary: garbageArb,
  }),
  peers: fc.array(fc.oneof(rateLimitArb("peer-a"), rateLimitArb("peer-b"), garbageArb), {
    maxLength: 2,
  }),
  pods: fc.array(labelsArb.map((l) => pod("p", l)), { maxLength: 2 }),
  meshInstalled: fc.boolean(),
  now: fc.integer({ min: 1_600_000_000_000, max: 1_800_000_000_000 }),
});

function baseInput(w: {
  self: unknown;
  peers: unknown[];
  pods: KubeObject[];
  meshInstalled: boolean;
  now: number;
}): RateLimitInput {
  return {
    rateLimit: w.self,
    peers: w.peers,
    pods: w.pods,
    meshInstalled: w.meshInstalled,
    now: w.now,
  };
}

Deno.test("property: never throws, and every status is a row of the table with a message", () => {
  fc.assert(
    fc.property(worldArb, (w) => {
      const plan = reconcileRateLimit(deepFreeze(baseInput(w)));
      if (plan.status === undefined) return; // only a RateLimit being deleted writes no status
      const status = plan.status as {
        state: string;
        description: string;
        conditions: Condition[];
        podsSelected?: number;
        podsWithSidecar?: number;
      };
      assert.ok(rowOfStatus(RATELIMIT_STATES, status), JSON.stringify(status));
      assert.ok(status.description.length > 0);
      const [ready, enforced] = status.conditions;
      assert.ok(status.description.includes(ready.message.replace(/[.\s]+$/, "")));
      assert.equal(enforced.type, ENFORCED_CONDITION);
      assert.ok(
        ENFORCED_ROWS.some((r) => r.status === enforced.status && r.reason === enforced.reason),
        JSON.stringify(enforced),
      );
      assert.ok(enforced.message.length > 0);
      assert.ok((status.podsWithSidecar ?? 0) <= (status.podsSelected ?? 0));
      assert.equal(status.podsSelected === undefined, enforced.reason === "NotApplied");
    }),
    { seed: 42, numRuns: 500 },
  );
});

Deno.test("property: deterministic, and the input (spec included) is left as it was", () => {
  fc.assert(
    fc.property(worldArb, (w) => {
      const input = baseInput(w);
      const copy = structuredClone(input);
      // Frozen: any write into the input throws in this module's strict mode.
      const a = reconcileRateLimit(deepFreeze(input));
      const b = reconcileRateLimit(structuredClone(copy));
      assert.deepEqual(a, b);
      assert.deepEqual(structuredClone(input), copy);
      assert.ok(
        a.apply.every((o) => o.kind === "EnvoyFilter"),
        "the only object applied is the filter",
      );
    }),
    { seed: 42, numRuns: 300 },
  );
});

Deno.test("property: apply the Plan, reconcile again (later): no writes", () => {
  fc.assert(
    fc.property(worldArb, fc.integer({ min: 1, max: 10_000_000 }), (w, later) => {
      fc.pre(typeof w.self === "object" && w.self !== null && "metadata" in w.self);
      const base = baseInput(w);
      const start: World = { rateLimit: w.self as KubeObject };
      const first = reconcileWorld(start, base);
      const after = applyPlan(start, first);
      const second = reconcileWorld(after, { ...base, now: base.now + later });
      assert.deepEqual(writesOf(after, second), [], JSON.stringify(second.status));
    }),
    { seed: 42, numRuns: 300 },
  );
});

/**
 * After any edit: Ready enforces the new generation; Error keeps exactly the filter that was in
 * place before (the last good generation, or none), and the status names its generation.
 */
Deno.test("property: any change of spec converges in one more pass and loses nothing enforced", () => {
  fc.assert(
    fc.property(rateLimitArb("httpbin"), rateLimitArb("httpbin"), (before, edited) => {
      const base: RateLimitInput = {
        rateLimit: before,
        peers: [],
        pods: [],
        meshInstalled: true,
        now: 1e12,
      };
      let world: World = { rateLimit: before };
      world = applyPlan(world, reconcileWorld(world, base));
      const enforcedBefore = world.envoyFilter;
      // The user edits the spec (the API bumps the generation); the status written for `before`
      // stays until the next reconcile.
      const generation = before.metadata.generation! + 1;
      world = {
        ...world,
        rateLimit: {
          ...edited,
          metadata: { ...edited.metadata, generation },
          status: world.rateLimit.status,
        },
      };
      world = applyPlan(world, reconcileWorld(world, base));
      const status = world.rateLimit.status as { state: string; enforcedGeneration?: number };
      if (status.state === "Ready") {
        assert.ok(world.envoyFilter, "Ready without a filter");
        assert.equal(renderedGeneration(world.envoyFilter), generation);
        assert.equal(status.enforcedGeneration, generation);
      } else {
        assert.deepEqual(world.envoyFilter, enforcedBefore, "a refused edit changed the filter");
        assert.equal(
          status.enforcedGeneration,
          enforcedBefore ? before.metadata.generation : undefined,
        );
      }
      assert.deepEqual(writesOf(world, reconcileWorld(world, base)), []);
    }),
    { seed: 42, numRuns: 200 },
  );
});
