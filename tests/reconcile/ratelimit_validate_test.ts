/** RateLimit validation: each problem gives InvalidSpec with a message naming the field and value. */
import assert from "node:assert/strict";
import fc from "fast-check";
import { parseFillInterval } from "../../src/api/duration.ts";
import { reconcileRateLimit } from "../../src/reconcile/ratelimit/mod.ts";
import { MAX_BUCKET_RULES } from "../../src/api/ratelimit_bounds.ts";
import { covers } from "../../src/reconcile/ratelimit/validate.ts";
import { isLabelValue, isQualifiedName } from "../../src/api/selector.ts";
import { bucket, input, rateLimit } from "./ratelimit_fixtures.ts";

function messageOf(rl: unknown): { state: string; reason: string; message: string } {
  const status = reconcileRateLimit(input(rl)).status as {
    state: string;
    conditions: Array<{ reason: string; message: string }>;
  };
  return {
    state: status.state,
    reason: status.conditions[0].reason,
    message: status.conditions[0].message,
  };
}

function assertInvalid(rl: unknown, ...says: (string | RegExp)[]): void {
  const m = messageOf(rl);
  assert.equal(m.state, "Error", m.message);
  assert.equal(m.reason, "InvalidSpec", m.message);
  for (const s of says) {
    if (typeof s === "string") {
      assert.ok(m.message.includes(s), `${JSON.stringify(s)} not in ${m.message}`);
    } else assert.match(m.message, s);
  }
}

Deno.test("fillInterval not a multiple of the default's names both values", () => {
  assertInvalid(
    rateLimit({
      buckets: [
        { path: "/a", bucket: bucket(1, 1, "1m") },
        { path: "/b", bucket: bucket(1, 1, "45s") },
      ],
    }),
    "spec.local.buckets[1].bucket.fillInterval 45s is not a multiple of the default bucket's fillInterval 30s",
  );
  // A shorter interval is not a multiple either.
  assertInvalid(
    rateLimit({
      defaultBucket: bucket(5, 5, "1m"),
      buckets: [{ path: "/a", bucket: bucket(1, 1, "30s") }],
    }),
    "spec.local.buckets[0].bucket.fillInterval 30s is not a multiple of the default bucket's fillInterval 1m",
  );
  // 1m is a multiple of 30s and of 20s; 2m of 1m.
  for (const [def, rule] of [["30s", "1m"], ["20s", "1m"], ["1m", "2m"], ["1m", "60s"]]) {
    const m = messageOf(
      rateLimit({
        defaultBucket: bucket(5, 5, def),
        buckets: [{ path: "/a", bucket: bucket(1, 1, rule) }],
      }),
    );
    assert.equal(m.state, "Ready", `${def} ${rule}: ${m.message}`);
  }
});

Deno.test("token counts out of 1..2^32-1 and bad intervals name the bucket", () => {
  assertInvalid(
    rateLimit({ defaultBucket: bucket(0, 1, "30s") }),
    "spec.local.defaultBucket.maxTokens",
  );
  assertInvalid(
    rateLimit({ buckets: [{ path: "/a", bucket: bucket(1, 4294967296, "30s") }] }),
    "spec.local.buckets[0].bucket.tokensPerFill",
  );
  assertInvalid(
    rateLimit({ defaultBucket: bucket(1.5, 1, "30s") }),
    "spec.local.defaultBucket.maxTokens",
  );
  assertInvalid(
    rateLimit({ defaultBucket: bucket(1, 1, "100ms") }),
    "spec.local.defaultBucket.fillInterval",
    '"100ms"',
  );
  assertInvalid(
    rateLimit({ defaultBucket: bucket(1, 1, "0s") }),
    "spec.local.defaultBucket.fillInterval",
  );
  const ok = messageOf(rateLimit({ defaultBucket: bucket(4294967295, 4294967295, "1s") }));
  assert.equal(ok.state, "Ready", ok.message);
});

Deno.test("every fillInterval the syntax accepts is at or above Envoy's 50ms floor", () => {
  fc.assert(
    fc.property(
      fc.oneof(
        fc.tuple(fc.nat(100_000), fc.constantFrom("ns", "us", "ms", "s", "m", "h", ""))
          .map(([n, unit]) => `${n}${unit}`),
        fc.string({ maxLength: 6 }),
      ),
      (s) => {
        const ms = parseFillInterval(s);
        return ms === undefined || ms >= 50;
      },
    ),
    { seed: 42, numRuns: 500 },
  );
});

Deno.test("selectorLabels must be non-empty and valid labels", () => {
  assertInvalid(rateLimit({ selectorLabels: {} }), "spec.selectorLabels");
  assertInvalid(
    rateLimit({ selectorLabels: { "bad key": "x" } }),
    'spec.selectorLabels key "bad key" is not a valid label key',
  );
  assertInvalid(
    rateLimit({ selectorLabels: { app: "not ok" } }),
    'spec.selectorLabels["app"] value "not ok"',
  );
  assert.ok(isQualifiedName("app.kubernetes.io/name") && isQualifiedName("app"));
  assert.ok(
    !isQualifiedName("UPPER.example/name") && !isQualifiedName("a/b/c") && !isQualifiedName("-a"),
  );
  assert.ok(isLabelValue("") && isLabelValue("v1.2_3") && !isLabelValue("x".repeat(64)));
});

Deno.test("a rule needs a path or headers", () => {
  assertInvalid(rateLimit({ buckets: [{ bucket: bucket(1, 1, "30s") }] }), "spec.local.buckets[0]");
  assertInvalid(
    rateLimit({ buckets: [{ headers: {}, bucket: bucket(1, 1, "30s") }] }),
    "spec.local.buckets[0]",
  );
});

Deno.test("paths with a query, a fragment or spaces are refused", () => {
  for (const path of ["/a?b=1", "/a#x", "/a b", "a"]) {
    assertInvalid(
      rateLimit({ buckets: [{ path, bucket: bucket(1, 1, "30s") }] }),
      "spec.local.buckets[0].path",
      JSON.stringify(path),
    );
  }
});

Deno.test("header names: valid tokens, no case-insensitive duplicates; values without control characters", () => {
  assertInvalid(
    rateLimit({ buckets: [{ headers: { "X-A": "1", "x-a": "2" }, bucket: bucket(1, 1, "30s") }] }),
    'spec.local.buckets[0].headers lists "X-A" and "x-a", the same header',
  );
  assertInvalid(
    rateLimit({ buckets: [{ headers: { ":path": "/x" }, bucket: bucket(1, 1, "30s") }] }),
    "spec.local.buckets[0].headers",
    '":path"',
  );
  assertInvalid(
    rateLimit({ buckets: [{ headers: { "X-A": "a\nb" }, bucket: bucket(1, 1, "30s") }] }),
    'spec.local.buckets[0].headers["X-A"] value "a\\nb" has a control character',
  );
});

Deno.test("a rule an earlier rule always wins over is refused (duplicates included)", () => {
  const b = bucket(1, 1, "30s");
  assertInvalid(
    rateLimit({
      buckets: [{ path: "/a", bucket: b }, { path: "/b", bucket: b }, { path: "/a", bucket: b }],
    }),
    "spec.local.buckets[2] is never used: every request it matches is matched first by spec.local.buckets[0]",
  );
  assertInvalid(
    rateLimit({
      buckets: [{ headers: { "X-A": "1" }, bucket: b }, {
        path: "/x",
        headers: { "x-a": "1", "X-B": "2" },
        bucket: b,
      }],
    }),
    "spec.local.buckets[1] is never used",
  );
  // The narrower rule first is fine.
  const m = messageOf(
    rateLimit({
      buckets: [{ path: "/x", headers: { "X-A": "1" }, bucket: b }, {
        headers: { "X-A": "1" },
        bucket: b,
      }],
    }),
  );
  assert.equal(m.state, "Ready", m.message);
  assert.ok(
    covers({ path: "/x" }, { path: "/x", headers: { a: "1" } }),
  );
});

Deno.test("path prefixes: a rule a prefix always wins over is refused; both path and pathPrefix are refused", () => {
  const b = bucket(1, 1, "30s");
  assertInvalid(
    rateLimit({ buckets: [{ pathPrefix: "/api", bucket: b }, { path: "/api/v1", bucket: b }] }),
    "spec.local.buckets[1] is never used: every request it matches is matched first by spec.local.buckets[0]",
  );
  assertInvalid(
    rateLimit({
      buckets: [{ pathPrefix: "/a", bucket: b }, {
        pathPrefix: "/ab",
        headers: { "X-A": "1" },
        bucket: b,
      }],
    }),
    "spec.local.buckets[1] is never used",
  );
  assertInvalid(
    rateLimit({ buckets: [{ path: "/api", pathPrefix: "/api", bucket: b }] }),
    "spec.local.buckets[0]: a rule takes path or pathPrefix, not both",
  );
  assertInvalid(
    rateLimit({ buckets: [{ pathPrefix: "/a b", bucket: b }] }),
    'spec.local.buckets[0].pathPrefix "/a b" is not a path prefix like /api/ (starts with /, no ?, # or spaces)',
  );
  // /api/ does not start /api, and an exact path does not cover a prefix.
  for (
    const buckets of [
      [{ pathPrefix: "/api/", bucket: b }, { path: "/api", bucket: b }],
      [{ path: "/api", bucket: b }, { pathPrefix: "/api", bucket: b }],
      [{ pathPrefix: "/api/v1", bucket: b }, { pathPrefix: "/api", bucket: b }],
    ]
  ) {
    const m = messageOf(rateLimit({ buckets }));
    assert.equal(m.state, "Ready", m.message);
  }
});

Deno.test("methods: a rule another takes every method of is never used; disjoint methods both are; a method twice or unknown is refused", () => {
  const b = bucket(1, 1, "30s");
  assertInvalid(
    rateLimit({
      buckets: [{ path: "/a", methods: ["GET", "POST"], bucket: b }, {
        path: "/a",
        methods: ["POST"],
        bucket: b,
      }],
    }),
    "spec.local.buckets[1] is never used: every request it matches is matched first by spec.local.buckets[0]",
  );
  assertInvalid(
    rateLimit({
      buckets: [{ path: "/a", bucket: b }, { path: "/a", methods: ["GET"], bucket: b }],
    }),
    "spec.local.buckets[1] is never used",
  );
  assertInvalid(
    rateLimit({ buckets: [{ methods: ["GET", "GET"], bucket: b }] }),
    "spec.local.buckets[0].methods: lists a method twice",
  );
  assertInvalid(
    rateLimit({ buckets: [{ methods: ["get"], bucket: b }] }),
    "spec.local.buckets[0].methods[0]",
  );
  // A method alone says which requests a rule takes.
  for (
    const buckets of [
      [{ methods: ["POST"], bucket: b }],
      [{ path: "/a", methods: ["POST"], bucket: b }, { path: "/a", methods: ["GET"], bucket: b }],
      [{ path: "/a", methods: ["POST"], bucket: b }, { path: "/a", bucket: b }],
      [{ methods: ["GET"], bucket: b }, { methods: ["GET", "HEAD"], bucket: b }],
    ]
  ) {
    const m = messageOf(rateLimit({ buckets }));
    assert.equal(m.state, "Ready", m.message);
  }
});

Deno.test("hosts: a set of lower-case names or *. wildcards; a rule they all cover is never used", () => {
  const b = { maxTokens: 1, tokensPerFill: 1, fillInterval: "1m" };
  assertInvalid(
    rateLimit({ buckets: [{ hosts: ["a.example.com", "a.example.com"], bucket: b }] }),
    "spec.local.buckets[0].hosts: lists a host twice",
  );
  for (
    const bad of ["API.example.com", "*.*.example.com", "*example.com", "a..b", "a.example.com:80"]
  ) {
    assertInvalid(
      rateLimit({ buckets: [{ hosts: [bad], bucket: b }] }),
      "spec.local.buckets[0].hosts[0]",
    );
  }
  assertInvalid(
    rateLimit({
      buckets: [{ hosts: ["*.example.com"], bucket: b }, {
        hosts: ["a.example.com", "*.b.example.com"],
        bucket: b,
      }],
    }),
    "spec.local.buckets[1] is never used: every request it matches is matched first by spec.local.buckets[0]",
  );
  // A host alone says which requests a rule takes; a wildcard does not take its own suffix.
  for (
    const buckets of [
      [{ hosts: ["api.example.com"], bucket: b }],
      [{ hosts: ["*.example.com"], bucket: b }, { hosts: ["example.com"], bucket: b }],
      [{ hosts: ["a.example.com"], bucket: b }, { hosts: ["*.example.com"], bucket: b }],
      [{ path: "/a", hosts: ["a.example.com"], bucket: b }, { path: "/a", bucket: b }],
    ]
  ) {
    const m = messageOf(rateLimit({ buckets }));
    assert.equal(m.state, "Ready", m.message);
  }
});

Deno.test("hosts: a later rule naming the Host as a header the hosts take is never used; one they miss is kept", () => {
  const b = { maxTokens: 1, tokensPerFill: 1, fillInterval: "1m" };
  // The header compares exactly, so each of these values is one spelling the hosts take.
  for (
    const [hosts, sent] of [
      [["a.example.com"], "a.example.com"],
      [["a.example.com"], "A.Example.COM:8080"],
      [["a.example.com"], "a.example.com."],
      [["*.example.com"], "x.y.example.com.:443"],
      [["b.example.com", "*.a.example.com"], "B.A.example.com"],
    ] as const
  ) {
    assertInvalid(
      rateLimit({
        buckets: [{ hosts: [...hosts], bucket: b }, {
          path: "/x",
          headers: { Host: sent },
          bucket: b,
        }],
      }),
      "spec.local.buckets[1] is never used: every request it matches is matched first by spec.local.buckets[0]",
    );
  }
  // Spellings the hosts' matcher does not take, and a Host header before hosts (which take more).
  for (
    const buckets of [
      [{ hosts: ["a.example.com"], bucket: b }, { headers: { host: "a.example.com:" }, bucket: b }],
      [{ hosts: ["a.example.com"], bucket: b }, {
        headers: { host: "a.example.com.." },
        bucket: b,
      }],
      [{ hosts: ["*.example.com"], bucket: b }, { headers: { host: "example.com" }, bucket: b }],
      [{ hosts: ["*.example.com"], bucket: b }, {
        headers: { host: "x.example.com:a" },
        bucket: b,
      }],
      [{ hosts: ["k.example.com"], bucket: b }, {
        headers: { host: "\u212a.example.com" },
        bucket: b,
      }],
      [{ headers: { host: "a.example.com" }, bucket: b }, { hosts: ["a.example.com"], bucket: b }],
    ]
  ) {
    const m = messageOf(rateLimit({ buckets }));
    assert.equal(m.state, "Ready", `${JSON.stringify(buckets)}: ${m.message}`);
  }
});

Deno.test("queryParams: names the workload reads; a rule whose parameters an earlier rule requires all of is never used", () => {
  const b = { maxTokens: 1, tokensPerFill: 1, fillInterval: "1m" };
  for (const bad of ["a b", "a&b", "a=b", "%66", "a+b", "é"]) {
    assertInvalid(
      rateLimit({ buckets: [{ queryParams: { [bad]: "1" }, bucket: b }] }),
      `spec.local.buckets[0].queryParams name ${
        JSON.stringify(bad)
      } is not a query parameter's name`,
    );
  }
  for (const bad of ["a&b", "a+b", "%63", "a b", "a#b"]) {
    assertInvalid(
      rateLimit({ buckets: [{ queryParams: { format: bad }, bucket: b }] }),
      "spec.local.buckets[0].queryParams.format",
    );
  }
  assertInvalid(
    rateLimit({
      buckets: [{ path: "/export", queryParams: { format: "csv" }, bucket: b }, {
        path: "/export",
        queryParams: { format: "csv", "ids[]": "1" },
        headers: { "x-a": "1" },
        bucket: b,
      }],
    }),
    "spec.local.buckets[1] is never used: every request it matches is matched first by spec.local.buckets[0]",
  );
  // Another value, a parameter the earlier rule lacks, or none: a request can still reach the later
  // rule (?format=csv&format=json takes both values' rules: the first wins).
  for (
    const buckets of [
      [{ queryParams: { format: "csv" }, bucket: b }, {
        queryParams: { format: "json" },
        bucket: b,
      }],
      [{ queryParams: { format: "csv", q: "1" }, bucket: b }, {
        queryParams: { format: "csv" },
        bucket: b,
      }],
      [{ queryParams: { format: "" }, bucket: b }, { queryParams: { Format: "" }, bucket: b }],
      [{ path: "/a", queryParams: { format: "csv" }, bucket: b }, { path: "/a", bucket: b }],
      [{ queryParams: { "ids[]": "a.b", "~_-.": "!$'()*,/:;=?@[]" }, bucket: b }],
    ]
  ) {
    const m = messageOf(rateLimit({ buckets }));
    assert.equal(m.state, "Ready", `${JSON.stringify(buckets)}: ${m.message}`);
  }
});

/** Whether a rule takes a request: docs/design.md's selection, written directly. */
function takes(
  rule: {
    path?: string;
    pathPrefix?: string;
    methods?: string[];
    hosts?: string[];
    headers?: Record<string, string>;
    queryParams?: Record<string, string>;
  },
  path: string,
  headers: Record<string, string>,
  method = "GET",
  host = "a.example.com",
): boolean {
  // The Host as sent is the `host` header; hosts compare in any case, without a port or trailing dot.
  const name = host.toLowerCase().replace(/:[0-9]+$/, "").replace(/\.$/, "");
  const hostTakes = (h: string) =>
    !name.includes(":") &&
    (h.startsWith("*.") ? name.endsWith(h.slice(1)) && name.length > h.length - 1 : h === name);
  const sent: Record<string, string> = { ...headers, host };
  return (rule.path === undefined || rule.path === path.split("?")[0]) &&
    (rule.pathPrefix === undefined || path.startsWith(rule.pathPrefix)) &&
    (rule.methods === undefined || rule.methods.includes(method)) &&
    (rule.hosts === undefined || rule.hosts.some(hostTakes)) &&
    Object.entries(rule.headers ?? {}).every(([k, v]) => sent[k.toLowerCase()] === v) &&
    Object.entries(rule.queryParams ?? {}).every(([k, v]) =>
      (path.split("?")[1] ?? "").split("&").some((p) => p === `${k}=${v}`)
    );
}

Deno.test("property: a rule covers another only when it takes every request the other takes", () => {
  const REQUEST_PATHS = [
    "/",
    "/a",
    "/a/",
    "/a/b",
    "/ab",
    "/a?x",
    "/ab?y",
    "/b",
    "/b/a",
    "/a?f=1",
    "/a?f=1&g=2",
    "/a/b?f=2&f=1",
    "/b?g=2",
  ];
  const HEADER_SETS: Record<string, string>[] = [{}, { "x-a": "1" }, { "x-a": "2" }, {
    "x-a": "1",
    "x-b": "1",
  }];
  type Rule = {
    path?: string;
    pathPrefix?: string;
    methods?: ("GET" | "HEAD" | "POST")[];
    hosts?: string[];
    headers?: Record<string, string>;
    queryParams?: Record<string, string>;
  };
  const METHODS = ["GET", "HEAD", "POST"] as const;
  const QUERIES: Record<string, string>[] = [{ f: "1" }, { f: "2" }, { g: "2" }, {
    f: "1",
    g: "2",
  }];
  const HOSTS = ["a.example.com", "*.example.com", "*.a.example.com", "b.a.example.com"];
  const REQUEST_HOSTS = [
    "a.example.com",
    "b.a.example.com",
    "c.b.a.example.com",
    "example.com",
    "A.Example.com:80",
    "b.a.example.com.",
    "a.example.com:",
  ];
  const headerSets: Record<string, string>[] = [
    { "X-A": "1" },
    { "x-a": "2" },
    { "X-A": "1", "X-B": "1" },
    ...REQUEST_HOSTS.map((host) => ({ Host: host })),
    { host: "b.a.example.com", "x-a": "1" },
  ];
  const ruleArb: fc.Arbitrary<Rule> = fc.record({
    path: fc.option(
      fc.oneof(
        fc.constantFrom("/", "/a", "/a/b", "/ab").map((path) => ({ path })),
        fc.constantFrom("/", "/a", "/a/", "/ab", "/b").map((pathPrefix) => ({ pathPrefix })),
      ),
      { nil: undefined, freq: 2 },
    ),
    methods: fc.option(fc.subarray([...METHODS], { minLength: 1 }), { nil: undefined, freq: 2 }),
    hosts: fc.option(fc.subarray(HOSTS, { minLength: 1 }), { nil: undefined, freq: 2 }),
    headers: fc.option(fc.constantFrom(...headerSets), { nil: undefined, freq: 2 }),
    queryParams: fc.option(fc.constantFrom(...QUERIES), { nil: undefined, freq: 2 }),
  }).map((r): Rule => ({
    ...(r.queryParams ? { queryParams: r.queryParams } : {}),
    ...(r.path ?? {}),
    ...(r.methods ? { methods: r.methods } : {}),
    ...(r.hosts ? { hosts: r.hosts } : {}),
    ...(r.headers ? { headers: r.headers } : {}),
  }));
  let covered = 0;
  fc.assert(
    fc.property(ruleArb, ruleArb, (earlier, later) => {
      if (!covers(earlier, later)) return;
      covered++;
      for (const path of REQUEST_PATHS) {
        for (const headers of HEADER_SETS) {
          for (const method of [...METHODS, "PUT"]) {
            for (const host of REQUEST_HOSTS) {
              if (takes(later, path, headers, method, host)) {
                assert.ok(
                  takes(earlier, path, headers, method, host),
                  `${method} ${host}${path} ${JSON.stringify(headers)}`,
                );
              }
            }
          }
        }
      }
    }),
    { seed: 11, numRuns: 4000 },
  );
  assert.ok(covered > 100, `only ${covered} covered pairs tried`);
});

Deno.test("all problems are reported at once", () => {
  const m = messageOf(rateLimit({
    buckets: [
      { path: "/a", bucket: bucket(1, 1, "45s") },
      { path: "/a", bucket: bucket(1, 1, "30s") },
    ],
  }));
  assert.match(m.message, /buckets\[0\]\.bucket\.fillInterval 45s/);
  assert.match(m.message, /buckets\[1\] is never used/);
});

Deno.test("at most MAX_BUCKET_RULES rules", () => {
  const rules = (n: number) =>
    Array.from({ length: n }, (_, i) => ({ path: `/p${i}`, bucket: bucket(1, 1, "30s") }));
  assert.equal(messageOf(rateLimit({ buckets: rules(MAX_BUCKET_RULES) })).state, "Ready");
  assertInvalid(
    rateLimit({ buckets: rules(MAX_BUCKET_RULES + 1) }),
    `spec.local.buckets: must have at most ${MAX_BUCKET_RULES} entries`,
  );
});
