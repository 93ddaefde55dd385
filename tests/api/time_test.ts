/** Kubernetes time formats against the Date they stand in for. */
import assert from "node:assert/strict";
import fc from "fast-check";
import { isoTime, kubeTime } from "../../src/api/time.ts";

const YEAR_10000 = Date.UTC(10000, 0, 1);

Deno.test("isoTime is Date's ISO string from the epoch to the year 9999", () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: YEAR_10000 - 1 }), (ms) => {
      assert.equal(isoTime(ms), new Date(ms).toISOString());
    }),
    { numRuns: 20_000 },
  );
  for (const ms of [0, 951_782_400_000, 4_107_542_400_000, YEAR_10000 - 1]) {
    assert.equal(isoTime(ms), new Date(ms).toISOString(), `at ${ms}`);
  }
});

Deno.test("isoTime truncates fractions and hands other years to Date", () => {
  assert.equal(isoTime(1.9), "1970-01-01T00:00:00.001Z");
  assert.equal(isoTime(-1), new Date(-1).toISOString());
  assert.equal(isoTime(YEAR_10000), new Date(YEAR_10000).toISOString());
});

Deno.test("kubeTime drops milliseconds", () => {
  assert.equal(kubeTime(Date.UTC(2026, 10, 25, 1, 2, 3, 456)), "2026-11-25T01:02:03Z");
});
