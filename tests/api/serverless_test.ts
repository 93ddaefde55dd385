/** Serverless: defaults, required fields, types, status enums and pruning. */
import assert from "node:assert/strict";
import { parseServerless } from "../../src/api/serverless.ts";
import { errorsOf, serverless, valueOf } from "./fixtures.ts";

const DEFAULTS = {
  functionRequeueDuration: "5m",
  healthzLivenessTimeout: "10s",
  logLevel: "info",
  logFormat: "json",
};

Deno.test("defaults of docs/design.md: with no spec, and with an empty one", () => {
  assert.deepEqual(valueOf(parseServerless(serverless())).spec, DEFAULTS);
  assert.deepEqual(valueOf(parseServerless(serverless({}))).spec, DEFAULTS);
});

Deno.test("each default is filled on its own; a set field is kept as written", () => {
  for (
    const [field, value] of Object.entries({
      functionRequeueDuration: "1h30m",
      healthzLivenessTimeout: "10",
      logLevel: "debug",
      logFormat: "console",
    })
  ) {
    const spec = valueOf(parseServerless(serverless({ [field]: value }))).spec;
    assert.deepEqual(spec, { ...DEFAULTS, [field]: value });
  }
  const spec = valueOf(parseServerless(serverless({ defaultRuntimePodPreset: "L" }))).spec;
  assert.equal(spec.defaultRuntimePodPreset, "L");
  assert.equal(
    valueOf(parseServerless(serverless({}))).spec.defaultRuntimePodPreset,
    undefined,
    "no preset default in spec",
  );
});

Deno.test("values are checked by the operator, not the schema: any string is schema-valid", () => {
  // docs/design.md: a bad duration or preset gives ConfigurationCheckErr in status, so nothing is lost.
  const spec = valueOf(
    parseServerless(
      serverless({
        functionRequeueDuration: "soon",
        defaultRuntimePodPreset: "XXL",
        eventing: { endpoint: "not a url" },
      }),
    ),
  ).spec;
  assert.equal(spec.functionRequeueDuration, "soon");
});

Deno.test("required fields: endpoint within eventing and tracing, served within status", () => {
  assert.deepEqual(errorsOf(parseServerless(serverless({ eventing: {}, tracing: {} }))), [
    "spec.eventing.endpoint: is required (expected string)",
    "spec.tracing.endpoint: is required (expected string)",
  ]);
  assert.deepEqual(
    errorsOf(parseServerless(serverless(undefined, { status: { state: "Ready" } }))),
    [
      'status.served: is required ("True" or "False")',
    ],
  );
  const noName = serverless();
  noName.metadata = { namespace: "platform-system" } as typeof noName.metadata;
  assert.deepEqual(errorsOf(parseServerless(noName)), [
    "metadata.name: is required (expected string)",
  ]);
});

Deno.test("wrong types", () => {
  assert.deepEqual(
    errorsOf(
      parseServerless(
        serverless({ functionRequeueDuration: 5, eventing: "http://x", logLevel: ["debug"] }),
      ),
    ),
    [
      'spec.eventing: expected object, got "http://x"',
      "spec.functionRequeueDuration: expected string, got 5",
      'spec.logLevel: expected string, got ["debug"]',
    ],
  );
  assert.deepEqual(errorsOf(parseServerless(serverless(undefined, { spec: [] }))), [
    "spec: expected object, got []",
  ]);
});

Deno.test("a null field is not set, as the API server prunes it: the default applies", () => {
  const input = serverless({ logLevel: null, tracing: null, eventing: { endpoint: "http://e" } });
  const spec = valueOf(parseServerless(input)).spec;
  assert.deepEqual(spec, { ...DEFAULTS, eventing: { endpoint: "http://e" } });
  assert.equal((input.spec as Record<string, unknown>).logLevel, null, "the input is not changed");
});

Deno.test("status: every state and served value accepted, others rejected with the allowed values", () => {
  for (const state of ["Ready", "Processing", "Error", "Deleting"]) {
    for (const served of ["True", "False"]) {
      const status =
        valueOf(parseServerless(serverless(undefined, { status: { state, served } }))).status;
      assert.deepEqual(status, { state, served });
    }
  }
  assert.deepEqual(
    errorsOf(
      parseServerless(serverless(undefined, { status: { state: "Warning", served: "true" } })),
    ),
    [
      'status.state: "Warning" is not one of Ready, Processing, Error, Deleting',
      'status.served: "true" is not one of True, False',
    ],
  );
});

Deno.test("unknown fields are pruned, as the API server prunes them", () => {
  const parsed = valueOf(
    parseServerless(
      serverless({ logLevel: "info", replicas: 3, eventing: { endpoint: "http://e", port: 1 } }, {
        extra: 1,
      }),
    ),
  );
  assert.deepEqual(parsed.spec, { ...DEFAULTS, eventing: { endpoint: "http://e" } });
  assert.ok(!("extra" in parsed));
});
