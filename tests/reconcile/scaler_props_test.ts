/** Properties of the Scaler reducer (fast-check, seeded): total, deterministic, pure, convergent. */
import assert from "node:assert/strict";
import fc from "fast-check";
import { parseScaler } from "../../src/api/scaler.ts";
import { rowOfStatus } from "../../src/reconcile/conditions.ts";
import { reconcileScaler, SCALER_STATES } from "../../src/reconcile/scaler/mod.ts";
import { converge, inputOf, scaler, statusOf } from "./scaler_fixtures.ts";
import { claimHeldBy } from "./module_fixtures.ts";
import { testModuleProperties } from "./module_props.ts";

const opt = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
const component = <T>(arb: fc.Arbitrary<T>) =>
  fc.record({ operator: opt(arb), metricServer: opt(arb), admissionWebhook: opt(arb) }, {
    requiredKeys: [],
  });
const quantity = fc.constantFrom(
  "100m",
  "0.5",
  "1",
  "2000m",
  "64Mi",
  "1.5Gi",
  "1000Mi",
  "2Gi",
  "-1",
  "1e3",
);
const resources = fc.record({
  limits: opt(fc.record({ cpu: opt(quantity), memory: opt(quantity) }, { requiredKeys: [] })),
  requests: opt(fc.record({ cpu: opt(quantity), memory: opt(quantity) }, { requiredKeys: [] })),
}, { requiredKeys: [] });
const env = fc.record({
  name: fc.constantFrom(
    "A",
    "B",
    "POD_NAME",
    "KEDA_HTTP_MIN_TLS_VERSION",
    "WATCH_NAMESPACE",
    "X=Y",
  ),
  value: opt(fc.constantFrom("", "v", "TLS13")),
  valueFrom: opt(
    fc.constantFrom({ fieldRef: { fieldPath: "metadata.uid" } }, {
      secretKeyRef: { name: "s", key: "k" },
    }, {}),
  ),
}, { requiredKeys: ["name"] });
const annotations = fc.dictionary(
  fc.constantFrom(
    "a",
    "prometheus.io/scrape",
    "x.platform-project.io/y",
    "sidecar.istio.io/inject",
    "bad key",
  ),
  fc.constantFrom("true", "1"),
  { maxKeys: 3 },
);

/** Scaler specs mixing valid and invalid values of every field. */
const arbScalerSpec: fc.Arbitrary<Record<string, unknown>> = fc.record({
  istio: opt(fc.record({
    operator: opt(fc.record({ enabledSidecarInjection: fc.boolean() })),
    metricServer: opt(fc.record({ enabledSidecarInjection: fc.boolean() })),
  }, { requiredKeys: [] })),
  logging: opt(component(fc.record({
    level: opt(fc.constantFrom("debug", "info", "error")),
    format: opt(fc.constantFrom("json", "text", "console")),
    timeEncoding: opt(fc.constantFrom("epoch", "rfc3339", "iso8601")),
  }, { requiredKeys: [] }))),
  resources: opt(component(resources)),
  env: opt(fc.array(env, { maxLength: 3 })),
  podAnnotations: opt(component(annotations)),
}, { requiredKeys: [] }).map((s) => JSON.parse(JSON.stringify(s)));

testModuleProperties({
  kind: "Scaler",
  arbSpec: arbScalerSpec,
  object: (spec) => scaler(spec),
  inputOf,
  reconcile: reconcileScaler,
  converge: (w) => converge(w),
  table: SCALER_STATES,
  numRuns: 100,
});

const arbMalformed: fc.Arbitrary<unknown> = fc.oneof(
  fc.anything(),
  fc.anything().map((spec) => ({ ...scaler(), spec })),
  fc.dictionary(
    fc.constantFrom("istio", "logging", "resources", "env", "podAnnotations"),
    fc.anything(),
  )
    .map((spec) => scaler(spec)),
  fc.record({
    key: fc.constantFrom("name", "namespace", "generation", "finalizers", "deletionTimestamp"),
    v: fc.anything(),
  })
    .map(({ key, v }) => {
      const o = scaler();
      (o.metadata as Record<string, unknown>)[key] = v;
      return o;
    }),
  fc.record({ k: fc.constantFrom("apiVersion", "kind", "metadata", "status"), v: fc.anything() })
    .map(({ k, v }) => ({ ...scaler(), [k]: v })),
);

Deno.test("Scaler: malformed objects never throw; they get an Error status with a message", () => {
  fc.assert(
    fc.property(arbMalformed, fc.array(fc.anything(), { maxLength: 3 }), (object, junkPeers) => {
      const plan = reconcileScaler({
        ...inputOf({ object: undefined, others: [], installed: [] }),
        object,
        peers: junkPeers,
        claim: claimHeldBy("keda", object),
      });
      const status = statusOf(plan);
      assert.ok(rowOfStatus(SCALER_STATES, status), `not a row: ${JSON.stringify(status)}`);
      if (!parseScaler(object).ok && status.state !== "Deleting") {
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
