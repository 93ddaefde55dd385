/** RateLimit spec.global: defaults, bounds, and the exact error messages naming the field. */
import assert from "node:assert/strict";
import { parseRateLimit } from "../../src/api/ratelimit.ts";
import { MAX_GLOBAL_RULES } from "../../src/api/ratelimit_bounds.ts";
import { errorsOf, rateLimit, valueOf } from "./fixtures.ts";

const limit = (requests: unknown = 100, unit: unknown = "Minute") => ({ requests, unit });

/** A RateLimit with `global`, and spec.local unless `local` is false. */
function withGlobal(global: unknown, local = true) {
  const rl = rateLimit(undefined, { global });
  if (!local) delete (rl.spec as Partial<typeof rl.spec>).local;
  return rl;
}

Deno.test("spec.global: failureMode defaults to Allow; rules and default kept as written", () => {
  const rl = valueOf(parseRateLimit(withGlobal({
    rules: [{ path: "/a", limit: limit(5, "Second") }, {
      perClient: { header: "x-api-key" },
      limit: limit(1000, "Day"),
    }],
    default: { limit: limit(10, "Hour") },
  })));
  assert.equal(rl.spec.global?.failureMode, "Allow");
  assert.deepEqual(rl.spec.global?.rules?.map((r) => [r.path, r.perClient, r.limit]), [
    ["/a", undefined, { requests: 5, unit: "Second" }],
    [undefined, { header: "x-api-key" }, { requests: 1000, unit: "Day" }],
  ]);
  assert.deepEqual(rl.spec.global?.default, { limit: { requests: 10, unit: "Hour" } });
  const deny = valueOf(
    parseRateLimit(withGlobal({ default: { limit: limit() }, failureMode: "Deny" })),
  );
  assert.equal(deny.spec.global?.failureMode, "Deny");
});

Deno.test("spec.local, spec.global or both; neither is refused", () => {
  assert.ok(parseRateLimit(withGlobal({ default: { limit: limit() } }, false)).ok);
  assert.ok(parseRateLimit(withGlobal({ default: { limit: limit() } })).ok);
  assert.ok(parseRateLimit(rateLimit()).ok);
  const neither = rateLimit();
  delete (neither.spec as Partial<typeof neither.spec>).local;
  assert.deepEqual(errorsOf(parseRateLimit(neither)), [
    "spec: a RateLimit needs spec.local, spec.global or both",
  ]);
});

Deno.test("spec.global: each unit; a bad unit, count or failure mode is refused naming the field", () => {
  for (const unit of ["Second", "Minute", "Hour", "Day"]) {
    assert.ok(parseRateLimit(withGlobal({ default: { limit: limit(1, unit) } })).ok, unit);
  }
  const cases: [unknown, string][] = [
    [
      { rules: [{ path: "/a", limit: limit(1, "Week") }] },
      'spec.global.rules[0].limit.unit: "Week" is not one of Second, Minute, Hour, Day',
    ],
    [
      { default: { limit: limit(0) } },
      "spec.global.default.limit.requests: 0 is below the minimum 1",
    ],
    [
      { default: { limit: limit(4294967296) } },
      "spec.global.default.limit.requests: 4294967296 is above the maximum 4294967295",
    ],
    [
      { default: { limit: limit(1.5) } },
      "spec.global.default.limit.requests: expected integer, got 1.5",
    ],
    [
      { rules: [{ path: "/a" }] },
      "spec.global.rules[0].limit: is required (expected object)",
    ],
    [
      { rules: [{ limit: limit() }] },
      "spec.global.rules[0]: a rule needs a path, pathPrefix, methods, hosts, headers, queryParams or perClient",
    ],
    [{}, "spec.global: needs rules, a default or both"],
    [{ rules: [] }, "spec.global.rules: must have at least 1 entries"],
    [
      { default: { limit: limit() }, failureMode: "Open" },
      'spec.global.failureMode: "Open" is not one of Allow, Deny',
    ],
    [
      { rules: [{ path: "a", limit: limit() }] },
      'spec.global.rules[0].path: "a" is not a path like /headers (starts with /, no ? or #)',
    ],
    [
      { rules: [{ perClient: {}, limit: limit() }] },
      "spec.global.rules[0].perClient: perClient needs one key: header (a request header's name) or clientIP: true",
    ],
  ];
  for (const [global, message] of cases) {
    assert.deepEqual(errorsOf(parseRateLimit(withGlobal(global))), [message], message);
  }
});

Deno.test(`spec.global.rules: ${MAX_GLOBAL_RULES} are accepted, one more is refused`, () => {
  const rules = (n: number) =>
    Array.from({ length: n }, (_, i) => ({ path: `/p${i}`, limit: limit() }));
  assert.ok(parseRateLimit(withGlobal({ rules: rules(MAX_GLOBAL_RULES) })).ok);
  assert.deepEqual(errorsOf(parseRateLimit(withGlobal({ rules: rules(MAX_GLOBAL_RULES + 1) }))), [
    `spec.global.rules: must have at most ${MAX_GLOBAL_RULES} entries`,
  ]);
});
