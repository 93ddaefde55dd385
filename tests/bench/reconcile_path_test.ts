/**
 * One RateLimit reconcile, from the controller to its Plan, enters no file again while still
 * inside it (issue 41): no callback takes the path back into a room it came through. Measured by
 * bench/reconcile_path.ts with the CPU profiler, for a RateLimit at rest, a refused generation
 * that keeps its filter, and a newer rival refused for a conflict.
 */
import assert from "node:assert/strict";
import { reconcilePaths } from "../../bench/reconcile_path.ts";

Deno.test("one RateLimit reconcile enters no file twice on one stack", async () => {
  const reports = await reconcilePaths(10_000);
  assert.deepEqual(reports.map((r) => [r.scenario, r.outcome.split(",")[0]]), [
    ["at rest", "Ready"],
    ["refused", "Error"],
    ["conflict", "Error"],
  ]);
  for (const r of reports) {
    assert.ok(r.samples > 1000, `${r.scenario}: ${r.samples} samples`);
    assert.ok(r.entered.includes("src/reconcile/ratelimit/mod.ts"), r.scenario);
    assert.deepEqual(r.reentries, [], r.scenario);
  }
});
