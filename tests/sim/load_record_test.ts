/**
 * The simulator's half of issue #45 point 6 (tests/e2e/faults_load.ts), without a cluster: a
 * recorded run of edits under faults becomes a scenario of the same sequence with the simulator's
 * equivalent faults; its final statuses are compared with the real run's, and a wrong prediction
 * shows as a difference naming the object.
 */
import assert from "node:assert/strict";
import { podManifest, rateLimitObject, workloadName } from "../../bench/fixtures.ts";
import { runScenario } from "../../sim/scenario/run.ts";
import {
  LOAD_START_MS,
  type LoadRecord,
  loadScenario,
  rateLimitFinals,
  resolveEdits,
} from "../e2e/faults_load.ts";
import type { EditSent } from "../e2e/faults_deployed.ts";
import { type Finals, finalsDiff, simFinals } from "../e2e/finals.ts";

const NS = "faults";
const COUNT = 6;

/** A run as faults_load_test records one: 40 edits round-robin, some refused, under every fault. */
function record(): LoadRecord {
  const edits: EditSent[] = Array.from({ length: 40 }, (_, k) => ({
    at: 1_000 + k * 1_500,
    name: workloadName(k % COUNT),
    maxTokens: 1_000 + k,
    // Refused while the API server is down (30 to 36 s): never landed.
    ok: !(k >= 20 && k <= 23),
  }));
  const last = new Map(edits.filter((e) => e.ok).map((e) => [e.name, e.maxTokens]));
  return {
    namespace: NS,
    pods: Array.from({ length: COUNT }, (_, i) => podManifest(i, NS)),
    rateLimits: Array.from(
      { length: COUNT },
      (_, i) => rateLimitObject({ i, rules: 4, namespace: NS }),
    ),
    edits,
    faults: [
      { kind: "partition", at: 2_000, forMs: 25_000 },
      { kind: "apiServerRestart", at: 30_000, forMs: 6_000 },
      { kind: "etcdRestart", at: 40_000, forMs: 4_000 },
      { kind: "compaction", at: 48_000, forMs: 20 },
      { kind: "apiServerRestart", at: 49_000, forMs: 5_000 },
    ],
    finalMaxTokens: Object.fromEntries(last),
  };
}

/** What the real run said of each RateLimit: Ready, its limit applied and enforced. */
function realReady(): Finals {
  return Object.fromEntries(
    Array.from({ length: COUNT }, (_, i) => [
      `RateLimit ${NS}/${workloadName(i)}`,
      { state: "Ready", conditions: ["Enforced=True/Enforced", "Ready=True/Applied"] },
    ]),
  );
}

Deno.test("an unanswered edit whose value is the final spec's landed: it joins the sequence", () => {
  const rec = record();
  // Edit 21 (w-00003, 1021) went unanswered, yet the final spec holds its value.
  rec.finalMaxTokens[workloadName(3)] = 1_021;
  rec.edits = rec.edits.filter((e) => !(e.ok && e.name === workloadName(3) && e.maxTokens > 1_021));
  const { edits, landedUnanswered } = resolveEdits(rec);
  assert.equal(landedUnanswered, 1);
  assert.equal(edits.findLast((e) => e.name === workloadName(3))?.maxTokens, 1_021);
  assert.equal(edits.filter((e) => !e.ok).length, 1, "the other refused edits left out");
  // A final spec that no edit sent cannot be explained: refused, not guessed.
  rec.finalMaxTokens[workloadName(2)] = 7;
  assert.throws(() => resolveEdits(rec), /w-00002: its final maxTokens 7 is neither/);
});

Deno.test("the scenario of a recorded run: its edits at their times, each fault as the simulator's", () => {
  const sc = loadScenario(record());
  const faults = sc.steps.flatMap((s) => (s.fault ?? []).map((f) => ({ at: s.at, f })));
  assert.deepEqual(faults.map(({ at, f }) => `${at - LOAD_START_MS} ${f.kind}`), [
    "2000 partition",
    "30000 apiServerDown",
    "40000 apiServerDown",
    "48000 compact",
    "48000 compact",
    "48000 compact",
    "49000 apiServerDown",
  ]);
  assert.deepEqual(
    faults.map(({ f }) => ("watches" in f ? f.watches : "")).filter(Boolean),
    ["drop", "keep", "drop"],
  );
  const applies = sc.steps.slice(1).flatMap((s) => s.apply ?? []);
  assert.equal(applies.length, 36, "the 36 accepted edits, the 4 refused left out");
  assert.equal(sc.steps[0].apply?.length, 1 + 2 * COUNT, "the namespace, Pods and RateLimits");
});

Deno.test("a recorded run on the simulator: the final statuses equal the real run's; a wrong prediction differs", async () => {
  const sim = await runScenario(loadScenario(record()));
  assert.ok(sim.ok, sim.failure ?? "");
  const actions = sim.timeline.flatMap((e) => e.event === "step" ? [e.action] : []);
  assert.ok(
    actions.some((a) => /^fault partition: platform-operator-\d cut off/.test(a)),
    actions.join("\n"),
  );
  assert.equal(finalsDiff(rateLimitFinals(simFinals(sim.timeline)), realReady()), "");
  // Deliberately wrong: the prediction made without w-00004's Pod says it limits nothing.
  const wrong = record();
  wrong.pods = wrong.pods.filter((p) => p.metadata.labels?.app !== workloadName(4));
  const off = await runScenario(loadScenario(wrong));
  assert.ok(off.ok, off.failure ?? "");
  const diff = finalsDiff(rateLimitFinals(simFinals(off.timeline)), realReady());
  assert.match(diff, /^RateLimit faults\/w-00004:\n {4}simulator: .*NoPodSelected/);
  assert.equal(diff.split("\n").length, 3, `only w-00004 differs:\n${diff}`);
});
