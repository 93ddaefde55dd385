/**
 * The Envoy Gateway converter on policies drawn from Envoy Gateway's API (both parts, every
 * selector kind and its options, every unit, shadow mode and X-RateLimit headers): it never
 * throws, a refusal names Envoy Gateway's fields, and what it converts is a RateLimit that the
 * schema and the operator's own validation take (a policy a RateLimit cannot hold is refused by the
 * converter, not left for the operator to refuse later).
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { fromBackendTrafficPolicy } from "../../src/cli/ratelimit/envoy_gateway.ts";
import { parseRateLimit } from "../../src/api/ratelimit.ts";
import { validateSpec } from "../../src/reconcile/ratelimit/validate.ts";

const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });
/** Mostly one of `good`, now and then one of `bad` (which a RateLimit cannot hold). */
const mostly = <T>(good: T[], bad: T[]) =>
  fc.oneof({ weight: 40, arbitrary: fc.constantFrom(...good) }, {
    weight: 1,
    arbitrary: fc.constantFrom(...bad),
  });
/** Absent, or false; now and then true. */
const rarelyTrue = opt(mostly([false], [true]));
const defined = (o: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

const path = fc.record({
  type: opt(mostly(["Exact", "PathPrefix"], ["RegularExpression"])),
  value: opt(mostly(["/", "/a", "/a/", "/ab", "/b"], ["/a?b", "/a b", "/a#b", "a"])),
  invert: rarelyTrue,
}).map(defined);

const method = fc.record({
  value: mostly(["GET", "POST", "PUT", "DELETE"], ["get"]),
  invert: rarelyTrue,
}).map(defined);

const headerName = mostly(["x-a", "X-A", "x-b", "x-api-key"], ["bad name", ""]);
const header = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      name: headerName,
      type: opt(mostly(["Exact"], ["RegularExpression"])),
      value: mostly(["1", "2", ""], ["a\tb"]),
      invert: rarelyTrue,
    }).map(defined),
  },
  { weight: 1, arbitrary: fc.record({ name: headerName, type: fc.constant("Distinct") }) },
);

/** Absent `k` times in `k + 1`. */
const seldom = <T>(a: fc.Arbitrary<T>, k: number) =>
  fc.oneof({ weight: k, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: a });
const selector = fc.record({
  path: seldom(path, 1),
  methods: seldom(fc.array(method, { minLength: 1, maxLength: 3 }), 2),
  headers: seldom(fc.array(header, { minLength: 1, maxLength: 2 }), 1),
  sourceCIDR: seldom(
    fc.record({
      type: mostly(["Distinct"], ["Exact"]),
      value: mostly(["0.0.0.0/0", "::/0"], ["10.0.0.0/8"]),
      invert: rarelyTrue,
    }).map(defined),
    6,
  ),
  queryParams: seldom(
    fc.array(
      fc.record({
        name: mostly(["page", "format", "ids[]"], ["a b", "x".repeat(33)]),
        type: opt(mostly(["Exact"], ["RegularExpression", "Distinct"])),
        value: mostly(["1", "csv", ""], ["a&b", "%41", "x".repeat(41)]),
        invert: rarelyTrue,
      }).map(defined),
      { minLength: 1, maxLength: 3 },
    ),
    2,
  ),
}).map(defined).filter((sel) => Object.keys(sel).length > 0);

const rule = fc.record({
  // Mostly a selector or two; a rule without is for every request (one a part).
  clientSelectors: mostly([1, 1, 2], [0]).chain((n) =>
    n === 0 ? fc.constant(undefined) : fc.array(selector, { minLength: n, maxLength: n })
  ),
  limit: fc.record({
    requests: mostly([1, 7, 4294967295], [0]),
    unit: mostly(["Second", "Minute", "Hour", "Day"], ["Week", "Month", "Year"]),
  }),
  // Now and then a rule of its own here, where all rules must agree.
  shadowMode: opt(mostly([undefined], [true, false])),
  xRateLimitHeaders: opt(mostly([undefined], ["Off", "DraftVersion03"])),
  cost: opt(mostly([undefined], [{ request: { from: "Number", number: 2 } }])),
}).map(defined);

const rules = fc.array(rule, { minLength: 1, maxLength: 3 });
const policy = fc.record({
  global: opt(fc.record({ rules })),
  local: opt(fc.record({ rules })),
  // What every rule says (a RateLimit has one switch for each).
  shadowMode: opt(fc.boolean()),
  xRateLimitHeaders: opt(fc.constantFrom("Off", "DraftVersion03")),
}).filter((p) => p.global !== undefined || p.local !== undefined).map((p) => {
  const every = defined({ shadowMode: p.shadowMode, xRateLimitHeaders: p.xRateLimitHeaders });
  const part = (x: { rules: Record<string, unknown>[] } | undefined) =>
    x && { rules: x.rules.map((r) => ({ ...every, ...r })) };
  return defined({ global: part(p.global), local: part(p.local) });
}).chain((rateLimit) =>
  // One to three targets: routes (of distinct names, as Envoy Gateway's policies have them), or
  // a Gateway.
  fc.oneof(
    fc.uniqueArray(fc.constantFrom("orders", "carts", "users"), { minLength: 1, maxLength: 3 })
      .map((names) =>
        names.map((name) => ({ group: "gateway.networking.k8s.io", kind: "HTTPRoute", name }))
      ),
    fc.constant([{ group: "gateway.networking.k8s.io", kind: "Gateway", name: "public" }]),
  ).map((targetRefs) => ({
    apiVersion: "gateway.envoyproxy.io/v1alpha1",
    kind: "BackendTrafficPolicy",
    metadata: { name: "p", namespace: "demo" },
    spec: { targetRefs, rateLimit: defined(rateLimit) },
  }))
);

Deno.test("property: Envoy Gateway policies convert to a RateLimit the operator takes, or are refused naming their fields", () => {
  let converted = 0;
  let refused = 0;
  fc.assert(
    fc.property(policy, (p) => {
      const c = fromBackendTrafficPolicy(p);
      if (!c.ok) {
        refused++;
        assert.ok(c.problems.length > 0);
        for (const problem of c.problems) assert.match(problem, /^spec\./, problem);
        return;
      }
      converted++;
      // A RateLimit a target, each with its own name.
      const targets = (p.spec.targetRefs as unknown[]).length;
      assert.equal(c.rateLimits.length, targets);
      const names = c.rateLimits.map((r) => (r.metadata as { name: string }).name);
      assert.equal(new Set(names).size, targets);
      for (const rateLimit of c.rateLimits) {
        const parsed = parseRateLimit({
          ...rateLimit,
          metadata: { ...(rateLimit.metadata as object), uid: "u" },
        });
        assert.ok(parsed.ok, `${JSON.stringify(p)}\n${JSON.stringify(parsed)}`);
        const problems = validateSpec(parsed.value.spec);
        // More rules than a RateLimit holds are the operator's to say (its bounds, named by its
        // fields); the converter lets through nothing else the operator refuses.
        const allowed = /at most 8 rules/;
        for (const problem of problems) {
          assert.match(problem, allowed, `${JSON.stringify(p)}: ${problem}`);
        }
      }
    }),
    { seed: 5, numRuns: 3000 },
  );
  assert.ok(converted > 100 && refused > 100, `converted ${converted}, refused ${refused}`);
});
