/**
 * The global bench (bench/global_limits.ts) cannot rot: its flag and skip reasons, how it reads an
 * engine's `/rlconfig`, and the whole driver in quick mode (10 edits) on a real control plane with
 * the operator as its own process, two real engines and Redis. No duration is asserted: only that
 * every edit was seen loaded by both engines and GlobalEnforced at its generation, and that the
 * figures are ordered (p50 <= p99 <= max) and positive.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  GLOBAL_SECTION,
  globalLimitsOptions,
  type GlobalLimitsRun,
  holdsLimit,
  measureGlobalLimits,
  pauseMs,
  reportGlobalLimits,
} from "../../bench/global_limits.ts";
import { globalSkipReason, parseArgs, SECTIONS, USAGE } from "../../bench/main.ts";
import { meets, Report } from "../../bench/report.ts";
import { CACHE_DIR } from "../../tools/cluster/paths.ts";
import { rlconfigLines } from "../../src/reconcile/ratelimit/engine_config.ts";

Deno.test("--global-edits=N sets the edits; global is a section; --quick alone skips it", async () => {
  assert.ok((SECTIONS as readonly string[]).includes("global"));
  assert.match(USAGE, /--global-edits=N/);
  assert.equal(parseArgs(["--only=global", "--global-edits=7"]).globalEdits, 7);
  assert.throws(() => parseArgs(["--global-edits=0"]), /--global-edits must be a positive integer/);
  assert.equal(globalLimitsOptions(false).edits, 100);
  assert.equal(globalLimitsOptions(true).edits, 10);
  assert.equal(globalLimitsOptions(true, 3).edits, 3);
  assert.match(
    await globalSkipReason(parseArgs(["--quick", "--only=global"])) ?? "",
    /--quick skips the control-plane benches/,
  );
});

Deno.test("an engine's /rlconfig holds the rule's limit only with that exact number", () => {
  // As the engine prints a domain it loaded (the operator's own rendering of its lines).
  const line = (domain: string, requestsPerUnit: number) =>
    rlconfigLines({
      domain,
      descriptors: [{ key: "rule_0", rateLimit: { unit: "MINUTE", requestsPerUnit } }],
    });
  const dump = [...line("bench-global/w-00000", 1001), ...line("other/x", 1002)].join("\n") +
    "\n";
  assert.equal(holdsLimit(dump, "bench-global/w-00000", 1001), true);
  assert.equal(holdsLimit(dump, "bench-global/w-00000", 100), false);
  assert.equal(holdsLimit(dump, "bench-global/w-00000", 1002), false, "another domain's");
  assert.equal(holdsLimit("", "bench-global/w-00000", 1001), false, "nothing loaded");
});

Deno.test("the pauses between edits cover the read-back period evenly", () => {
  const pauses = Array.from({ length: 10 }, (_, k) => pauseMs(k, 1000));
  assert.ok(pauses.every((p) => p >= 0 && p < 1000), pauses.join(", "));
  // Every fifth of the period holds two of ten pauses.
  const fifths = [0, 0, 0, 0, 0];
  for (const p of pauses) fifths[Math.floor(p / 200)]++;
  assert.deepEqual(fifths, [2, 2, 2, 2, 2], pauses.join(", "));
});

Deno.test("the report: figures of each kind; a run with misses says so; the target judged", () => {
  const run: GlobalLimitsRun = {
    edits: 3,
    engines: ["a", "b"],
    engineVersion: "v1",
    upMs: 1,
    operatorMs: 1,
    enginesMs: 1,
    firstEnforcedMs: 1,
    loadedMs: { a: [10, 20], b: [15, 40] },
    allLoadedMs: [15, 40],
    enforcedMs: [900, 1000, 1100],
    missed: { loaded: 1, enforced: 0, last: "edit 2: not loaded by b" },
    reads: 9,
    pollMs: 10,
    spreadMs: 1000,
    load: ["1 1 1", "1 1 1"],
  };
  const lines: string[] = [];
  const report = new Report((l) => lines.push(l));
  reportGlobalLimits(report, run);
  const byName = new Map(report.figures.map((f) => [f.name, f]));
  assert.equal(byName.get("apply to loaded by both engines, max")?.value, 40);
  assert.equal(byName.get("apply to GlobalEnforced True, p50")?.value, 1000);
  assert.equal(meets(byName.get("apply to loaded by both engines, p99")!), true);
  assert.match(lines.join("\n"), /NOT seen within the bound: 1 loaded, 0 enforced \(edit 2/);
  assert.ok(report.figures.every((f) => f.section === GLOBAL_SECTION));
});

Deno.test({
  name: "the global bench in quick mode: every edit loaded by both real engines and GlobalEnforced",
  async fn() {
    const dir = join(CACHE_DIR, `test-global-bench-${Deno.pid}`);
    // An edit not loaded fails here in 20 s an edit, not the bench's minute.
    const o = { ...globalLimitsOptions(true), boundMs: 20_000, dir, logDir: `${dir}-logs` };
    const lines: string[] = [];
    try {
      const run = await measureGlobalLimits(o, (l) => lines.push(l));
      const context = `${JSON.stringify(run)}\n${lines.join("\n")}`;
      assert.deepEqual(run.missed, { loaded: 0, enforced: 0 }, context);
      assert.equal(run.engines.length, 2);
      for (const name of run.engines) assert.equal(run.loadedMs[name].length, o.edits, context);
      assert.equal(run.allLoadedMs.length, o.edits);
      assert.equal(run.enforcedMs.length, o.edits);
      // Both engines were read at least once an edit; each edit's "both" is its later engine.
      assert.ok(run.reads >= 2 * o.edits, context);
      for (let k = 0; k < o.edits; k++) {
        assert.equal(
          run.allLoadedMs[k],
          Math.max(...run.engines.map((n) => run.loadedMs[n][k])),
        );
      }
      const report = new Report(() => {});
      reportGlobalLimits(report, run);
      const value = (name: string) => {
        const f = report.figures.find((x) => x.name === name);
        assert.ok(f, `${name} in ${report.figures.map((x) => x.name).join("; ")}`);
        return f.value;
      };
      for (const what of ["apply to loaded by both engines", "apply to GlobalEnforced True"]) {
        const [p50, p99, max] = ["p50", "p99", "max"].map((p) => value(`${what}, ${p}`));
        assert.ok(p50 > 0 && p50 <= p99 && p99 <= max, `${what}: ${p50} ${p99} ${max}`);
      }
      assert.deepEqual(report.skipped, []);
    } finally {
      await Deno.remove(`${dir}-logs`, { recursive: true }).catch(() => {});
    }
  },
});
