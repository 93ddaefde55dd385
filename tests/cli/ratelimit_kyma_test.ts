/**
 * A Kyma RateLimit in the preview: converted to this project's (same rate, whole-second
 * intervals), the differences named, refused plainly when it cannot be carried; and the claim of
 * docs/migrating-from-kyma.md that Kyma's filter never selects a rule bucket of a spec whose rules
 * name different keys, checked by running Kyma's filter shape through the data-plane model.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { parse } from "yaml";
import { run, runLines } from "./preview.ts";
import { fromKyma, KYMA_API_VERSION } from "../../src/cli/ratelimit/kyma.ts";
import { renderFilters, runTraffic } from "../../src/cli/ratelimit/run.ts";
import { parseFillInterval } from "../../src/api/duration.ts";
import { envoyBehaviour, Mesh } from "../../src/dataplane/mod.ts";
import { filter, ON, tb } from "../dataplane/filters.ts";

const example = (name: string) => new URL(`../../docs/examples/${name}`, import.meta.url).pathname;

type Obj = Record<string, unknown>;
type Rule = { path?: string; headers?: Record<string, string> };

function kyma(defaultInterval: string, rules: Rule[], ruleInterval = "30s"): Obj {
  return {
    apiVersion: KYMA_API_VERSION,
    kind: "RateLimit",
    metadata: { name: "k", namespace: "demo", uid: "u", resourceVersion: "7" },
    spec: {
      selectorLabels: { app: "httpbin" },
      local: {
        defaultBucket: { maxTokens: 10, tokensPerFill: 5, fillInterval: defaultInterval },
        buckets: rules.map((r) => ({
          ...r,
          bucket: { maxTokens: 1, tokensPerFill: 1, fillInterval: ruleInterval },
        })),
      },
    },
  };
}

const neverSelected = (differences: string[]) =>
  differences.filter((d) => d.includes("Kyma never selected")).map((d) => d.split(":")[0]);

Deno.test("Kyma's rules are named dead exactly when they name fewer keys than all rules", () => {
  const cases: [Rule[], string[]][] = [
    [[{ path: "/a" }], []],
    [[{ path: "/a" }, { path: "/b" }], []],
    [[{ path: "/a", headers: { "X-T": "1" } }], []],
    [[{ path: "/a" }, { headers: { "X-T": "1" } }], [
      "spec.local.buckets[0]",
      "spec.local.buckets[1]",
    ]],
    [[{ path: "/a", headers: { "X-T": "1" } }, { path: "/b" }], ["spec.local.buckets[1]"]],
  ];
  for (const [rules, dead] of cases) {
    const c = fromKyma(kyma("1s", rules));
    assert.ok(c.ok);
    assert.deepEqual(neverSelected(c.differences), dead, JSON.stringify(rules));
  }
});

Deno.test("conversion: our apiVersion, user metadata only, Kyma's spec as it was", () => {
  const c = fromKyma(kyma("1m30s", [{ path: "/a" }], "3m"));
  assert.ok(c.ok);
  assert.equal(c.rateLimit.apiVersion, "gateway.platform-project.io/v1alpha1");
  assert.deepEqual(c.rateLimit.metadata, { name: "k", namespace: "demo" });
  const local = (c.rateLimit.spec as { local: { defaultBucket: Obj; buckets: Obj[] } }).local;
  assert.deepEqual(local.defaultBucket, { maxTokens: 10, tokensPerFill: 5, fillInterval: "90s" });
  assert.deepEqual(local.buckets[0].bucket, {
    maxTokens: 1,
    tokensPerFill: 1,
    fillInterval: "180s",
  });
  // Whole seconds need no rescaling, so no note says so.
  assert.ok(!c.differences.some((d) => d.includes("becomes")));
  assert.ok(renderFilters(c.rateLimit).ok);
});

Deno.test("property: any Kyma interval of whole ms from 50ms keeps the rate and is valid here", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 50, max: 600_000 }),
      fc.integer({ min: 1, max: 20 }),
      fc.integer({ min: 1, max: 1000 }),
      (ms, multiple, tokens) => {
        const doc = kyma(`${ms}ms`, [{ path: "/a" }], `${ms * multiple}ms`);
        const local = (doc.spec as { local: { defaultBucket: Obj } }).local;
        local.defaultBucket.tokensPerFill = tokens;
        const c = fromKyma(doc);
        assert.ok(c.ok);
        const out = (c.rateLimit.spec as { local: { defaultBucket: Obj; buckets: Obj[] } })
          .local;
        const perToken = (b: Obj) =>
          parseFillInterval(b.fillInterval as string)! / (b.tokensPerFill as number);
        assert.equal(perToken(out.defaultBucket), ms / tokens);
        assert.equal(perToken(out.buckets[0].bucket as Obj), ms * multiple);
        assert.equal(out.defaultBucket.maxTokens, 10);
        const rendered = renderFilters(c.rateLimit);
        assert.ok(rendered.ok, rendered.ok ? "" : rendered.error);
      },
    ),
  );
});

Deno.test("what cannot be carried is refused naming Kyma's field", () => {
  for (
    const [interval, field] of [
      ["10ms", "below Envoy's minimum"],
      ["1500us", "below Envoy's minimum"],
      ["50500us", "not a whole number of milliseconds"],
      ["soon", "not a Go duration"],
    ]
  ) {
    const c = fromKyma(kyma(interval, []));
    assert.ok(!c.ok);
    assert.match(c.problems[0], /^spec\.local\.defaultBucket\.fillInterval /);
    assert.ok(c.problems[0].includes(field), c.problems[0]);
  }
  // 1ms short of a second needs a factor of 1000: 5,000,000 tokensPerFill a fill is fine,
  // 5,000,000,000 is beyond Envoy's uint32.
  const doc = kyma("999ms", []);
  (doc.spec as { local: { defaultBucket: Obj } }).local.defaultBucket.tokensPerFill = 5_000_000;
  const c = fromKyma(doc);
  assert.ok(!c.ok);
  assert.match(c.problems[0], /tokensPerFill would be 5000000000, above 4294967295/);
});

/** The bucket each request takes under the converted RateLimit `rl`, on Envoy 1.38. */
function bucketsHere(rl: Obj, paths: string[]): unknown[] {
  const envoy = envoyBehaviour("1.38");
  assert.ok(envoy.ok);
  const r = runTraffic(
    rl,
    paths.map((path, t) => ({ t, path, headers: {} })),
    paths.length,
    envoy.value,
  );
  assert.ok(r.ok, r.ok ? "" : r.error);
  return r.value.outcomes.map((o) => o.bucket);
}

Deno.test("a Kyma path with a query string becomes path and queryParams, the difference said", () => {
  const cases: [string, string, Record<string, string>][] = [
    ["/search?q=", "/search", { q: "" }],
    ["/search?debug", "/search", { debug: "" }],
    ["/export?format=csv&page=2", "/export", { format: "csv", page: "2" }],
    ["/export?%66ormat=%63sv&format=csv", "/export", { format: "csv" }],
    ["/a?ids[]=1&x=a=b", "/a", { "ids[]": "1", x: "a=b" }],
  ];
  for (const [path, base, queryParams] of cases) {
    const c = fromKyma(kyma("1s", [{ path }]));
    assert.ok(c.ok, c.ok ? "" : c.problems.join("; "));
    const rule = (c.rateLimit.spec as { local: { buckets: Obj[] } }).local.buckets[0];
    assert.equal(rule.path, base);
    assert.deepEqual(rule.queryParams, queryParams);
    const note = c.differences.find((d) => d.startsWith("spec.local.buckets[0]: path")) ?? "";
    assert.ok(note.includes(`becomes path ${base} with queryParams`), note);
    assert.ok(note.includes(`under Kyma only ${path} as written`), note);
    // The request Kyma took this rule for still takes it; the path alone does not.
    assert.deepEqual(bucketsHere(c.rateLimit, [path, base]), [0, "default"], path);
  }
});

Deno.test("a Kyma query string a rule here cannot hold is refused naming the path", () => {
  const cases: [Rule, RegExp][] = [
    [{ path: "/search?" }, /an empty query string has no rule here/],
    [{ path: "?q=1" }, /the part before \? is not a path/],
    [{ path: "/s?a=1&&b=2" }, /an empty parameter/],
    [{ path: "/s?q=a+b" }, /q's value "a\+b" is not a query parameter's value here/],
    [{ path: "/s?q=a%20b" }, /q's value "a b" is not/],
    [{ path: "/s?q=%zz" }, /"q=%zz" is not percent-encoded correctly/],
    [{ path: "/s?na%20me=1" }, /"na me" is not a query parameter's name here/],
    [{ path: `/s?${"n".repeat(33)}=1` }, /is not a query parameter's name here/],
    [{ path: `/s?q=${"v".repeat(41)}` }, /is not a query parameter's value here/],
    [{ path: "/s?q=1&q=2" }, /q is given twice/],
    [
      { path: "/s?a=1&b=2", headers: { "X-A": "1", "X-B": "2", "X-C": "3" } },
      /more than the 4 a rule here matches together/,
    ],
  ];
  for (const [rule, problem] of cases) {
    const c = fromKyma(kyma("1s", [{ path: "/ok" }, rule]));
    assert.ok(!c.ok, rule.path ?? "");
    assert.equal(c.problems.length, 1);
    assert.ok(
      c.problems[0].startsWith(`spec.local.buckets[1].path ${JSON.stringify(rule.path)}: `),
      c.problems[0],
    );
    assert.match(c.problems[0], problem);
  }
  // Beside an interval that cannot be carried, both are said.
  const c = fromKyma(kyma("50500us", [{ path: "/s?q=a+b" }]));
  assert.ok(!c.ok);
  assert.equal(c.problems.length, 2);
});

const QUERY_NAME_CHARS = [..."abcXYZ019._~[]-"];
const QUERY_VALUE_CHARS = [..."abcXYZ019._~!$'()*,/:;=?@[]-"];
/** A character as Kyma's path may hold it: as itself, or percent-encoded (either case of hex). */
const written = (ch: string) =>
  fc.constantFrom(
    ch,
    "%" + ch.charCodeAt(0).toString(16).padStart(2, "0").toUpperCase(),
    "%" + ch.charCodeAt(0).toString(16).padStart(2, "0"),
  );
const encodedOf = (chars: string[], min: number, max: number) =>
  fc.array(fc.constantFrom(...chars), { minLength: min, maxLength: max }).chain((cs) =>
    fc.tuple(...cs.map(written)).map((ws) => ({ decoded: cs.join(""), written: ws.join("") }))
  );

Deno.test("property: a carried query string still takes the request Kyma took, and its path alone does not", () => {
  fc.assert(
    fc.property(
      fc.uniqueArray(
        fc.tuple(encodedOf(QUERY_NAME_CHARS, 1, 8), encodedOf(QUERY_VALUE_CHARS, 0, 8)),
        { minLength: 1, maxLength: 4, selector: ([n]) => n.decoded },
      ),
      (params) => {
        // A value holding "=" is written after the first "=", as Kyma's path would have it; a
        // value holding "?" likewise (only the first "?" starts the query).
        const query = params.map(([n, v]) => `${n.written}=${v.written}`).join("&");
        const path = `/p?${query}`;
        const c = fromKyma(kyma("1s", [{ path }]));
        assert.ok(c.ok, c.ok ? "" : c.problems.join("; "));
        const rule = (c.rateLimit.spec as { local: { buckets: Obj[] } }).local.buckets[0];
        assert.deepEqual(
          rule.queryParams,
          Object.fromEntries(params.map(([n, v]) => [n.decoded, v.decoded])),
        );
        assert.deepEqual(bucketsHere(c.rateLimit, [path, "/p"]), [0, "default"], path);
      },
    ),
    { numRuns: 200 },
  );
});

Deno.test("the preview converts, prints the RateLimit to apply, and runs it", async () => {
  const rendered = await run(["-f", example("kyma-ratelimit.yaml"), "--render"]);
  assert.equal(rendered.code, 0, rendered.err);
  const ours = parse(rendered.out.join("\n"));
  assert.equal(ours.apiVersion, "gateway.platform-project.io/v1alpha1");
  assert.equal(ours.spec.local.defaultBucket.fillInterval, "1s");
  assert.ok(rendered.out[0].startsWith("# Kyma's RateLimit demo/httpbin"));
  // --json keeps stdout to JSON lines; the conversion goes to stderr.
  const json = await run([
    "-f",
    example("kyma-ratelimit.yaml"),
    "--rate",
    "1/s",
    "--for",
    "2s",
    "--path",
    "/headers",
    "--json",
  ]);
  assert.equal(json.code, 0, json.err);
  assert.deepEqual(json.out.map((l) => JSON.parse(l).bucket), [0, 0]);
  assert.ok(json.err.includes("apiVersion: gateway.platform-project.io/v1alpha1"));
  const refused = await run(["-f", example("kyma-ratelimit-uncarried.yaml"), "--render"]);
  assert.equal(refused.code, 2);
  assert.deepEqual(refused.out, []);
  assert.match(
    refused.err,
    /cannot carry over Kyma's RateLimit: spec\.local\.buckets\[0\]\.bucket\.fillInterval 1250500us/,
  );
  assert.match(
    refused.err,
    /cannot carry over Kyma's RateLimit: spec\.local\.buckets\[0\]\.path "\/search\?q=a\+b": q's value/,
  );
});

/**
 * Kyma's EnvoyFilter as internal/ratelimit/ratelimit.go builds it (api-gateway 64d110d): the filter
 * inserted before the connection manager's first filter, and one `rate_limits` entry with a
 * `request_headers` action for every key any rule names, a descriptor a rule. Kyma wraps the
 * config in a udpa TypedStruct; Envoy unwraps it to the same message, given here directly.
 */
function kymaFilter(rules: { entries: [string, string][]; maxTokens: number }[]): Obj {
  const keys: string[] = [];
  for (const r of rules) for (const [k] of r.entries) if (!keys.includes(k)) keys.push(k);
  return filter({
    token_bucket: tb(100, 1, "30s"),
    filter_enabled: ON,
    filter_enforced: ON,
    always_consume_default_token_bucket: false,
    descriptors: rules.map((r) => ({
      entries: r.entries.map(([key, value]) => ({ key, value })),
      token_bucket: tb(r.maxTokens, 1, "30s"),
    })),
  }, [{
    actions: keys.map((k) => ({
      request_headers: { header_name: k === "path" ? ":path" : k, descriptor_key: k },
    })),
  }]);
}

/** The bucket each request takes on a proxy running Kyma's filter. */
function bucketsUnderKyma(
  filter: Obj,
  requests: { path: string; headers?: Record<string, string> }[],
): unknown[] {
  const envoy = envoyBehaviour("1.38");
  assert.ok(envoy.ok);
  const mesh = new Mesh({ envoy: envoy.value });
  const labels = { app: "x" };
  mesh.sync([filter], [{ namespace: "demo", name: "p", labels, ready: true }], 0);
  assert.deepEqual(mesh.rejections(), []);
  return requests.map((r) =>
    mesh.send({ to: { namespace: "demo", labels }, path: r.path, headers: r.headers ?? {} }, 0)
      .bucket
  );
}

Deno.test("Kyma's filter in the model: one rule is used, two with different keys are not", () => {
  const pathRule = { entries: [["path", "/headers"]] as [string, string][], maxTokens: 1 };
  const tierRule = { entries: [["x-api-tier", "free"]] as [string, string][], maxTokens: 1 };
  // One rule: its requests take its bucket, the query string excepted.
  assert.deepEqual(
    bucketsUnderKyma(kymaFilter([pathRule]), [{ path: "/headers" }, { path: "/headers?a=1" }]),
    [0, "default"],
  );
  // Two rules naming different keys: no request reaches either rule's bucket.
  assert.deepEqual(
    bucketsUnderKyma(kymaFilter([pathRule, tierRule]), [
      { path: "/headers" },
      { path: "/get", headers: { "x-api-tier": "free" } },
      { path: "/headers", headers: { "x-api-tier": "free" } },
    ]),
    ["default", "default", "default"],
  );
  // The converter says the same of that spec.
  const c = fromKyma(kyma("1s", [{ path: "/headers" }, { headers: { "x-api-tier": "free" } }]));
  assert.ok(c.ok);
  assert.deepEqual(neverSelected(c.differences), [
    "spec.local.buckets[0]",
    "spec.local.buckets[1]",
  ]);
});

Deno.test("a field Kyma's object does not have, beside its spec, is refused by its path", async () => {
  const text = await Deno.readTextFile(example("kyma-ratelimit.yaml"));
  for (
    const [edited, problem] of [
      [
        text.replace("metadata:\n", "metadata:\n  lables: {tier: free}\n"),
        "metadata.lables: unknown field; did you mean labels?",
      ],
      [text.replace("spec:\n", "bogusKey: 1\nspec:\n"), "bogusKey: unknown field"],
      [
        text.replace(
          "metadata:\n",
          "metadata:\n  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: o, uid: u, contoller: true}]\n",
        ),
        "metadata.ownerReferences[0].contoller: unknown field; did you mean controller?",
      ],
    ]
  ) {
    const r = await runLines(["-f", "-", "--render"], edited);
    assert.equal(r.code, 2, problem);
    assert.deepEqual(r.err, [`error: stdin: cannot carry over Kyma's RateLimit: ${problem}`]);
    assert.deepEqual(r.out, []);
  }
  // What the API server writes in metadata and status is not the user's, and is taken.
  const c = fromKyma({
    ...kyma("1s", []),
    metadata: { name: "k", uid: "u", resourceVersion: "9", managedFields: [], generation: 3 },
    status: { state: "Ready" },
  });
  assert.ok(c.ok, JSON.stringify(c));
});
