/** The zod → structural schema conversion: what it keeps, drops, adds and refuses. */
import assert from "node:assert/strict";
import { z } from "zod";
import {
  MAX_BUCKET_RULES,
  MAX_HEADER_NAME_LENGTH,
  MAX_HEADER_VALUE_LENGTH,
  MAX_LABEL_KEY_LENGTH,
  MAX_LABEL_VALUE_LENGTH,
  MAX_PATH_LENGTH,
  MAX_RULE_HEADERS,
  MAX_SELECTOR_LABELS,
} from "../../src/api/ratelimit_bounds.ts";
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
  assert.deepEqual(at(rl, "spec.selectorLabels").additionalProperties, {
    type: "string",
    maxLength: MAX_LABEL_VALUE_LENGTH,
  });
  assert.equal(at(rl, "spec.selectorLabels").minProperties, 1);
  assert.deepEqual(at(rl, "spec.local.buckets.[].headers").additionalProperties, {
    type: "string",
    maxLength: MAX_HEADER_VALUE_LENGTH,
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

Deno.test("a bucket rule carries the CEL rules path-or-headers, not path with pathPrefix, and headers with query parameters bounded together, with their messages", () => {
  const rule = at(schemaOf("ratelimits"), "spec.local.buckets.[]");
  assert.deepEqual(rule["x-kubernetes-validations"], [{
    rule:
      "has(self.path) || has(self.pathPrefix) || has(self.methods) || has(self.hosts) || has(self.headers) || has(self.queryParams) || has(self.perClient)",
    message: "a rule needs a path, pathPrefix, methods, hosts, headers, queryParams or perClient",
  }, {
    rule: "!has(self.path) || !has(self.pathPrefix)",
    message: "a rule takes path or pathPrefix, not both",
  }, {
    rule:
      "(has(self.headers) ? size(self.headers) : 0) + (has(self.queryParams) ? size(self.queryParams) : 0) <= 4",
    message: "headers and queryParams must have at most 4 entries together",
  }]);
  assert.deepEqual(
    at(schemaOf("ratelimits"), "spec.local.buckets.[].perClient")["x-kubernetes-validations"],
    [{
      rule: "has(self.header) || has(self.clientIP)",
      message: "perClient needs one key: header (a request header's name) or clientIP: true",
    }],
  );
  assert.deepEqual(at(schemaOf("ratelimits"), "spec.local.maxClients"), {
    ...at(schemaOf("ratelimits"), "spec.local.maxClients"),
    minimum: 1,
    maximum: 100000,
  });
  assert.deepEqual(rule.required, ["bucket"]);
});

/** A pattern that bounds a string's length: anchored, with no `*`, `+` or open `{n,}`. */
const boundedPattern = (p: string | undefined) =>
  p !== undefined && p.startsWith("^") && p.endsWith("$") && !/[*+]|\{\d+,\}/.test(p);

/** The nodes under `node` whose size the API server does not bound, by path. */
function unbounded(node: JsonSchema, path: string): string[] {
  const out: string[] = [];
  if (node.type === "string" && node.enum === undefined && node.maxLength === undefined) {
    if (!boundedPattern(node.pattern)) out.push(`${path}: a string without maxLength`);
  }
  if (node.type === "integer" && node.maximum === undefined) out.push(`${path}: no maximum`);
  if (node.type === "array") {
    if (node.maxItems === undefined) out.push(`${path}: a list without maxItems`);
    out.push(...unbounded(node.items!, `${path}[]`));
  }
  if (node.type === "object" && node.additionalProperties) {
    if (node.maxProperties === undefined) out.push(`${path}: a map without maxProperties`);
    const keys = (node["x-kubernetes-validations"] ?? []).some((v) =>
      /^self\.all\(k, size\(k\) <= \d+\)$/.test(v.rule)
    );
    if (!keys) out.push(`${path}: a map without a bound on its keys`);
    out.push(...unbounded(node.additionalProperties, `${path}.*`));
  }
  for (const [name, child] of Object.entries(node.properties ?? {})) {
    out.push(...unbounded(child, `${path}.${name}`));
  }
  if (node["x-kubernetes-preserve-unknown-fields"]) out.push(`${path}: keeps unknown fields`);
  return out;
}

Deno.test("every field of a RateLimit's spec, all of which reach the EnvoyFilter, is bounded", () => {
  const rl = schemaOf("ratelimits");
  assert.deepEqual(unbounded(at(rl, "spec"), "spec"), []);
  assert.equal(at(rl, "spec.local.buckets").maxItems, MAX_BUCKET_RULES);
  assert.equal(at(rl, "spec.local.buckets.[].path").maxLength, MAX_PATH_LENGTH);
  const headers = at(rl, "spec.local.buckets.[].headers");
  assert.equal(headers.maxProperties, MAX_RULE_HEADERS);
  assert.deepEqual(headers["x-kubernetes-validations"], [{
    rule: `self.all(k, size(k) <= ${MAX_HEADER_NAME_LENGTH})`,
    message: `header names must have at most ${MAX_HEADER_NAME_LENGTH} characters`,
  }]);
  const labels = at(rl, "spec.selectorLabels");
  assert.equal(labels.maxProperties, MAX_SELECTOR_LABELS);
  assert.deepEqual(labels["x-kubernetes-validations"], [{
    rule: `self.all(k, size(k) <= ${MAX_LABEL_KEY_LENGTH})`,
    message: `label keys must have at most ${MAX_LABEL_KEY_LENGTH} characters`,
  }]);
  // The check finds what it is meant to find: each kind of unbounded node.
  const loose: JsonSchema = {
    type: "object",
    properties: {
      s: { type: "string", pattern: "^/[^?#]*$" },
      n: { type: "integer" },
      l: { type: "array", items: { type: "string", maxLength: 1 } },
      m: { type: "object", additionalProperties: { type: "string", maxLength: 1 } },
    },
  };
  assert.deepEqual(unbounded(loose, "x"), [
    "x.s: a string without maxLength",
    "x.n: no maximum",
    "x.l: a list without maxItems",
    "x.m: a map without maxProperties",
    "x.m: a map without a bound on its keys",
  ]);
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
