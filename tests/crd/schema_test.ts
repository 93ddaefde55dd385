/** The zod → structural schema conversion: what it keeps, drops, adds and refuses. */
import assert from "node:assert/strict";
import { z } from "zod";
import { integer } from "../../src/api/schema/common.ts";
import { customResourceDefinitions } from "../../src/crd/definitions.ts";
import { crdSchemaOf, type JsonSchema, toStructural } from "../../src/crd/schema.ts";
import { structuralProblems } from "../../src/crd/structural.ts";

const schemaOf = (plural: string): JsonSchema =>
  customResourceDefinitions().find((c) => c.spec.names.plural === plural)!.spec.versions[0].schema
    .openAPIV3Schema;

/** The node at a dotted path of properties (`[]` steps into items). */
function at(schema: JsonSchema, path: string): JsonSchema {
  let node = schema;
  for (const step of path.split(".")) {
    node = step === "[]" ? node.items! : node.properties![step];
    assert.ok(node, `no ${step} in ${path}`);
  }
  return node;
}

Deno.test("defaults are dropped: the stored spec stays what the user wrote", () => {
  const s = crdSchemaOf(
    z.object({
      spec: z.object({ a: z.string().default("x").describe("A.") }).prefault({}).describe("S."),
    }).describe("K."),
  );
  assert.deepEqual(at(s, "spec"), {
    type: "object",
    description: "S.",
    properties: { a: { type: "string", description: "A." } },
  });
  assert.deepEqual(s.required, undefined);
});

Deno.test("integers become int64 and keep only real bounds", () => {
  const s = toStructural(z.toJSONSchema(z.object({ a: integer(), b: integer().min(1).max(9) }), {
    target: "openapi-3.0",
    io: "input",
  }) as Record<string, unknown>);
  assert.deepEqual(s.properties!.a, { type: "integer", format: "int64" });
  assert.deepEqual(s.properties!.b, { type: "integer", format: "int64", minimum: 1, maximum: 9 });
});

Deno.test("maps are additionalProperties of strings; no additionalProperties: false anywhere", () => {
  const rl = schemaOf("ratelimits");
  assert.deepEqual(at(rl, "spec.selectorLabels").additionalProperties, { type: "string" });
  assert.equal(at(rl, "spec.selectorLabels").minProperties, 1);
  assert.deepEqual(at(rl, "spec.local.buckets.[].headers").additionalProperties, {
    type: "string",
  });
  const strict = toStructural(
    z.toJSONSchema(z.strictObject({ a: z.string() }), { target: "openapi-3.0" }) as Record<
      string,
      unknown
    >,
  );
  assert.deepEqual(strict, {
    type: "object",
    properties: { a: { type: "string" } },
    required: ["a"],
  });
});

Deno.test("metadata is just an object; apiVersion and kind are described strings", () => {
  for (const plural of ["serverlesses", "scalers", "ratelimits"]) {
    const s = schemaOf(plural);
    assert.deepEqual(s.properties!.metadata, { type: "object" });
    assert.equal(s.properties!.apiVersion.type, "string");
    assert.equal(s.properties!.apiVersion.enum, undefined);
    assert.ok(s.properties!.kind.description);
    assert.ok(!(s.required ?? []).includes("metadata"));
  }
  assert.deepEqual(schemaOf("ratelimits").required, ["spec"]);
  assert.equal(schemaOf("serverlesses").required, undefined);
});

Deno.test("a bucket rule carries the CEL rule path-or-headers with its message", () => {
  const rule = at(schemaOf("ratelimits"), "spec.local.buckets.[]");
  assert.deepEqual(rule["x-kubernetes-validations"], [{
    rule: "has(self.path) || has(self.headers)",
    message: "a bucket rule needs a path, headers or both",
  }]);
  assert.deepEqual(rule.required, ["bucket"]);
});

Deno.test("enums, patterns and bounds of docs/design.md are in the CRDs", () => {
  const rl = schemaOf("ratelimits");
  const bucket = at(rl, "spec.local.defaultBucket");
  assert.equal(
    bucket.properties!.fillInterval.pattern,
    "^([1-9][0-9]{0,8}s|[1-9][0-9]{0,6}m)$",
  );
  assert.deepEqual([bucket.properties!.maxTokens.minimum, bucket.properties!.maxTokens.maximum], [
    1,
    4294967295,
  ]);
  assert.equal(at(rl, "spec.local.buckets.[].path").pattern, "^/[^?#]*$");
  assert.deepEqual(at(rl, "status.state").enum, ["Ready", "Error"]);
  const scl = schemaOf("scalers");
  assert.deepEqual(at(scl, "spec.logging.operator.level").enum, ["debug", "info", "error"]);
  assert.deepEqual(at(scl, "spec.logging.admissionWebhook.format").enum, [
    "json",
    "text",
    "console",
  ]);
  assert.deepEqual(at(scl, "spec.logging.metricServer.timeEncoding").enum, [
    "epoch",
    "millis",
    "nano",
    "iso8601",
    "rfc3339",
    "rfc3339nano",
  ]);
  assert.ok(at(scl, "spec.resources.operator.limits.cpu").pattern);
  assert.deepEqual(at(scl, "status.state").enum, [
    "Ready",
    "Processing",
    "Error",
    "Warning",
    "Deleting",
  ]);
  assert.deepEqual(at(scl, "status.served").enum, ["True", "False"]);
  assert.deepEqual(at(schemaOf("serverlesses"), "status.state").enum, [
    "Ready",
    "Processing",
    "Error",
    "Deleting",
  ]);
  const conditions = at(scl, "status.conditions");
  assert.equal(conditions["x-kubernetes-list-type"], "map");
  assert.deepEqual(conditions["x-kubernetes-list-map-keys"], ["type"]);
});

Deno.test("a construct a structural schema cannot hold is refused, naming the field", () => {
  const union = z.object({ spec: z.object({ q: z.union([z.string(), z.number()]) }) });
  assert.throws(() => crdSchemaOf(union), /spec\.q: needs a single type/);
});

Deno.test("the structural checker finds what it is meant to find", () => {
  const problems = structuralProblems({
    type: "object",
    description: "K.",
    properties: {
      metadata: { type: "object", properties: { name: { type: "string" } } },
      spec: {
        type: "object",
        properties: { a: { description: "A." }, b: { type: "string" } },
        additionalProperties: { type: "string" },
        default: {},
        description: "S.",
      },
    },
  });
  assert.deepEqual(problems, [
    'metadata: must be {type: object}, is {"type":"object","properties":{"name":{"type":"string"}}}',
    "spec: keyword default is not allowed",
    "spec: has additionalProperties beside properties",
    "spec.a: has no type",
    "spec.b: has no description",
  ]);
});

Deno.test("crdDifferences names missing, changed and foreign files", async () => {
  const { crdDifferences } = await import("../../src/crd/render.ts");
  const expected = [{ name: "a.yaml", text: "x\ny\n" }, { name: "b.yaml", text: "z\n" }];
  const actual = new Map([["a.yaml", "x\nY\n"], ["c.yaml", "q\n"]]);
  assert.deepEqual(crdDifferences(expected, actual), [
    'a.yaml: line 2 differs: expected "y", found "Y"',
    "b.yaml: missing",
    "c.yaml: not generated from src/api/ (stale?)",
  ]);
});
