/**
 * The zod schemas and the generated CRDs admit the same objects: the simulator admits with zod,
 * a real API server with the CRD, and the two must not drift. Objects are the samples with random
 * values written at random schema paths.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { parse } from "yaml";
import type { ParseResult } from "../../src/api/issues.ts";
import { parseRateLimit } from "../../src/api/ratelimit.ts";
import { parseScaler } from "../../src/api/scaler.ts";
import { parseServerless } from "../../src/api/serverless.ts";
import { customResourceDefinitions } from "../../src/crd/definitions.ts";
import { admits, propertyPaths } from "./admission.ts";

const samples = new URL("../../samples/", import.meta.url);
const read = (name: string) => parse(Deno.readTextFileSync(new URL(name, samples)));
const schemaOf = (plural: string) =>
  customResourceDefinitions().find((c) => c.spec.names.plural === plural)!.spec.versions[0].schema
    .openAPIV3Schema;

const KINDS: { plural: string; sample: string; parse: (input: unknown) => ParseResult<unknown> }[] =
  [
    { plural: "serverlesses", sample: "serverless.yaml", parse: parseServerless },
    { plural: "scalers", sample: "scaler.yaml", parse: parseScaler },
    { plural: "ratelimits", sample: "ratelimit-workload.yaml", parse: parseRateLimit },
    // The global part's fields, edited from a sample that has them (local and global).
    {
      plural: "ratelimits",
      sample: "../docs/examples/ratelimit-global.yaml",
      parse: parseRateLimit,
    },
  ];

const BUCKET = { maxTokens: 1, tokensPerFill: 1, fillInterval: "30s" };

const long = (n: number, c = "x") => c.repeat(n);
const mapOf = (n: number) =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, "v"]));
const rules = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ path: `/p${i}`, bucket: BUCKET }));

/**
 * Values on each side of the bounds of docs/ratelimit.md "Bounds": lengths in characters (an emoji
 * is one character and two UTF-16 units), lists, maps and map keys.
 */
const BOUND_EDGES = [
  ...[63, 64, 65, 128, 129, 317, 318].flatMap((n) => [long(n), long(n, "🙂")]),
  `/${long(1023)}`,
  `/${long(1024)}`,
  `/${long(1023, "🙂")}`,
  rules(8),
  rules(9),
  mapOf(4),
  mapOf(5),
  mapOf(256),
  mapOf(257),
  ...[64, 65, 317, 318].flatMap((n) => [{ [long(n)]: "v" }, { [long(n, "🙂")]: "v" }]),
  ...[63, 64, 128, 129].flatMap((n) => [{ a: long(n) }, { a: long(n, "🙂") }]),
];

/** Values that sit on the edges of the schemas' types and constraints. */
const EDGES = [
  null,
  undefined,
  "",
  "x",
  "/",
  "/headers",
  "/a?b",
  "headers",
  "30s",
  "1m",
  "45s",
  "0s",
  "10x",
  "100m",
  "512Mi",
  "lots",
  "Ready",
  "Error",
  "Warning",
  "True",
  "False",
  "debug",
  "verbose",
  "json",
  "rfc3339",
  "Installed",
  "not camel",
  0,
  1,
  -1,
  1.5,
  4294967295,
  4294967296,
  true,
  false,
  {},
  [],
  { a: "b" },
  { a: 1 },
  [{}],
  ["x"],
  BUCKET,
  { bucket: BUCKET },
  { path: "/", bucket: BUCKET },
  { name: "A" },
  { name: "" },
  // Methods: a set of nine names.
  "GET",
  ["GET"],
  ["GET", "POST"],
  ["GET", "GET"],
  ["get"],
  ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"],
  ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "GET"],
  { methods: ["GET"], bucket: BUCKET },
  // Hosts: a set of lower-case DNS names, or *. and one.
  "api.example.com",
  ["api.example.com"],
  ["*.example.com", "example.com"],
  ["api.example.com", "api.example.com"],
  ["API.example.com"],
  ["*.*.example.com"],
  ["*example.com"],
  ["a..b"],
  ["-a.b"],
  ["a.b", "c.d", "e.f", "g.h"],
  ["a.b", "c.d", "e.f", "g.h", "i.j"],
  [`${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(61)}`],
  [`${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(62)}`],
  { hosts: ["api.example.com"], bucket: BUCKET },
  // Query parameters: a map of at most 4 (with the headers), names of 32, decoded values of 40.
  { format: "csv" },
  { format: "a&b" },
  { format: "a+b" },
  { format: "%41" },
  { format: "" },
  { [".".repeat(32)]: ".".repeat(40) },
  { [".".repeat(33)]: "v" },
  { q: ".".repeat(41) },
  { queryParams: { format: "csv" }, bucket: BUCKET },
  { queryParams: { a: "1", b: "2" }, headers: { "x-a": "1", "x-b": "2" }, bucket: BUCKET },
  { queryParams: { a: "1", b: "2", c: "3" }, headers: { "x-a": "1", "x-b": "2" }, bucket: BUCKET },
  ...BOUND_EDGES,
];
const VALUE = fc.oneof(fc.constantFrom(...EDGES), fc.string({ maxLength: 6 }), fc.integer());

/** Returns a copy of `obj` with `value` at `path`, creating what is missing on the way. */
function setAt(obj: unknown, path: (string | number)[], value: unknown): unknown {
  const root = structuredClone(obj) as Record<string | number, unknown>;
  let cur = root;
  for (const [i, key] of path.entries()) {
    if (i === path.length - 1) {
      if (value === undefined && Array.isArray(cur)) cur.splice(Number(key), 1);
      else if (value === undefined) delete cur[key];
      else cur[key] = value;
      break;
    }
    const next = cur[key];
    if (typeof next !== "object" || next === null) {
      cur[key] = typeof path[i + 1] === "number" ? [] : {};
    }
    cur = cur[key] as Record<string | number, unknown>;
  }
  return root;
}

for (const kind of KINDS) {
  Deno.test(`${kind.plural} (${kind.sample}): zod and the CRD admit the same objects`, () => {
    const schema = schemaOf(kind.plural);
    const base = read(kind.sample);
    assert.ok(admits(schema, base) && kind.parse(base).ok, "the sample is admitted by both");
    const paths = propertyPaths(schema).filter((p) =>
      !["apiVersion", "kind", "metadata"].includes(String(p[0]))
    );
    // Every single edit of an edge value at every path, then random combinations of edits.
    for (const path of paths) {
      for (const value of EDGES) {
        const obj = setAt(base, path, value);
        assert.equal(
          kind.parse(obj).ok,
          admits(schema, obj),
          `${path.join(".")} = ${JSON.stringify(value)?.slice(0, 200)}`,
        );
      }
    }
    const mutation = fc.tuple(fc.constantFrom(...paths), VALUE);
    let rejected = 0;
    fc.assert(
      fc.property(fc.array(mutation, { minLength: 1, maxLength: 3 }), (edits) => {
        const obj = edits.reduce((o, [path, value]) => setAt(o, path, value), base as unknown);
        const byCrd = admits(schema, obj);
        const byZod = kind.parse(obj).ok;
        if (!byCrd) rejected++;
        return byCrd === byZod;
      }),
      { seed: 42, numRuns: 400 },
    );
    assert.ok(
      rejected > 50,
      `only ${rejected} of 400 objects were invalid: the test explores too little`,
    );
  });
}
