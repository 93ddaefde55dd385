/**
 * The engine model (src/dataplane/engine.ts) against envoyproxy/ratelimit's arithmetic as
 * docs/global-engine.md "How the engine counts" states it, step by step, and the property that in
 * one window of one key at most `requests` calls are answered OK, however many proxies and engine
 * replicas ask.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  counterKey,
  EngineConfig,
  EngineCounters,
  EngineModel,
  type EngineRequest,
  loadEngineDomain,
  type ModelDomain,
  shouldRateLimit,
  UNIT_SECONDS,
  WINDOW_UNITS,
  windowStart,
  type WindowUnit,
} from "../../src/dataplane/mod.ts";

const DOMAIN = "demo.api";
/** A minute boundary: 2026-11-28T14:46:00Z (docs/global-engine.md's example key). */
const T0 = 1795877160;

function domain(perSecond: number, perMinute = 1000, shadow = false): ModelDomain {
  return {
    domain: DOMAIN,
    descriptors: [
      { key: "client", rateLimit: { unit: "SECOND", requestsPerUnit: perSecond } },
      {
        key: "tenant",
        rateLimit: { unit: "MINUTE", requestsPerUnit: perMinute },
        ...(shadow ? { shadowMode: true } : {}),
      },
    ],
  };
}

function call(key: string, value: string): EngineRequest {
  return { domain: DOMAIN, descriptors: [[{ key, value }]] };
}

function ask(config: EngineConfig, counters: EngineCounters, req: EngineRequest, s: number) {
  const r = shouldRateLimit(config, counters, req, s * 1000);
  assert.ok(r.ok, "answered");
  return r.answer;
}

Deno.test("windows start at floor(now / divider) * divider, aligned to the epoch", () => {
  assert.equal(windowStart(T0 + 59, "MINUTE"), T0);
  assert.equal(windowStart(T0 + 60, "MINUTE"), T0 + 60);
  assert.equal(windowStart(T0 + 100, "HOUR"), 1795874400); // 14:00:00Z
  assert.equal(windowStart(T0 + 1234, "HOUR"), 1795878000); // 15:00:00Z
  assert.equal(windowStart(T0, "DAY"), 1795824000); // 00:00:00Z
  assert.equal(windowStart(T0 + 0.999, "SECOND"), T0);
  // utilities.go UnitToDivider: a month is 30 days, a year 365.
  const day = 24 * 3600;
  assert.deepEqual(WINDOW_UNITS.map((u) => UNIT_SECONDS[u] / day), [
    1 / day,
    60 / day,
    1 / 24,
    1,
    7,
    30,
    365,
  ]);
  assert.equal(
    counterKey(DOMAIN, [{ key: "client", value: "alice" }], "MINUTE", T0 + 30),
    "demo.api_client_alice_1795877160",
  );
});

Deno.test("a key admits requests_per_unit calls, counting refused ones, and a new window admits again", () => {
  const config = new EngineConfig([domain(3, 5)]);
  const counters = new EngineCounters();
  const answers = [0, 0, 10, 20, 30, 59].map((dt) =>
    ask(config, counters, call("tenant", "a"), T0 + dt)
  );
  assert.deepEqual(answers.map((a) => a.overallCode), [
    "OK",
    "OK",
    "OK",
    "OK",
    "OK",
    "OVER_LIMIT",
  ]);
  assert.deepEqual(answers.map((a) => a.statuses[0].limitRemaining), [4, 3, 2, 1, 0, 0]);
  assert.deepEqual(answers.map((a) => a.statuses[0].durationUntilReset), [60, 60, 50, 40, 30, 1]);
  assert.deepEqual(answers[0].statuses[0].currentLimit, { requestsPerUnit: 5, unit: "MINUTE" });
  // Refused calls count: the counter goes on past the limit.
  ask(config, counters, call("tenant", "a"), T0 + 59);
  assert.equal(counters.get(`${DOMAIN}_tenant_a_${T0}`, T0 + 59), 7);
  // The next window is a new key.
  const next = ask(config, counters, call("tenant", "a"), T0 + 60);
  assert.equal(next.overallCode, "OK");
  assert.equal(next.statuses[0].limitRemaining, 4);
  assert.deepEqual(next.keys, [`${DOMAIN}_tenant_a_${T0 + 60}`]);
  // Another value of the key counts apart.
  assert.equal(ask(config, counters, call("tenant", "b"), T0 + 59).statuses[0].limitRemaining, 4);
});

Deno.test("shadow mode answers OK after counting, with limitRemaining 0", () => {
  const config = new EngineConfig([domain(1, 1, true)]);
  const counters = new EngineCounters();
  const first = ask(config, counters, call("tenant", "a"), T0);
  const second = ask(config, counters, call("tenant", "a"), T0);
  assert.deepEqual(first.statuses[0], {
    code: "OK",
    currentLimit: { requestsPerUnit: 1, unit: "MINUTE" },
    limitRemaining: 0,
    durationUntilReset: 60,
  });
  assert.equal(second.overallCode, "OK");
  assert.equal(second.statuses[0].limitRemaining, 0);
  assert.equal(counters.get(`${DOMAIN}_tenant_a_${T0}`, T0), 2);
});

Deno.test("an unknown domain, or a descriptor without a limit, is OK and counts nothing", () => {
  const config = new EngineConfig([domain(1)]);
  const counters = new EngineCounters();
  const other = shouldRateLimit(
    config,
    counters,
    { ...call("client", "x"), domain: "other" },
    T0 * 1000,
  );
  assert.ok(other.ok);
  assert.deepEqual(other.answer, {
    overallCode: "OK",
    statuses: [{ code: "OK", limitRemaining: 0 }],
    keys: [],
  });
  const unknown = ask(config, counters, call("nothing", "x"), T0);
  assert.deepEqual(unknown.statuses, [{ code: "OK", limitRemaining: 0 }]);
  assert.equal(counters.size, 0);
  // Deeper than the configuration: "request depth does not match config depth".
  const deep = ask(config, counters, {
    domain: DOMAIN,
    descriptors: [[{ key: "client", value: "x" }, { key: "path", value: "/" }]],
  }, T0);
  assert.deepEqual(deep.statuses, [{ code: "OK", limitRemaining: 0 }]);
  // The engine's errors: no domain, no descriptors.
  assert.equal(shouldRateLimit(config, counters, { domain: "", descriptors: [[]] }, 0).ok, false);
  assert.equal(shouldRateLimit(config, counters, { domain: DOMAIN, descriptors: [] }, 0).ok, false);
});

Deno.test("several descriptors are each counted, all of them, and OVER_LIMIT when any is", () => {
  const config = new EngineConfig([domain(1, 10)]);
  const counters = new EngineCounters();
  const both: EngineRequest = {
    domain: DOMAIN,
    descriptors: [[{ key: "client", value: "a" }], [{ key: "tenant", value: "t" }]],
  };
  const first = ask(config, counters, both, T0);
  assert.equal(first.overallCode, "OK");
  assert.deepEqual(first.statuses.map((s) => s.limitRemaining), [0, 9]);
  const second = ask(config, counters, both, T0);
  assert.equal(second.overallCode, "OVER_LIMIT");
  assert.deepEqual(second.statuses.map((s) => s.code), ["OVER_LIMIT", "OK"]);
  // The tenant counter moved although the call was refused.
  assert.deepEqual(second.statuses.map((s) => s.limitRemaining), [0, 8]);
});

Deno.test("nested descriptors: key_value before key, the limit on the last entry's node", () => {
  const loaded = loadEngineDomain({
    domain: "ns/rl",
    descriptors: [{
      key: "rule",
      value: "0",
      descriptors: [
        { key: "client", value: "vip", rateLimit: { unit: "SECOND", requestsPerUnit: 5 } },
        { key: "client", rateLimit: { unit: "SECOND", requestsPerUnit: 1 } },
      ],
    }, { key: "rule", value: "default", rate_limit: { unit: "hour", requests_per_unit: 2 } }],
  });
  assert.ok(loaded.ok, JSON.stringify(loaded));
  const config = new EngineConfig([loaded.value]);
  const counters = new EngineCounters();
  const req = (client: string): EngineRequest => ({
    domain: "ns/rl",
    descriptors: [[{ key: "rule", value: "0" }, { key: "client", value: client }]],
  });
  assert.equal(ask(config, counters, req("vip"), T0).statuses[0].limitRemaining, 4);
  assert.equal(ask(config, counters, req("bob"), T0).statuses[0].limitRemaining, 0);
  assert.equal(ask(config, counters, req("bob"), T0).overallCode, "OVER_LIMIT");
  // The rule's own node has no limit: a descriptor ending there is not limited.
  const short = ask(config, counters, {
    domain: "ns/rl",
    descriptors: [[{ key: "rule", value: "0" }]],
  }, T0);
  assert.deepEqual(short.statuses, [{ code: "OK", limitRemaining: 0 }]);
  // The YAML spelling: a lower-case unit, snake-case fields.
  const def = ask(config, counters, {
    domain: "ns/rl",
    descriptors: [[{ key: "rule", value: "default" }]],
  }, T0);
  assert.deepEqual(def.statuses[0].currentLimit, { requestsPerUnit: 2, unit: "HOUR" });
});

Deno.test("what the engine refuses in a configuration, and what the model does not follow", () => {
  const dup = loadEngineDomain({
    domain: "d",
    descriptors: [{ key: "a", value: "1" }, { key: "a", value: "1" }],
  });
  assert.ok(!dup.ok);
  assert.match(JSON.stringify(dup.errors), /duplicate descriptor composite key 'a_1'/);
  const unit = loadEngineDomain({
    domain: "d",
    descriptors: [{ key: "a", rate_limit: { unit: "fortnight", requests_per_unit: 1 } }],
  });
  assert.ok(!unit.ok);
  assert.match(JSON.stringify(unit.errors), /descriptors\[0\]\.rate_limit\.unit/);
  const wildcard = loadEngineDomain({ domain: "d", descriptors: [{ key: "a", value: "x*" }] });
  assert.ok(!wildcard.ok);
  assert.match(JSON.stringify(wildcard.errors), /wildcard values are not modelled/);
  const replaces = loadEngineDomain({
    domain: "d",
    descriptors: [{
      key: "a",
      rate_limit: { unit: "second", requests_per_unit: 1, replaces: [{ name: "x" }] },
    }],
  });
  assert.ok(!replaces.ok);
  assert.equal(loadEngineDomain({ domain: "", descriptors: [] }).ok, false);
});

Deno.test("unlimited answers OK with 2^32-1 remaining and counts nothing; hitsAddend adds that many", () => {
  const config = new EngineConfig([{
    domain: DOMAIN,
    descriptors: [
      { key: "free", rateLimit: { unit: "SECOND", requestsPerUnit: 0, unlimited: true } },
      { key: "tenant", rateLimit: { unit: "MINUTE", requestsPerUnit: 10 } },
    ],
  }]);
  const counters = new EngineCounters();
  assert.deepEqual(ask(config, counters, call("free", "x"), T0).statuses, [
    { code: "OK", limitRemaining: 4294967295 },
  ]);
  assert.equal(counters.size, 0);
  const r = ask(config, counters, { ...call("tenant", "a"), hitsAddend: 4 }, T0);
  assert.equal(r.statuses[0].limitRemaining, 6);
});

Deno.test("EngineModel: replicas share one Redis; Redis down is an error; slow Redis counts but times out", () => {
  const config = new EngineConfig([domain(2)]);
  const engine = new EngineModel([{ config, ready: true }, { config, ready: true }]);
  const codes = [0, 1, 2].map(() => {
    const r = engine.ask(call("client", "a"), T0 * 1000, 100);
    return r.ok ? r.answer.overallCode : "ERROR";
  });
  assert.deepEqual(codes, ["OK", "OK", "OVER_LIMIT"]);
  assert.deepEqual(engine.calls, [2, 1]);
  engine.redisUp = false;
  assert.deepEqual(engine.ask(call("client", "b"), T0 * 1000, 100), {
    ok: false,
    error: "redis unavailable",
  });
  engine.redisUp = true;
  engine.redisLatencyMs = 150;
  assert.equal(engine.ask(call("client", "b"), T0 * 1000, 100).ok, false);
  engine.redisLatencyMs = 0;
  const after = engine.ask(call("client", "b"), T0 * 1000, 100);
  assert.ok(after.ok);
  // 2 of 2 used: the slow call was counted.
  assert.equal(after.answer.statuses[0].limitRemaining, 0);
  for (const r of engine.replicas) r.ready = false;
  assert.deepEqual(engine.ask(call("client", "b"), T0 * 1000, 100), {
    ok: false,
    error: "no healthy upstream",
  });
});

Deno.test("property: in one window of one key at most requests_per_unit calls are OK, across proxies and replicas", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 12 }),
      fc.constantFrom<WindowUnit>("SECOND", "MINUTE", "HOUR"),
      fc.integer({ min: 1, max: 3 }),
      fc.array(
        fc.record({
          dtMs: fc.integer({ min: 0, max: 4000 }),
          client: fc.constantFrom("a", "b"),
          proxy: fc.integer({ min: 0, max: 9 }),
        }),
        { maxLength: 120 },
      ),
      fc.boolean(),
      (requests, unit, replicas, calls, shadow) => {
        const config = new EngineConfig([{
          domain: DOMAIN,
          descriptors: [{
            key: "client",
            rateLimit: { unit, requestsPerUnit: requests },
            ...(shadow ? { shadowMode: true } : {}),
          }],
        }]);
        const engine = new EngineModel(
          Array.from({ length: replicas }, () => ({ config, ready: true })),
        );
        let t = T0 * 1000 + 500;
        const ok = new Map<string, number>();
        const sent = new Map<string, number>();
        for (const c of calls) {
          t += c.dtMs;
          const r = engine.ask(call("client", c.client), t, 100);
          assert.ok(r.ok);
          const w = `${c.client}@${windowStart(Math.floor(t / 1000), unit)}`;
          sent.set(w, (sent.get(w) ?? 0) + 1);
          const s = r.answer.statuses[0];
          if (shadow) assert.equal(s.code, "OK");
          else if (s.code === "OK") ok.set(w, (ok.get(w) ?? 0) + 1);
        }
        for (const [w, n] of sent) {
          // Exactly min(calls, limit) admitted: the first `requests` calls of the window.
          if (!shadow) assert.equal(ok.get(w) ?? 0, Math.min(n, requests), w);
        }
      },
    ),
    { numRuns: 300 },
  );
});
