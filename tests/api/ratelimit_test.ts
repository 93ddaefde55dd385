/** RateLimit: defaults, required fields, types, constraints and the exact error messages. */
import assert from "node:assert/strict";
import fc from "fast-check";
import { parseRateLimit } from "../../src/api/ratelimit.ts";
import { bucket, errorsOf, rateLimit, valueOf } from "./fixtures.ts";

Deno.test("defaults: enableResponseHeaders false, buckets empty", () => {
  const rl = valueOf(parseRateLimit(rateLimit()));
  assert.equal(rl.spec.enableResponseHeaders, false);
  assert.deepEqual(rl.spec.local!.buckets, []);
  assert.equal(
    valueOf(parseRateLimit(rateLimit([], { enableResponseHeaders: true }))).spec
      .enableResponseHeaders,
    true,
  );
});

/** The largest fillInterval, as the messages say it. */
const BOUND = "(at most 999999999s or 9999999m)";

Deno.test("fillInterval: the largest Istio parses is accepted, one digit more is refused", () => {
  for (const good of ["999999999s", "9999999m"]) {
    assert.ok(parseRateLimit(rateLimit([{ path: "/", bucket: bucket(good) }])).ok, good);
  }
  // 10000000000s and 153722868m are beyond Go's time.Duration: Istio refuses the filter.
  for (
    const bad of ["1000000000s", "10000000m", "10000000000s", "153722868m", "1".repeat(22) + "s"]
  ) {
    const result = parseRateLimit(rateLimit([{ path: "/", bucket: bucket(bad) }]));
    assert.ok(!result.ok, bad);
    assert.match(errorsOf(result)[0], /\(at most 999999999s or 9999999m\)$/);
  }
});

Deno.test("the message of a bad fillInterval names the field by path and index", () => {
  const input = rateLimit([{ path: "/a", bucket: bucket() }, {
    path: "/b",
    bucket: bucket("10x"),
  }]);
  assert.deepEqual(errorsOf(parseRateLimit(input)), [
    `spec.local.buckets[1].bucket.fillInterval: "10x" is not a whole number of seconds or minutes like 30s or 1m ${BOUND}`,
  ]);
});

Deno.test("fillInterval: accepted exactly when a whole positive number of s or m", () => {
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.stringMatching(/^[0-9]{1,4}[smh]?$/)), (text) => {
      const result = parseRateLimit(rateLimit([{ path: "/", bucket: bucket(text) }]));
      if (/^([1-9][0-9]{0,8}s|[1-9][0-9]{0,6}m)$/.test(text)) return result.ok;
      return !result.ok && result.errors.length === 1 &&
        result.errors[0].message ===
          `${
            JSON.stringify(text)
          } is not a whole number of seconds or minutes like 30s or 1m ${BOUND}`;
    }),
    { seed: 42, numRuns: 300 },
  );
  for (const good of ["1s", "30s", "1m", "90m", "3600s"]) {
    assert.ok(parseRateLimit(rateLimit([{ path: "/", bucket: bucket(good) }])).ok);
  }
  for (const bad of ["0s", "01s", "1h", "1.5s", "s", "30", " 30s", "30S"]) {
    assert.ok(!parseRateLimit(rateLimit([{ path: "/", bucket: bucket(bad) }])).ok, bad);
  }
});

Deno.test("maxTokens and tokensPerFill: integers from 1 to 2^32-1", () => {
  const at = "spec.local.defaultBucket";
  const cases: [unknown, string][] = [
    [1.5, "expected integer, got 1.5"],
    ["5", 'expected integer, got "5"'],
    [true, "expected integer, got true"],
    [0, "0 is below the minimum 1"],
    [-3, "-3 is below the minimum 1"],
    [4294967296, "4294967296 is above the maximum 4294967295"],
  ];
  for (const [value, message] of cases) {
    const input = rateLimit();
    input.spec.local.defaultBucket = bucket("30s", value, 1);
    assert.deepEqual(errorsOf(parseRateLimit(input)), [`${at}.maxTokens: ${message}`]);
    input.spec.local.defaultBucket = bucket("30s", 1, value);
    assert.deepEqual(errorsOf(parseRateLimit(input)), [`${at}.tokensPerFill: ${message}`]);
  }
  const input = rateLimit();
  input.spec.local.defaultBucket = bucket("1m", 4294967295, 1);
  assert.ok(parseRateLimit(input).ok);
});

Deno.test("every required field missing is reported as required, with its type", () => {
  const cases: [(o: ReturnType<typeof rateLimit>) => void, string][] = [
    [(o) => delete (o as Partial<typeof o>).spec, "spec: is required (expected object)"],
    [
      (o) => delete (o.spec as Partial<typeof o.spec>).selectorLabels,
      "spec.selectorLabels: is required (expected object)",
    ],
    [
      (o) => delete (o.spec as Partial<typeof o.spec>).local,
      "spec: a RateLimit needs spec.local, spec.global or both",
    ],
    [
      (o) => delete (o.spec.local as Partial<typeof o.spec.local>).defaultBucket,
      "spec.local.defaultBucket: is required (expected object)",
    ],
    [
      (o) => delete (o.spec.local.defaultBucket as Partial<ReturnType<typeof bucket>>).maxTokens,
      "spec.local.defaultBucket.maxTokens: is required (expected integer)",
    ],
    [
      (o) =>
        delete (o.spec.local.defaultBucket as Partial<ReturnType<typeof bucket>>).tokensPerFill,
      "spec.local.defaultBucket.tokensPerFill: is required (expected integer)",
    ],
    [
      (o) => delete (o.spec.local.defaultBucket as Partial<ReturnType<typeof bucket>>).fillInterval,
      "spec.local.defaultBucket.fillInterval: is required (expected string)",
    ],
    [
      (o) => delete (o as Partial<typeof o>).apiVersion,
      'apiVersion: is required ("gateway.platform-project.io/v1alpha1")',
    ],
    [(o) => delete (o as Partial<typeof o>).kind, 'kind: is required ("RateLimit")'],
    [(o) => delete (o as Partial<typeof o>).metadata, "metadata: is required (expected object)"],
    [
      (o) => delete (o.metadata as Partial<typeof o.metadata>).name,
      "metadata.name: is required (expected string)",
    ],
  ];
  for (const [drop, message] of cases) {
    const input = rateLimit();
    drop(input);
    assert.deepEqual(errorsOf(parseRateLimit(input)), [message]);
  }
  assert.deepEqual(errorsOf(parseRateLimit(rateLimit([{ path: "/" }]))), [
    "spec.local.buckets[0].bucket: is required (expected object)",
  ]);
});

Deno.test("wrong types are reported with what was expected and what was found", () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ enableResponseHeaders: "yes" }, 'spec.enableResponseHeaders: expected boolean, got "yes"'],
    [{ selectorLabels: ["app"] }, 'spec.selectorLabels: expected object, got ["app"]'],
    [{ selectorLabels: { app: 1 } }, "spec.selectorLabels.app: expected string, got 1"],
    [
      { local: { defaultBucket: bucket(), buckets: {} } },
      "spec.local.buckets: expected array, got {}",
    ],
  ];
  for (const [extra, message] of cases) {
    assert.deepEqual(errorsOf(parseRateLimit(rateLimit(undefined, extra))), [message]);
  }
  const fill = rateLimit();
  (fill.spec.local.defaultBucket as Record<string, unknown>).fillInterval = 30;
  assert.deepEqual(errorsOf(parseRateLimit(fill)), [
    "spec.local.defaultBucket.fillInterval: expected string, got 30",
  ]);
});

Deno.test("selectorLabels must select at least one label", () => {
  assert.deepEqual(errorsOf(parseRateLimit(rateLimit(undefined, { selectorLabels: {} }))), [
    "spec.selectorLabels: must select at least one label",
  ]);
});

Deno.test("a bucket rule needs a path or headers; paths start with /; headers are not empty", () => {
  assert.deepEqual(errorsOf(parseRateLimit(rateLimit([{ bucket: bucket() }]))), [
    "spec.local.buckets[0]: a rule needs a path, pathPrefix, methods, hosts, headers, queryParams or perClient",
  ]);
  assert.deepEqual(
    errorsOf(parseRateLimit(rateLimit([{ path: "/a", pathPrefix: "/a", bucket: bucket() }]))),
    ["spec.local.buckets[0]: a rule takes path or pathPrefix, not both"],
  );
  assert.deepEqual(
    errorsOf(parseRateLimit(rateLimit([{ pathPrefix: "api", bucket: bucket() }]))),
    [
      'spec.local.buckets[0].pathPrefix: "api" is not a path prefix like /api/ (starts with /, no ? or #)',
    ],
  );
  assert.deepEqual(errorsOf(parseRateLimit(rateLimit([{ perClient: {}, bucket: bucket() }]))), [
    "spec.local.buckets[0].perClient: perClient needs one key: header (a request header's name) or clientIP: true",
  ]);
  assert.deepEqual(errorsOf(parseRateLimit(rateLimit([{ path: "headers", bucket: bucket() }]))), [
    'spec.local.buckets[0].path: "headers" is not a path like /headers (starts with /, no ? or #)',
  ]);
  assert.deepEqual(errorsOf(parseRateLimit(rateLimit([{ path: "/a?b=1", bucket: bucket() }]))), [
    'spec.local.buckets[0].path: "/a?b=1" is not a path like /headers (starts with /, no ? or #)',
  ]);
  assert.deepEqual(errorsOf(parseRateLimit(rateLimit([{ headers: {}, bucket: bucket() }]))), [
    "spec.local.buckets[0].headers: must list at least one header",
  ]);
  // Header names are the operator's to check (the CRD cannot): any key is schema-valid.
  assert.ok(parseRateLimit(rateLimit([{ headers: { "bad name": "x" }, bucket: bucket() }])).ok);
  const rl = valueOf(parseRateLimit(rateLimit([
    { path: "/headers", headers: { "X-Rate-Limited": "true" }, bucket: bucket("1m") },
    { headers: { "x-client": "batch" }, bucket: bucket() },
  ])));
  assert.deepEqual(rl.spec.local!.buckets.map((b) => [b.path, b.headers]), [
    ["/headers", { "X-Rate-Limited": "true" }],
    [undefined, { "x-client": "batch" }],
  ]);
});

Deno.test("a non-multiple fillInterval is schema-valid: the operator rejects it, not the schema", () => {
  assert.ok(parseRateLimit(rateLimit([{ path: "/", bucket: bucket("45s") }])).ok);
});

Deno.test("status: every state accepted, another rejected with the allowed values", () => {
  for (const state of ["Ready", "Error"]) {
    assert.equal(
      valueOf(parseRateLimit({ ...rateLimit(), status: { state } })).status?.state,
      state,
    );
  }
  assert.deepEqual(errorsOf(parseRateLimit({ ...rateLimit(), status: { state: "Pending" } })), [
    'status.state: "Pending" is not one of Ready, Error',
  ]);
});

Deno.test("unknown fields are pruned, as the API server prunes them; metadata passes through", () => {
  const input = rateLimit([{ path: "/", bucket: { ...bucket(), burst: 3 }, weight: 2 }], {
    mode: "strict",
  });
  Object.assign(input, { extra: true });
  Object.assign(input.spec.local, { shadow: true });
  Object.assign(input.metadata, {
    uid: "u1",
    labels: { app: "x" },
    managedFields: [{ manager: "kubectl" }],
  });
  const rl = valueOf(parseRateLimit(input));
  assert.ok(!("extra" in rl));
  assert.ok(!("mode" in rl.spec));
  assert.ok(!("shadow" in rl.spec.local!));
  assert.ok(!("weight" in rl.spec.local!.buckets[0]));
  assert.deepEqual(Object.keys(rl.spec.local!.buckets[0].bucket).sort(), [
    "fillInterval",
    "maxTokens",
    "tokensPerFill",
  ]);
  assert.deepEqual(rl.metadata.managedFields, [{ manager: "kubectl" }]);
  assert.equal(rl.metadata.uid, "u1");
});

Deno.test("parsing never changes its input", () => {
  const input = rateLimit([{ path: "/", bucket: bucket() }]);
  const before = structuredClone(input);
  parseRateLimit(input);
  assert.deepEqual(input, before);
});
