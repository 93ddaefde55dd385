/**
 * Reading the global rate limit engine back (src/api/engine_status.ts): its `/rlconfig` and
 * `/healthcheck` answers as a real engine gives them, and the EngineStatus objects.
 *
 * tests/api/fixtures/engine_rlconfig.txt is `/rlconfig` of the engine built here
 * (tools/ratelimit-engine, envoyproxy/ratelimit at the pinned version), captured with
 * `startRedis` and `startEngine` (REDIS_HEALTH_CHECK_ACTIVE_CONNECTION=true) over a file
 * configuration of two domains shaped as the operator's: `team-a/api` with a per-client rule
 * (`rule_0` > `client`), a rule with headers after an overlapping one in shadow mode (`rule_1` >
 * `rule_headers_1` > `not_rule_0`) and a default (`rule_default`); `team-b/web.v2` (a name with a
 * dot) with a default of 4294967295 a day. The same capture gave `/healthcheck` 200 `OK` with
 * Redis up and 500 with an empty body about 5 s after Redis stopped (200 `OK` again 3.2 s after it
 * was back). tests/kube/engine_source_test.ts reads live engines through the same parser.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  changedDomainsOf,
  domainsChanged,
  ENGINE_STATUS,
  enginesStatusObject,
  enginesStatusOf,
  engineStatusObject,
  engineStatusOf,
  MAX_RLCONFIG_BYTES,
  parseRlconfig,
  parseRlconfigLine,
  podIp,
  podIsReady,
  podUrl,
  redisOfHealth,
} from "../../src/api/engine_status.ts";

const CAPTURED = Deno.readTextFileSync(new URL("./fixtures/engine_rlconfig.txt", import.meta.url));

Deno.test("rlconfig: a real engine's answer, by domain, each sorted, the dotted name whole", () => {
  const r = parseRlconfig(CAPTURED);
  assert.ok(r.ok);
  assert.deepEqual(r.domains, {
    "team-a/api": [
      "team-a/api.rule_0.client: unit=MINUTE requests_per_unit=100, shadow_mode: false, quota_mode: false",
      "team-a/api.rule_1.rule_headers_1.not_rule_0: unit=SECOND requests_per_unit=5, shadow_mode: true, quota_mode: false",
      "team-a/api.rule_default: unit=HOUR requests_per_unit=1000, shadow_mode: false, quota_mode: false",
    ],
    "team-b/web.v2": [
      "team-b/web.v2.rule_default: unit=DAY requests_per_unit=4294967295, shadow_mode: false, quota_mode: false",
    ],
  });
  // The engine prints in Go map order: any order of the same lines reads the same.
  const shuffled = CAPTURED.trimEnd().split("\n").reverse().join("\n") + "\n";
  assert.deepEqual(parseRlconfig(shuffled), r);
});

Deno.test("rlconfig: each line's fields", () => {
  const lines = CAPTURED.trimEnd().split("\n").map(parseRlconfigLine);
  assert.deepEqual(lines, [
    {
      domain: "team-a/api",
      path: "rule_0.client",
      unit: "MINUTE",
      requestsPerUnit: 100,
      shadowMode: false,
      quotaMode: false,
    },
    {
      domain: "team-a/api",
      path: "rule_1.rule_headers_1.not_rule_0",
      unit: "SECOND",
      requestsPerUnit: 5,
      shadowMode: true,
      quotaMode: false,
    },
    {
      domain: "team-a/api",
      path: "rule_default",
      unit: "HOUR",
      requestsPerUnit: 1000,
      shadowMode: false,
      quotaMode: false,
    },
    {
      domain: "team-b/web.v2",
      path: "rule_default",
      unit: "DAY",
      requestsPerUnit: 4294967295,
      shadowMode: false,
      quotaMode: false,
    },
  ]);
});

Deno.test("rlconfig: nothing loaded is an empty answer", () => {
  assert.deepEqual(parseRlconfig(""), { ok: true, domains: {} });
});

Deno.test("rlconfig: anything else is refused whole, naming the line and why", () => {
  const good = CAPTURED.trimEnd().split("\n");
  const bad = (line: string, at = 2) =>
    parseRlconfig([...good.slice(0, at - 1), line, ...good.slice(at - 1)].join("\n") + "\n");
  const cases: [string, RegExp][] = [
    ["garbage", /^line 2: not `<key>: unit=/],
    ["", /^line 2: not `<key>/], // an empty line inside
    [
      "team-a/api.rule_9: unit=FORTNIGHT requests_per_unit=1, shadow_mode: false, quota_mode: false",
      /^line 2: unit FORTNIGHT/,
    ],
    [
      "team-a/api.rule_9: unit=DAY requests_per_unit=4294967296, shadow_mode: false, quota_mode: false",
      /^line 2: requests_per_unit 4294967296 is over 32 bits/,
    ],
    [
      "team-a/api.rule_9: unit=DAY requests_per_unit=-1, shadow_mode: false, quota_mode: false",
      /^line 2: not/,
    ],
    [
      "team-a/api.rule_9: unit=DAY requests_per_unit=1, shadow_mode: maybe, quota_mode: false",
      /^line 2: not/,
    ],
    [
      "other.client: unit=DAY requests_per_unit=1, shadow_mode: false, quota_mode: false",
      /^line 2: key other\.client has no domain of the operator's/,
    ],
    [
      ".rule_0: unit=DAY requests_per_unit=1, shadow_mode: false, quota_mode: false",
      /^line 2: key \.rule_0 has no domain/,
    ],
    [
      `${
        "x".repeat(5000)
      }.rule_0: unit=DAY requests_per_unit=1, shadow_mode: false, quota_mode: false`,
      /^line 2: longer than 4096/,
    ],
    [
      "team-a/api.rule_9: unit=DAY requests_per_unit=1, shadow_mode: false, quota_mode: false trailing",
      /^line 2: not/,
    ],
  ];
  for (const [line, why] of cases) {
    const r = bad(line);
    assert.ok(!r.ok, line);
    assert.match(r.reason, why);
    assert.ok(r.reason.length < 400, "the reason is short");
  }
  const big = parseRlconfig("x".repeat(MAX_RLCONFIG_BYTES + 1));
  assert.deepEqual(big, { ok: false, reason: `the answer is over ${MAX_RLCONFIG_BYTES} bytes` });
});

Deno.test("rlconfig: never throws, whatever the text", () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 400 }), (s) => {
      const r = parseRlconfig(s);
      return r.ok ? typeof r.domains === "object" : typeof r.reason === "string";
    }),
    { numRuns: 500 },
  );
  // Lines made of the engine's own pieces: each read back as written.
  fc.assert(
    fc.property(
      fc.stringMatching(/^[a-z0-9-]{1,20}\/[a-z0-9.-]{1,40}$/),
      fc.stringMatching(/^[a-z0-9_.]{0,30}$/),
      fc.constantFrom("SECOND", "MINUTE", "HOUR", "DAY"),
      fc.integer({ min: 0, max: 4294967295 }),
      fc.boolean(),
      (domain, rest, unit, n, shadow) => {
        const line =
          `${domain}.rule_${rest}: unit=${unit} requests_per_unit=${n}, shadow_mode: ${shadow}, quota_mode: false`;
        const r = parseRlconfigLine(line);
        return !("problem" in r) && r.domain === domain && r.requestsPerUnit === n &&
          r.shadowMode === shadow && r.unit === unit;
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("healthcheck: 200 OK reaches Redis, 500 does not, anything else is not the engine's", () => {
  assert.equal(redisOfHealth(200, "OK"), "Reachable");
  assert.equal(redisOfHealth(500, ""), "Unreachable");
  assert.equal(redisOfHealth(200, "ok"), "Unknown");
  assert.equal(redisOfHealth(404, "404 page not found\n"), "Unknown");
  assert.equal(redisOfHealth(503, ""), "Unknown");
});

Deno.test("pods: Ready condition, IP, URL", () => {
  const pod = (status: unknown) => ({ metadata: { name: "p" }, status });
  assert.equal(podIsReady(pod({ conditions: [{ type: "Ready", status: "True" }] })), true);
  assert.equal(podIsReady(pod({ conditions: [{ type: "Ready", status: "False" }] })), false);
  assert.equal(
    podIsReady(pod({ conditions: [{ type: "ContainersReady", status: "True" }] })),
    false,
  );
  assert.equal(podIsReady(pod({})), false);
  assert.equal(podIsReady(pod("odd")), false);
  assert.equal(podIp(pod({ podIP: "10.1.2.3" })), "10.1.2.3");
  assert.equal(podIp(pod({ podIP: "" })), undefined);
  assert.equal(podUrl("10.1.2.3", 6070), "http://10.1.2.3:6070");
  assert.equal(podUrl("fd00::1", 8080), "http://[fd00::1]:8080");
});

Deno.test("objects: written and read back; anything odd reads as nothing, never a throw", () => {
  const fields = {
    ready: true,
    redis: "Reachable" as const,
    loaded: (parseRlconfig(CAPTURED) as { domains: Record<string, string[]> }).domains,
    since: "2026-11-28T17:49:34Z",
  };
  const obj = engineStatusObject("ratelimit-engine-abc", fields);
  assert.equal(obj.kind, ENGINE_STATUS.kind);
  assert.deepEqual(obj.metadata, { namespace: "platform-ratelimit", name: "ratelimit-engine-abc" });
  assert.deepEqual(engineStatusOf(obj), fields);
  const failed = {
    ready: false,
    redis: "Unknown" as const,
    error: { reason: "Unreachable", message: "GET http://10.0.0.1:8080/healthcheck: refused" },
    since: "2026-11-28T17:49:34Z",
  };
  assert.deepEqual(engineStatusOf(engineStatusObject("p", failed)), failed);
  const odd = (status: unknown) => engineStatusOf({ ...obj, status } as typeof obj);
  assert.equal(odd(undefined), undefined);
  assert.equal(odd({ ready: "yes" }), undefined);
  assert.equal(odd({ ready: true, loaded: { d: [1] } }), undefined);
  assert.deepEqual(odd({ ready: true, redis: "Sideways" }), {
    ready: true,
    redis: "Unknown",
    since: "",
  });
  assert.equal(engineStatusOf(undefined), undefined);
  const changed = { ...fields, changed: ["team-a/api"] };
  assert.deepEqual(engineStatusOf(engineStatusObject("p", changed)), changed);
  assert.deepEqual(changedDomainsOf(engineStatusObject("p", changed)), ["team-a/api"]);
  assert.equal(changedDomainsOf(engineStatusObject("p", fields)), undefined);
  assert.equal(changedDomainsOf(enginesStatusObject({ listed: true, pods: 1 })), undefined);
  assert.equal(odd({ ready: true, changed: [1] })?.changed, undefined);
  assert.deepEqual(enginesStatusOf(enginesStatusObject({ listed: true, pods: 2 })), {
    listed: true,
    pods: 2,
  });
  const notListed = { listed: false as const, reason: "PodsUnknown", message: "forbidden" };
  assert.deepEqual(enginesStatusOf(enginesStatusObject(notListed)), notListed);
  assert.equal(enginesStatusOf(undefined), undefined);
});

Deno.test("domains changed between two readings: added, gone, other lines; the same is none", () => {
  const a = { "ns/a": ["l1", "l2"], "ns/b": ["l3"], "ns/c": ["l4"] };
  const b = { "ns/a": ["l1", "l2"], "ns/b": ["l3x"], "ns/d": ["l5"] };
  assert.deepEqual(domainsChanged(a, b), ["ns/b", "ns/c", "ns/d"]);
  assert.deepEqual(domainsChanged(a, a), []);
  assert.deepEqual(domainsChanged({}, { "ns/a": [] }), ["ns/a"]);
  assert.deepEqual(domainsChanged({ "ns/a": ["x"] }, { "ns/a": ["x", "y"] }), ["ns/a"]);
});
