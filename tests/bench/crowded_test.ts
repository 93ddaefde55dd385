/**
 * The crowded phase's memory figures (bench/cluster/crowded.ts): the peak over settled is the
 * median of each start's own ratio, not a ratio of medians, and one start is what the quick run
 * makes.
 */
import assert from "node:assert/strict";
import { memoryFigures } from "../../bench/cluster/crowded.ts";
import { clusterOptions } from "../../bench/cluster/options.ts";

Deno.test("crowded: peak over settled is the median of the starts' own ratios", () => {
  // Ratios 1.2, 1.05 and 1.08: their median is 1.08; the medians' ratio would be 72/65 = 1.108.
  const starts = [
    { peakMb: 72, mb: 60 },
    { peakMb: 73.5, mb: 70 },
    { peakMb: 70.2, mb: 65 },
  ];
  const f = memoryFigures(starts);
  assert.equal(f.mb, 65);
  assert.equal(f.peakMb, 72);
  assert.equal(f.ratio.toFixed(3), "1.080");
  assert.equal(memoryFigures([{ peakMb: 71.5, mb: 65 }]).ratio, 1.1);
});

Deno.test("crowded: the full run settles three starts for memory, the quick run one", () => {
  assert.equal(clusterOptions(false).memoryRuns, 3);
  assert.equal(clusterOptions(true).memoryRuns, 1);
});
