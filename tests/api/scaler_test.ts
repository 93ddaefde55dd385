/** Scaler: logging defaults one by one, every enum value, quantities, env, pruning. */
import assert from "node:assert/strict";
import { parseScaler, SCALER_COMPONENTS } from "../../src/api/scaler.ts";
import { errorsOf, scaler, valueOf } from "./fixtures.ts";

const LOGGING = { level: "info", format: "console", timeEncoding: "rfc3339" };
const ENUMS = {
  level: ["debug", "info", "error"],
  format: ["json", "text", "console"],
  timeEncoding: ["epoch", "millis", "nano", "iso8601", "rfc3339", "rfc3339nano"],
};

Deno.test("logging defaults for every component, with no spec, no logging or an empty one", () => {
  const all = Object.fromEntries(SCALER_COMPONENTS.map((c) => [c, LOGGING]));
  assert.deepEqual(valueOf(parseScaler(scaler())).spec, { logging: all });
  assert.deepEqual(valueOf(parseScaler(scaler({}))).spec.logging, all);
  assert.deepEqual(valueOf(parseScaler(scaler({ logging: {} }))).spec.logging, all);
  assert.deepEqual(valueOf(parseScaler(scaler({ logging: { operator: {} } }))).spec.logging, all);
});

Deno.test("logging fields default one by one: setting one keeps the others at their defaults", () => {
  for (const component of SCALER_COMPONENTS) {
    for (const [field, values] of Object.entries(ENUMS)) {
      for (const value of values) {
        const logging =
          valueOf(parseScaler(scaler({ logging: { [component]: { [field]: value } } }))).spec
            .logging;
        assert.deepEqual(logging[component], { ...LOGGING, [field]: value });
        for (const other of SCALER_COMPONENTS.filter((c) => c !== component)) {
          assert.deepEqual(logging[other], LOGGING);
        }
      }
    }
  }
});

Deno.test("a wrong logging value is rejected with the allowed values", () => {
  assert.deepEqual(errorsOf(parseScaler(scaler({ logging: { operator: { level: "verbose" } } }))), [
    'spec.logging.operator.level: "verbose" is not one of debug, info, error',
  ]);
  assert.deepEqual(
    errorsOf(parseScaler(scaler({ logging: { metricServer: { format: "JSON" } } }))),
    [
      'spec.logging.metricServer.format: "JSON" is not one of json, text, console',
    ],
  );
  assert.deepEqual(
    errorsOf(parseScaler(scaler({ logging: { admissionWebhook: { timeEncoding: "unix" } } }))),
    [
      'spec.logging.admissionWebhook.timeEncoding: "unix" is not one of epoch, millis, nano, iso8601, rfc3339, rfc3339nano',
    ],
  );
});

Deno.test("resources take Kubernetes quantities", () => {
  for (const q of ["100m", "1", "0.5", "512Mi", "1Gi", "2e3", "1.5G"]) {
    assert.ok(
      parseScaler(scaler({ resources: { operator: { limits: { cpu: q, memory: q } } } })).ok,
      q,
    );
  }
  assert.deepEqual(
    errorsOf(
      parseScaler(scaler({ resources: { metricServer: { requests: { memory: "lots" } } } })),
    ),
    [
      'spec.resources.metricServer.requests.memory: "lots" is not a Kubernetes quantity like 100m, 1 or 512Mi',
    ],
  );
  assert.deepEqual(
    errorsOf(parseScaler(scaler({ resources: { operator: { limits: { cpu: 1 } } } }))),
    [
      "spec.resources.operator.limits.cpu: expected string, got 1",
    ],
  );
});

Deno.test("env: name required and non-empty; value and valueFrom sources parse", () => {
  assert.deepEqual(errorsOf(parseScaler(scaler({ env: [{ value: "x" }, { name: "" }] }))), [
    "spec.env[0].name: is required (expected string)",
    "spec.env[1].name: must not be empty",
  ]);
  assert.deepEqual(
    errorsOf(
      parseScaler(scaler({ env: [{ name: "A", valueFrom: { secretKeyRef: { name: "s" } } }] })),
    ),
    [
      "spec.env[0].valueFrom.secretKeyRef.key: is required (expected string)",
    ],
  );
  const env = [
    { name: "A", value: "1" },
    { name: "B", valueFrom: { configMapKeyRef: { name: "c", key: "k", optional: true } } },
    { name: "C", valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } } },
    { name: "D", valueFrom: { resourceFieldRef: { resource: "limits.cpu", divisor: "1m" } } },
  ];
  assert.deepEqual(valueOf(parseScaler(scaler({ env }))).spec.env, env);
  assert.deepEqual(errorsOf(parseScaler(scaler({ env: { A: "1" } }))), [
    'spec.env: expected array, got {"A":"1"}',
  ]);
});

Deno.test("istio sidecar flags are booleans; podAnnotations are maps of strings", () => {
  assert.deepEqual(
    errorsOf(parseScaler(scaler({ istio: { operator: { enabledSidecarInjection: "yes" } } }))),
    [
      'spec.istio.operator.enabledSidecarInjection: expected boolean, got "yes"',
    ],
  );
  assert.deepEqual(errorsOf(parseScaler(scaler({ podAnnotations: { operator: { "a/b": 1 } } }))), [
    'spec.podAnnotations.operator["a/b"]: expected string, got 1',
  ]);
});

Deno.test("status: every state and served value accepted, others rejected", () => {
  for (const state of ["Ready", "Processing", "Error", "Warning", "Deleting"]) {
    const status = valueOf(
      parseScaler(
        scaler(undefined, { status: { state, served: "True", kedaVersion: "2.17.0" } }),
      ),
    ).status;
    assert.equal(status?.state, state);
  }
  assert.deepEqual(
    errorsOf(parseScaler(scaler(undefined, { status: { state: "Done", served: "False" } }))),
    [
      'status.state: "Done" is not one of Ready, Processing, Error, Warning, Deleting',
    ],
  );
});

Deno.test("unknown fields are pruned, as the API server prunes them", () => {
  const spec = valueOf(
    parseScaler(
      scaler({
        logging: { operator: { level: "debug", color: true }, sidecar: {} },
        replicas: 2,
      }),
    ),
  ).spec;
  assert.deepEqual(Object.keys(spec), ["logging"]);
  assert.deepEqual(spec.logging.operator, { ...LOGGING, level: "debug" });
  assert.ok(!("sidecar" in spec.logging));
});
