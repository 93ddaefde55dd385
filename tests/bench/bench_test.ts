/**
 * Smoke tests of the benches: each piece of `deno task bench --quick` runs at a tiny size and
 * reports sane figures (finite, positive, with a baseline and a ratio). No timing is asserted.
 */
import assert from "node:assert/strict";
import { clusterSkipReason, parseArgs } from "../../bench/main.ts";
import { benchDataplane, decisionLoops, proxyFor, requestPool } from "../../bench/dataplane.ts";
import { benchReducers, rateLimitInputs, rateLimitLoops } from "../../bench/reducer.ts";
import { type Figure, formatFigure, meets, Report } from "../../bench/report.ts";
import { compareLoops, median, perSecond } from "../../bench/stats.ts";
import { reconcileRateLimit } from "../../src/reconcile/ratelimit/mod.ts";
import { decide } from "../../src/dataplane/mod.ts";
import { NOW } from "../../bench/worlds.ts";
import { RULE_COUNTS } from "../../bench/fixtures.ts";
import { MAX_BUCKET_RULES } from "../../src/api/ratelimit_bounds.ts";
import { benchSim, sweepOnce } from "../../bench/sim.ts";
import { stepShares } from "../../bench/profile.ts";

function quietReport(): { report: Report; lines: string[] } {
  const lines: string[] = [];
  return { report: new Report((l) => lines.push(l)), lines };
}

function assertSane(f: Figure): void {
  assert.ok(Number.isFinite(f.value) && f.value > 0, `${f.name}: value ${f.value}`);
  assert.ok(
    f.baseline && Number.isFinite(f.baseline.value) && f.baseline.value > 0,
    `${f.name}: baseline`,
  );
  assert.ok(
    f.ratio !== undefined && Number.isFinite(f.ratio) && f.ratio > 0,
    `${f.name}: ratio ${f.ratio}`,
  );
}

Deno.test("median: odd and even counts, empty is NaN; perSecond", () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.ok(Number.isNaN(median([])));
  assert.equal(perSecond(500, 250), 2000);
});

Deno.test("compareLoops: a loop doing more work a unit has a ratio above 1", () => {
  const work = (k: number) => (n: number) => {
    let x = 0;
    for (let i = 0; i < n * k; i++) x += Math.sqrt(i);
    return x;
  };
  const c = compareLoops(work(50), work(1), { n: 2_000, runs: 3 });
  assert.ok(c.ratio > 1, `ratio ${c.ratio}`);
  assert.equal(c.samples.subject.length, 3);
  assert.equal(c.samples.baseline.length, 3);
});

Deno.test("compareLoops: warmupMs warms both loops in turn until that long has passed", () => {
  let subjectCalls = 0;
  let baselineCalls = 0;
  const busy = (ms: number) => {
    const end = performance.now() + ms;
    while (performance.now() < end) { /* spin */ }
  };
  const subject = () => (busy(1), ++subjectCalls);
  const baseline = () => (busy(1), ++baselineCalls);
  // On the CPU clock: a call spins until 1 ms of wall time has passed, so it spends at most 1 ms
  // of CPU, however busy the machine (on the wall clock a descheduled call took longer, and a
  // rehearsal beside other work saw 9 pairs).
  compareLoops(subject, baseline, { n: 1, runs: 1, warmupMs: 40, clock: "cpu" });
  // At least 20 untimed pairs of at most 2 ms, then one timed run each; without warmupMs, 1 and 1.
  assert.ok(subjectCalls >= 10 && baselineCalls >= 10, `${subjectCalls}, ${baselineCalls}`);
  subjectCalls = baselineCalls = 0;
  compareLoops(subject, baseline, { n: 1, runs: 1 });
  assert.equal(subjectCalls, 2);
  assert.equal(baselineCalls, 2);
});

Deno.test("targets: meets reads the value or the ratio; the line says met or MISSED", () => {
  const f: Figure = {
    section: "s",
    name: "x",
    value: 10,
    unit: "objects/s",
    ratio: 2,
    target: { of: "value", op: ">=", bound: 20 },
  };
  assert.equal(meets(f), false);
  assert.match(formatFigure(f), /MISSED/);
  assert.equal(meets({ ...f, target: { of: "ratio", op: "<=", bound: 2 } }), true);
  assert.equal(meets({ ...f, target: undefined }), undefined);
});

Deno.test("args: --quick, --cluster, --only, --json; unknown ones are refused", () => {
  assert.deepEqual(parseArgs(["--quick", "--only=reducer,sim"]), {
    quick: true,
    cluster: false,
    only: ["reducer", "sim"],
  });
  assert.equal(parseArgs(["--json=out.json"]).json, "out.json");
  assert.throws(() => parseArgs(["--only=nope"]), /unknown bench nope/);
  assert.throws(() => parseArgs(["--fast"]), /unknown argument --fast/);
});

Deno.test("--quick without --cluster skips the control plane and says how to run it", async () => {
  const why = await clusterSkipReason(parseArgs(["--quick"]));
  assert.match(why ?? "", /--quick skips the control-plane benches.*--cluster/);
});

Deno.test("reducer inputs are at their fixpoint: reconciling gives back the status they carry", () => {
  for (const rules of RULE_COUNTS) {
    const inputs = rateLimitInputs(rules);
    for (const input of inputs) {
      const plan = reconcileRateLimit(input);
      const status = (input.rateLimit as { status?: unknown }).status;
      assert.deepEqual(plan.status, status, `${rules} rules`);
      assert.equal(plan.apply.length, 1);
      assert.equal(plan.events.length, 0, "a steady-state reconcile records no Event");
    }
  }
});

Deno.test("reducer loops do their work: one EnvoyFilter a reconcile, every object parses", () => {
  const { subject, baseline } = rateLimitLoops(rateLimitInputs(4));
  assert.equal(subject(25), 25);
  assert.equal(baseline(25), 25);
});

Deno.test("reducer bench: every kind reports a sane figure", async () => {
  const { report, lines } = quietReport();
  await benchReducers(report, {
    n: 50,
    moduleN: 5,
    crowdN: 3,
    crowd: 20,
    oneNamespace: 50,
    runs: 1,
  });
  assert.deepEqual(report.figures.map((f) => f.name), [
    "RateLimit, 0 rules",
    "RateLimit, 4 rules",
    `RateLimit, ${MAX_BUCKET_RULES} rules`,
    "RateLimit, 4 rules, 20 peers",
    "RateLimit controller, 200 cached",
    "RateLimit controller, 50 RateLimits and Pods in one namespace",
    "Serverless",
    "Scaler",
  ]);
  report.figures.forEach(assertSane);
  assert.ok(report.figures[1].target, "the 4-rule figure carries the 20,000/s target");
  assert.ok(report.figures[5].target, "the one-namespace figure carries issue 14's target");
  assert.ok(report.figures.slice(6).every((f) => /steady state Ready/.test(f.note ?? "")));
  assert.ok(lines.some((l) => l.includes("RateLimit, 4 rules")));
});

Deno.test("data-plane requests both pass and hit the limit, and every rule's bucket is used", () => {
  const state = proxyFor(4);
  const statuses = new Set<number>();
  const buckets = new Set<string>();
  const pool = requestPool(4);
  for (let i = 0; i < 2_000; i++) {
    const d = decide(state, pool[i % pool.length], NOW);
    statuses.add(d.status);
    buckets.add(String(d.bucket));
  }
  assert.deepEqual([...statuses].sort(), [200, 429]);
  assert.deepEqual([...buckets].sort(), ["0", "1", "2", "3", "default"]);
  const { subject, baseline } = decisionLoops(4);
  assert.ok((subject(1_000) as number) > 0);
  assert.ok((baseline(1_000) as number) > 0);
});

Deno.test("data-plane bench: one proxy at 0, 4, 8 rules and the mesh report sane figures", () => {
  const { report } = quietReport();
  benchDataplane(report, { n: 2_000, runs: 1 });
  assert.equal(report.figures.length, 4);
  report.figures.forEach(assertSane);
  assert.ok(report.figures.every((f) => !f.target), "the 5 M decisions/s target is retired");
});

Deno.test("simulator bench: one seed a pass reports virtual seconds a wall second and seeds a minute", async () => {
  const { report } = quietReport();
  await benchSim(report, { seeds: 1, runs: 1 });
  assert.deepEqual(report.figures.map((f) => f.unit), ["virtual s/s", "seeds/min"]);
  report.figures.forEach(assertSane);
  const t = await sweepOnce(1, 1, "default");
  assert.equal(t.failed, 0, "seed 1 of the sweep passes");
  assert.ok(t.virtualMs > 60_000, `a seed covers minutes of virtual time, got ${t.virtualMs} ms`);
});

Deno.test("stepShares: a sample counts for the outermost listed step below the subject, in the timed loop", () => {
  const frame = (functionName: string) => ({ functionName, url: "file:///x.ts", lineNumber: 0 });
  // root > setup > reconcile > parse; root > subject > reconcile > {parse, render > parse, own}
  const nodes = [
    { id: 1, callFrame: frame("(root)"), children: [2, 5, 10] },
    { id: 2, callFrame: frame("setup"), children: [3] },
    { id: 3, callFrame: frame("reconcile"), children: [4] },
    { id: 4, callFrame: frame("parse") },
    { id: 5, callFrame: frame("subject"), children: [6] },
    { id: 6, callFrame: frame("reconcile"), children: [7, 8, 11] },
    { id: 7, callFrame: frame("parse") },
    { id: 8, callFrame: frame("render"), children: [9] },
    { id: 9, callFrame: frame("parse") },
    { id: 10, callFrame: frame("(garbage collector)") },
    { id: 11, callFrame: frame("helper") },
  ];
  const samples = [4, 7, 9, 9, 11, 10];
  const profile = { nodes, samples, timeDeltas: samples.map(() => 1000) };
  const steps = { parse: ["parse"], render: ["render"] };
  assert.deepEqual(stepShares(profile, "reconcile", steps, { under: "subject" }), [
    { step: "parse", ms: 1, share: 0.25 },
    { step: "render", ms: 2, share: 0.5 },
    { step: "other", ms: 1, share: 0.25 },
  ]);
  assert.equal(stepShares(profile, "reconcile", steps)[0].ms, 2, "without `under`, set-up counts");
});
