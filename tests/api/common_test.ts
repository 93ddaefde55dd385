/** The shared Condition, field-error formatting and the integer helper. */
import assert from "node:assert/strict";
import fc from "fast-check";
import { z } from "zod";
import { ConditionSchema, integer } from "../../src/api/schema/common.ts";
import { formatErrors, formatPath, parseWith, show } from "../../src/api/issues.ts";
import { parseRateLimit } from "../../src/api/ratelimit.ts";
import { parseScaler } from "../../src/api/scaler.ts";
import { parseServerless } from "../../src/api/serverless.ts";
import { errorsOf, valueOf } from "./fixtures.ts";

const condition = {
  type: "Installed",
  status: "True",
  reason: "Installed",
  message: "",
  lastTransitionTime: "2026-01-01T00:00:00Z",
};

Deno.test("Condition: every status accepted, another rejected; type and reason patterns", () => {
  for (const status of ["True", "False", "Unknown"]) {
    assert.ok(parseWith(ConditionSchema, { ...condition, status }).ok);
  }
  assert.deepEqual(errorsOf(parseWith(ConditionSchema, { ...condition, status: "true" })), [
    'status: "true" is not one of True, False, Unknown',
  ]);
  for (const type of ["Installed", "DeploymentFailure", "example.com/Ready"]) {
    assert.ok(parseWith(ConditionSchema, { ...condition, type }).ok, type);
  }
  assert.deepEqual(errorsOf(parseWith(ConditionSchema, { ...condition, type: "has space" })), [
    'type: "has space" is not a condition type like Ready or example.com/Ready',
  ]);
  assert.deepEqual(errorsOf(parseWith(ConditionSchema, { ...condition, reason: "" })), [
    "reason: must not be empty",
  ]);
  assert.deepEqual(errorsOf(parseWith(ConditionSchema, { ...condition, reason: "not camel" })), [
    'reason: "not camel" is not a CamelCase reason like InstallationErr',
  ]);
  assert.deepEqual(
    errorsOf(parseWith(ConditionSchema, { ...condition, observedGeneration: 1.5 })),
    [
      "observedGeneration: expected integer, got 1.5",
    ],
  );
  assert.deepEqual(errorsOf(parseWith(ConditionSchema, { status: "True" })), [
    "type: is required (expected string)",
    "reason: is required (expected string)",
    "message: is required (expected string)",
    "lastTransitionTime: is required (expected string)",
  ]);
});

Deno.test("integer(): says integer for every wrong input", () => {
  for (
    const [input, message] of [
      ["1", 'expected integer, got "1"'],
      [1.25, "expected integer, got 1.25"],
      [null, "expected integer, got null"],
      [undefined, "is required (expected integer)"],
    ] as const
  ) {
    assert.deepEqual(errorsOf(parseWith(integer(), input)), [`(root): ${message}`]);
  }
  assert.equal(valueOf(parseWith(integer(), 42)), 42);
});

Deno.test("a pattern without a message of its own says which pattern", () => {
  assert.deepEqual(errorsOf(parseWith(z.string().regex(/^a+$/), "b")), [
    '(root): "b" does not match /^a+$/',
  ]);
});

Deno.test("paths and values render the way users write them", () => {
  assert.equal(
    formatPath(["spec", "local", "buckets", 1, "bucket", "fillInterval"]),
    "spec.local.buckets[1].bucket.fillInterval",
  );
  assert.equal(
    formatPath(["metadata", "labels", "app.kubernetes.io/name"]),
    'metadata.labels["app.kubernetes.io/name"]',
  );
  assert.equal(formatPath([]), "(root)");
  assert.equal(show("10x"), '"10x"');
  assert.equal(show(undefined), "nothing");
  // JSON would write null: YAML's .nan and .inf are named.
  assert.equal(show(NaN), "NaN");
  assert.equal(show(Infinity), "Infinity");
  assert.equal(show(-Infinity), "-Infinity");
  assert.equal(show("x".repeat(100)).length, 60);
  assert.equal(
    formatErrors([{ path: "a", message: "m" }, { path: "b[0]", message: "n" }]),
    "a: m; b[0]: n",
  );
});

Deno.test("parse functions never throw and every error names a path and a message", () => {
  const anyValue = fc.jsonValue({ maxDepth: 4 });
  const parsers = [parseServerless, parseScaler, parseRateLimit];
  fc.assert(
    fc.property(fc.constantFrom(0, 1, 2), anyValue, anyValue, (which, spec, status) => {
      const kinds = ["Serverless", "Scaler", "RateLimit"];
      const group = which === 2 ? "gateway" : "operator";
      const result = parsers[which]({
        apiVersion: `${group}.platform-project.io/v1alpha1`,
        kind: kinds[which],
        metadata: { name: "x" },
        spec,
        status,
      });
      return result.ok || result.errors.every((e) => e.path.length > 0 && e.message.length > 0);
    }),
    { seed: 42, numRuns: 300 },
  );
});

Deno.test("an unknown field's name that is not a plain name is quoted: a newline cannot split the line", () => {
  const schema = z.strictObject({ a: z.string() });
  const r = parseWith(schema, { a: "x", "b\nc": 1, d: 2 });
  assert.ok(!r.ok);
  const text = formatErrors(r.errors);
  assert.equal(text, `(root): unknown field(s) ["b\\nc"], d`);
  assert.doesNotMatch(text, /\n/);
});
