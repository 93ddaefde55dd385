/** Properties of the Serverless reducer (fast-check, seeded): total, deterministic, pure, convergent. */
import assert from "node:assert/strict";
import fc from "fast-check";
import { parseServerless } from "../../src/api/serverless.ts";
import { rowOfStatus } from "../../src/reconcile/conditions.ts";
import { reconcileServerless, SERVERLESS_STATES } from "../../src/reconcile/serverless.ts";
import type { KubeObject } from "../../src/runtime/cluster.ts";
import { converge, inputOf, serverless, statusOf } from "./serverless_fixtures.ts";
import { carryOut, type World } from "./singleton_world.ts";

const opt = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });

/** Specs mixing valid and invalid values of every field. */
export const arbServerlessSpec: fc.Arbitrary<Record<string, unknown>> = fc.record({
  eventing: opt(
    fc.record({
      endpoint: fc.constantFrom("http://ep.example/publish", "https://e.x:8443/p", "nope", ""),
    }),
  ),
  tracing: opt(
    fc.record({ endpoint: fc.constantFrom("http://otel:4318/v1/traces", "tcp://x", "http://") }),
  ),
  functionRequeueDuration: opt(fc.constantFrom("5m", "1h30m", "300ms", "0", "5x", "")),
  healthzLivenessTimeout: opt(fc.constantFrom("10s", "10", "1m", "0", "abc")),
  defaultRuntimePodPreset: opt(fc.constantFrom("XS", "S", "M", "L", "XL", "XXL")),
  logLevel: opt(fc.constantFrom("debug", "info", "error", "verbose")),
  logFormat: opt(fc.constantFrom("json", "console", "text")),
}, { requiredKeys: [] }).map((s) => JSON.parse(JSON.stringify(s)));

function deepFreeze<T>(v: T): T {
  if (v && typeof v === "object" && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

/** A world from nothing, or already installed from another spec, or claimed without Installed. */
const arbWorld: fc.Arbitrary<World> = fc.tuple(arbServerlessSpec, arbServerlessSpec, fc.nat(2)).map(
  ([a, b, start]) => {
    if (start === 0) return { object: serverless(b), others: [], installed: [] };
    const before = converge({ object: serverless(a), others: [], installed: [] }).world;
    const object = structuredClone(before.object!);
    object.spec = b;
    object.metadata.generation = 2;
    if (start === 2) delete object.status;
    return { ...before, object };
  },
);

Deno.test("Serverless: the same input gives the same Plan and the input is not changed", () => {
  fc.assert(
    fc.property(arbWorld, (w) => {
      const input = deepFreeze(inputOf(w));
      const copy = structuredClone(input);
      const a = reconcileServerless(input);
      const b = reconcileServerless(input);
      assert.deepEqual(a, b);
      assert.deepEqual(input, copy);
      assert.ok(
        a.apply.every((o) => o.kind !== "Serverless"),
        "never writes a Serverless (its spec)",
      );
    }),
    { seed: 42, numRuns: 150 },
  );
});

Deno.test("Serverless: carrying out the Plans reaches a fixpoint with zero writes", () => {
  fc.assert(
    fc.property(arbWorld, (start) => {
      let w = start;
      for (let pass = 0; pass < 6; pass++) {
        const plan = reconcileServerless(inputOf(w));
        assert.ok(
          rowOfStatus(SERVERLESS_STATES, statusOf(plan)),
          `not a row: ${JSON.stringify(plan.status)}`,
        );
        const quiet = plan.apply.length === 0 && plan.delete.length === 0 &&
          JSON.stringify(plan.status) === JSON.stringify(w.object?.status);
        if (quiet) {
          assert.deepEqual(plan.events, [], "no events without a change");
          const again = reconcileServerless(inputOf(carryOut(w, plan)));
          assert.deepEqual([again.apply, again.delete, again.status], [[], [], w.object?.status]);
          return;
        }
        w = carryOut(w, plan);
      }
      assert.fail(`no fixpoint within 6 passes for ${JSON.stringify(start.object?.spec)}`);
    }),
    { seed: 42, numRuns: 150 },
  );
});

/** Objects that are wrong in every way: anything at all, or a Serverless with junk in places. */
const arbMalformed: fc.Arbitrary<unknown> = fc.oneof(
  fc.anything(),
  fc.record({ spec: fc.anything() }).map(({ spec }) => ({ ...serverless(), spec })),
  fc.dictionary(
    fc.constantFrom(
      ...Object.keys(serverless({ logLevel: "x" }).spec as object),
      "eventing",
      "tracing",
    ),
    fc.anything(),
  )
    .map((spec) => serverless(spec)),
  fc.record({
    key: fc.constantFrom(
      "name",
      "namespace",
      "generation",
      "finalizers",
      "labels",
      "creationTimestamp",
    ),
    v: fc.anything(),
  })
    .map(({ key, v }) => {
      const o = serverless();
      (o.metadata as Record<string, unknown>)[key] = v;
      return o;
    }),
  fc.record({ k: fc.constantFrom("apiVersion", "kind", "metadata", "status"), v: fc.anything() })
    .map(({ k, v }) => ({ ...serverless(), [k]: v })),
);

Deno.test("Serverless: malformed objects never throw; they get an Error status with a message", () => {
  fc.assert(
    fc.property(arbMalformed, fc.array(fc.anything(), { maxLength: 3 }), (object, junkPeers) => {
      const plan = reconcileServerless({
        ...inputOf({ object: undefined, others: [], installed: [] }),
        object,
        peers: junkPeers,
      });
      const status = statusOf(plan);
      assert.ok(rowOfStatus(SERVERLESS_STATES, status), `not a row: ${JSON.stringify(status)}`);
      if (!parseServerless(object).ok) {
        assert.equal(status.state, "Error");
        const cond = status.conditions.find((c) => c.status === "False");
        assert.ok(cond && cond.message.length > 0, "an error condition with a message");
        assert.deepEqual(
          [plan.apply, plan.delete],
          [[], []],
          "nothing is installed from a malformed object",
        );
      }
    }),
    { seed: 42, numRuns: 400 },
  );
});

Deno.test("Serverless: a claimed object with an invalid spec keeps the installation and names the field", () => {
  const { world: w } = converge({ object: serverless(), others: [], installed: [] });
  const bad = structuredClone(w.object!) as KubeObject;
  bad.spec = { logLevel: 7 };
  const plan = reconcileServerless(inputOf({ ...w, object: bad }));
  assert.equal(statusOf(plan).state, "Error");
  const cond = statusOf(plan).conditions.find((c) => c.type === "Configured");
  assert.equal(cond?.reason, "ConfigurationCheckErr");
  assert.match(
    cond?.message ?? "",
    /^The Serverless object is invalid: spec\.logLevel: expected string, got 7$/,
  );
  assert.deepEqual([plan.apply, plan.delete], [[], []]);
  assert.equal(statusOf(plan).logLevel, "info", "the settings in use are still shown");
});
