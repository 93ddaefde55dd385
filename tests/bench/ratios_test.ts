/**
 * The reducer bench's guard (bench/ratios.ts): CI runs the bench in quick mode and fails when a
 * figure's ratio to its in-run baseline is more than 1.5 times the ratio recorded in
 * bench/ratios.json. First the check itself on made-up figures (what fails, that a one-off is
 * measured again, that every figure needs a record), then the real bench against the record.
 */
import assert from "node:assert/strict";
import {
  checkRatios,
  medians,
  overTolerance,
  type Ratios,
  type RecordedRatios,
  recordedRatios,
} from "../../bench/ratios.ts";

const RECORD: RecordedRatios = {
  tolerance: 1.5,
  commit: "abc1234",
  date: "2026-01-01 00:00 UTC",
  machine: "test",
  why: "test",
  ratios: { "RateLimit, 4 rules": 3, "controller": 100 },
};

Deno.test("guard: a ratio over 1.5 times the recorded one fails, naming it; at 1.5 it passes", () => {
  assert.deepEqual(overTolerance({ "RateLimit, 4 rules": 4.5, "controller": 100 }, RECORD), []);
  const failures = overTolerance({ "RateLimit, 4 rules": 8.41, "controller": 90 }, RECORD);
  assert.equal(failures.length, 1);
  assert.match(failures[0], /^RateLimit, 4 rules: ratio 8\.41 is 2\.80 times the 3 recorded/);
});

Deno.test("guard: a figure without a record, or a record without a figure, fails", () => {
  const failures = overTolerance({ "RateLimit, 4 rules": 3, "new figure": 1 }, RECORD);
  assert.deepEqual(failures.map((f) => f.split(":")[0]), ["new figure", "controller"]);
});

Deno.test("guard: a one-off slow figure is measured again and passes; a slow one fails each time", async () => {
  const runs: Ratios[] = [
    { "RateLimit, 4 rules": 5, "controller": 100 },
    { "RateLimit, 4 rules": 3.2, "controller": 170 },
  ];
  let calls = 0;
  const noisy = await checkRatios(RECORD, () => Promise.resolve(runs[calls++]));
  assert.deepEqual(noisy, {
    ratios: { "RateLimit, 4 rules": 3.2, "controller": 100 },
    failures: [],
    attempts: 2,
  });
  const slow = await checkRatios(RECORD, () => Promise.resolve({ ...runs[0], controller: 160 }));
  assert.equal(slow.attempts, 3);
  assert.equal(slow.failures.length, 2);
});

Deno.test("guard: the record is each figure's median over runs", () => {
  assert.deepEqual(medians([{ a: 1, b: 9 }, { a: 3, b: 7 }, { a: 2, b: 8.004 }]), { a: 2, b: 8 });
});

Deno.test("guard: the reducer bench (quick) is within 1.5 times the ratios in bench/ratios.json", async () => {
  const recorded = await recordedRatios();
  assert.equal(recorded.tolerance, 1.5, "the tolerance is the issue's 50%");
  const { ratios, failures, attempts } = await checkRatios(recorded);
  const table = Object.entries(ratios).map(([name, r]) =>
    `  ${name}: ${r.toFixed(2)} (recorded ${recorded.ratios[name] ?? "none"})`
  );
  assert.deepEqual(
    failures,
    [],
    `after ${attempts} measurements, lowest ratio each:\n${table.join("\n")}\n` +
      "If the change is meant, record anew with its reason: " +
      'deno run -A bench/ratios.ts --record="why", and say why in the commit.',
  );
});
