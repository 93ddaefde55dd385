/** Properties of the Serverless reducer (fast-check, seeded): total, deterministic, pure, convergent. */
import assert from "node:assert/strict";
import fc from "fast-check";
import { parseServerless } from "../../src/api/serverless.ts";
import { rowOfStatus } from "../../src/reconcile/conditions.ts";
import { reconcileServerless, SERVERLESS_STATES } from "../../src/reconcile/serverless/mod.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { converge, inputOf, serverless, statusOf } from "./serverless_fixtures.ts";
import { claimHeldBy } from "./module_fixtures.ts";
import { testModuleProperties } from "./module_props.ts";

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

testModuleProperties({
  kind: "Serverless",
  arbSpec: arbServerlessSpec,
  object: (spec) => serverless(spec),
  inputOf,
  reconcile: reconcileServerless,
  converge: (w) => converge(w),
  table: SERVERLESS_STATES,
  numRuns: 150,
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
        claim: claimHeldBy("serverless", object),
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

Deno.test("Serverless: a spec field this operator does not know (a newer CRD) is refused, never ignored", () => {
  const { world: w } = converge({ object: serverless(), others: [], installed: [] });
  const newer = structuredClone(w.object!) as KubeObject;
  newer.spec = { ...newer.spec as Record<string, unknown>, profiling: { enabled: true } };
  const plan = reconcileServerless(inputOf({ ...w, object: newer }));
  const cond = statusOf(plan).conditions.find((c) => c.type === "Configured");
  assert.equal(cond?.reason, "ConfigurationCheckErr");
  assert.equal(
    cond?.message,
    "The Serverless object is invalid: spec.profiling: unknown field (this operator does not know it: is the CRD newer than the operator?)",
  );
  assert.deepEqual([plan.apply, plan.delete], [[], []]);
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
