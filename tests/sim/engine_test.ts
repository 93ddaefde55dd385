/**
 * The simulated global rate limit engine (sim/engine.ts) and the global-window invariant
 * (sim/global_windows.ts): the invariant's counting, and a sweep seed with global limits that runs
 * the engine with its faults, replays byte for byte, and passes with the real operator.
 */
import assert from "node:assert/strict";
import { GlobalWindows } from "../../sim/global_windows.ts";
import { runSeed } from "../../sim/seed_run.ts";
import { faultsFor } from "../../sim/fault_choice.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { MeshResponse } from "../../src/dataplane/mod.ts";

const T0 = 1795877160_000;

function rateLimit(requests: number, unit = "Second"): KubeObject {
  return {
    apiVersion: "gateway.platform-project.io/v1alpha1",
    kind: "RateLimit",
    metadata: { name: "rl", namespace: "demo" },
    spec: { global: { rules: [{ path: "/global", limit: { requests, unit } }] } },
  };
}

function answered(extra: Partial<NonNullable<MeshResponse["global"]>> = {}): MeshResponse {
  return {
    status: 200,
    headers: {},
    body: "",
    global: { domain: "demo/rl", code: "OK", keys: [`demo/rl_rule_0_${T0 / 1000}`], ...extra },
  };
}

Deno.test("global-window: a window admits at most the limit the spec gave, shadow and failures aside", () => {
  const w = new GlobalWindows();
  w.observe(rateLimit(2));
  assert.equal(w.check(answered(), T0), undefined);
  assert.equal(w.check(answered(), T0 + 500), undefined);
  // Not admissions of the engine: refused, failed open, shadow over the limit.
  assert.equal(
    w.check({ ...answered({ code: "OVER_LIMIT" }), rejected: true }, T0 + 600),
    undefined,
  );
  assert.equal(w.check(answered({ code: "ERROR", failedOpen: true }), T0 + 700), undefined);
  assert.equal(w.check(answered({ shadowOverLimit: true }), T0 + 800), undefined);
  assert.match(
    w.check(answered(), T0 + 900) ?? "",
    /^global limit: demo\/rl_rule_0 admitted 3 requests in the SECOND window starting 2026-11-28T14:46:00\.000Z, its limit 2$/,
  );
  // The next window starts from zero.
  const v = new GlobalWindows();
  v.observe(rateLimit(1));
  assert.equal(v.check(answered(), T0 + 999), undefined);
  assert.equal(v.check(answered(), T0 + 1000), undefined);
  assert.equal(v.windows, 2);
});

Deno.test("global-window: the limit is the largest any generation gave the rule", () => {
  const w = new GlobalWindows();
  w.observe(rateLimit(3));
  w.observe(rateLimit(1));
  for (let i = 0; i < 3; i++) assert.equal(w.check(answered(), T0 + i), undefined);
  assert.ok(w.check(answered(), T0 + 3));
  // Another RateLimit's responses are not this one's.
  const other = new GlobalWindows();
  other.observe(rateLimit(1));
  const elsewhere = answered({ domain: "demo/other", keys: [`demo/other_rule_0_${T0 / 1000}`] });
  assert.equal(other.check(elsewhere, T0), undefined);
  assert.equal(other.check(elsewhere, T0), undefined);
});

Deno.test("a sweep seed with global limits runs the engine and its faults, and replays byte for byte", async () => {
  const run = () => runSeed(1, { faults: faultsFor("default", 1) });
  const a = await run();
  const b = await run();
  assert.ok(a.ok, a.failure ?? "");
  assert.equal(a.traceHash, b.traceHash);
  assert.deepEqual(a.timeline, b.timeline);
  const engine = a.timeline.flatMap((e) =>
    "detail" in e && e.detail.startsWith("engine: ") ? [e.detail] : []
  );
  assert.ok(engine.length > 0, "the engine's faults are drawn and traced");
  assert.ok(engine.some((d) => /^engine: redis down for \d+ ms$/.test(d)), engine.join("; "));
});
