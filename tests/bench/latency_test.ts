/**
 * The latency phase's timing logic without a cluster: a fake subject answers each write with
 * watch events after set delays, and each change is timed from the write to the events that show
 * it, not to ones that merely follow it (a stale status, an EnvoyFilter rewritten unchanged).
 */
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import {
  Changes,
  describe,
  parseSpread,
  type Sample,
  spread,
  timeChange,
} from "../../bench/cluster/latency.ts";
import { parseArgs } from "../../bench/main.ts";
import { clusterOptions } from "../../bench/cluster/options.ts";
import { latencyRows, renderLatencySvg } from "../../bench/plot_latency.ts";
import type { Figure } from "../../bench/report.ts";
import { percentile } from "../../bench/stats.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function rl(name: string, generation: number, status?: Record<string, unknown>): KubeObject {
  return {
    apiVersion: "x/v1",
    kind: "RateLimit",
    metadata: { name, generation },
    spec: { max: generation },
    ...(status ? { status } : {}),
  };
}

function ef(name: string, max: number): KubeObject {
  return { apiVersion: "x/v1", kind: "EnvoyFilter", metadata: { name }, spec: { max } };
}

/** Emits `obj` into `changes` after `ms` (0: before the write returns). */
function later(
  changes: Changes,
  kind: "RateLimit" | "EnvoyFilter",
  obj: KubeObject,
  ms: number,
  how: "ADDED" | "MODIFIED" | "DELETED" = "MODIFIED",
) {
  if (ms === 0) changes.see(kind, obj, how);
  else setTimeout(() => changes.see(kind, obj, how), ms);
}

Deno.test("create: timed from the write to the EnvoyFilter added and to the status Ready", async () => {
  const c = new Changes();
  const s = await timeChange(c, "create", "a", async () => {
    later(c, "RateLimit", rl("a", 1), 5, "ADDED");
    later(c, "RateLimit", rl("a", 1, { state: "Warning" }), 20);
    later(c, "EnvoyFilter", ef("b", 1), 10, "ADDED"); // another object's
    later(c, "EnvoyFilter", ef("a", 1), 60, "ADDED");
    later(c, "RateLimit", rl("a", 1, { state: "Ready" }), 120);
    await sleep(1); // the API answers
    return rl("a", 1);
  }, 2_000);
  assert.ok(s.envoyFilterMs! >= 55 && s.envoyFilterMs! < 110, `EnvoyFilter ${s.envoyFilterMs}`);
  assert.ok(s.statusMs! >= 115 && s.statusMs! < 200, `status ${s.statusMs}`);
  assert.equal(s.statusObservable, true);
});

Deno.test("an event that arrives before the write's response still counts", async () => {
  const c = new Changes();
  const s = await timeChange(c, "create", "a", async () => {
    later(c, "EnvoyFilter", ef("a", 1), 0, "ADDED");
    later(c, "RateLimit", rl("a", 1, { state: "Ready" }), 0);
    await sleep(50); // the response is slower than the watch
    return rl("a", 1);
  }, 500);
  assert.ok(s.envoyFilterMs !== undefined && s.envoyFilterMs < 50, `${s.envoyFilterMs}`);
  assert.ok(s.statusMs !== undefined && s.statusMs < 50, `${s.statusMs}`);
});

Deno.test("edit: an unchanged EnvoyFilter and a status of the old generation do not count", async () => {
  const c = new Changes();
  c.see("EnvoyFilter", ef("a", 1), "LISTED");
  c.see("RateLimit", rl("a", 1, { state: "Ready", observedGeneration: 1 }), "LISTED");
  const s = await timeChange(c, "edit", "a", async () => {
    later(c, "EnvoyFilter", ef("a", 1), 10); // rewritten, same spec
    later(c, "RateLimit", rl("a", 2, { state: "Ready", observedGeneration: 1 }), 20);
    later(c, "EnvoyFilter", ef("a", 2), 70);
    later(c, "RateLimit", rl("a", 2, { state: "Ready", observedGeneration: 2 }), 130);
    await sleep(1); // the API answers
    return rl("a", 2);
  }, 2_000);
  assert.ok(s.envoyFilterMs! >= 65, `EnvoyFilter ${s.envoyFilterMs}`);
  assert.ok(s.statusMs! >= 125, `status ${s.statusMs}`);
});

Deno.test("edit: a status without observedGeneration cannot show it and is not waited for", async () => {
  const c = new Changes();
  c.see("EnvoyFilter", ef("a", 1), "LISTED");
  c.see("RateLimit", rl("a", 1, { state: "Ready" }), "LISTED");
  const t0 = performance.now();
  const s = await timeChange(c, "edit", "a", async () => {
    later(c, "EnvoyFilter", ef("a", 2), 30);
    await sleep(1); // the API answers
    return rl("a", 2);
  }, 5_000);
  assert.ok(performance.now() - t0 < 2_000, "returned once the EnvoyFilter changed");
  assert.equal(s.statusObservable, false);
  assert.equal(s.statusMs, undefined);
  assert.equal(spread([s], "edit", "statusMs"), undefined, "no status figure for such a subject");
});

Deno.test("delete: to the EnvoyFilter and the RateLimit deleted; one never seen is counted missed", async () => {
  const c = new Changes();
  const gone = await timeChange(c, "delete", "a", async () => {
    later(c, "RateLimit", rl("a", 1, { state: "Ready" }), 10); // a finalizer's update first
    later(c, "RateLimit", rl("a", 1), 40, "DELETED");
    later(c, "EnvoyFilter", ef("a", 1), 80, "DELETED");
    await sleep(1); // the API answers
    return undefined;
  }, 2_000);
  assert.ok(gone.statusMs! >= 35 && gone.statusMs! < 75, `RateLimit gone ${gone.statusMs}`);
  assert.ok(gone.envoyFilterMs! >= 75, `EnvoyFilter gone ${gone.envoyFilterMs}`);
  const stuck = await timeChange(c, "delete", "b", () => Promise.resolve(undefined), 200);
  assert.deepEqual(stuck, { change: "delete", name: "b", statusObservable: true });
  const sp = spread([gone, stuck], "delete", "envoyFilterMs")!;
  assert.equal(sp.seen, 1);
  assert.equal(sp.missed, 1);
  assert.match(describe(sp, 200), /; 1 NOT SEEN within 0\.2 s$/);
});

Deno.test("spread: p50, p99 (nearest rank) and max of each change apart", () => {
  const samples: Sample[] = Array.from({ length: 50 }, (_, k) => ({
    change: "create",
    name: `c${k}`,
    envoyFilterMs: k + 1,
    statusMs: 2 * (k + 1),
    statusObservable: true,
  }));
  samples.push({ change: "edit", name: "e", envoyFilterMs: 1_000, statusObservable: true });
  const ef = spread(samples, "create", "envoyFilterMs")!;
  assert.deepEqual(ef, { p50: 25, p99: 50, max: 50, seen: 50, missed: 0 });
  assert.equal(spread(samples, "create", "statusMs")!.p50, 50);
  assert.deepEqual(spread(samples, "edit", "statusMs"), {
    p50: NaN,
    p99: NaN,
    max: NaN,
    seen: 0,
    missed: 1,
  });
  assert.equal(percentile([5, 1, 3], 50), 3);
  assert.equal(percentile(Array.from({ length: 200 }, (_, k) => k), 99), 197);
});

Deno.test("the latency plot reads each row's p50, p99 and max back from the figures", () => {
  const note = describe({ p50: 4.5, p99: 1_250, max: 1_300, seen: 50, missed: 0 }, 180_000);
  assert.deepEqual(parseSpread(note), { p50: 4.5, p99: 1_250, max: 1_300 });
  const f = (who: string, name: string, p50: number): Figure => ({
    section: "s",
    name: `${who}: ${name}, p50`,
    value: p50,
    unit: "ms",
    note: describe({ p50, p99: p50 * 2, max: p50 * 3, seen: 50, missed: 0 }, 1_000),
  });
  const rows = latencyRows([
    f("operator", "create one RateLimit among 1,000 Ready: write to EnvoyFilter changed", 50),
    f("peer", "create one RateLimit among 1,000 Ready: write to EnvoyFilter changed", 13),
    f("peer", "delete one RateLimit among 1,000 Ready: write to the RateLimit gone", 5),
    { section: "s", name: "operator: resident memory, 0 RateLimits", value: 58, unit: "MB" },
  ]);
  assert.deepEqual([...rows.keys()], ["create: EnvoyFilter changed", "delete: the RateLimit gone"]);
  assert.deepEqual(rows.get("create: EnvoyFilter changed")!.get("peer"), {
    p50: 13,
    p99: 26,
    max: 39,
  });
  const svg = renderLatencySvg(rows, "test");
  assert.equal(svg.match(/<circle /g)?.length, 3, "a dot a subject and row");
  assert.match(svg, /<title>operator, create: EnvoyFilter changed: p50 50 ms, p99 100 ms/);
});

Deno.test("--latency-size and --latency-changes make the phase smaller; bad counts are refused", () => {
  const a = parseArgs(["--phases=latency", "--latency-size=50", "--latency-changes=3"]);
  assert.deepEqual([a.phases, a.latencySize, a.latencyChanges], [["latency"], 50, 3]);
  assert.throws(() => parseArgs(["--latency-size=0"]), /--latency-size must be a positive integer/);
  assert.throws(() => parseArgs(["--latency-changes=x"]), /--latency-changes must be/);
  assert.deepEqual(clusterOptions(false).latency, { size: 1_000, changes: 50 });
});

Deno.test("--runs and --rest-seconds shorten the convergence runs; bad counts are refused", () => {
  const a = parseArgs(["--only=cluster", "--phases=converge", "--runs=1", "--rest-seconds=5"]);
  assert.equal(a.runs, 1);
  assert.equal(a.restSeconds, 5);
  assert.equal(parseArgs([]).runs, undefined);
  assert.throws(() => parseArgs(["--runs=0"]), /--runs must be a positive integer/);
  assert.throws(() => parseArgs(["--rest-seconds=x"]), /--rest-seconds must be a positive integer/);
});
