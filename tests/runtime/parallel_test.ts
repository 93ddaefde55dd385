/** inParallel: every item once, at most `width` in flight, results in the items' order. */
import assert from "node:assert/strict";
import { inParallel } from "../../src/runtime/parallel.ts";

Deno.test("inParallel keeps the items' order and never has more than width in flight", async () => {
  let inFlight = 0;
  let most = 0;
  const seen: number[] = [];
  const out = await inParallel([5, 1, 4, 2, 3, 0, 6], 3, async (ms, i) => {
    most = Math.max(most, ++inFlight);
    seen.push(i);
    await new Promise((r) => setTimeout(r, ms));
    inFlight--;
    return ms * 10;
  });
  assert.deepEqual(out, [50, 10, 40, 20, 30, 0, 60]);
  assert.equal(most, 3);
  assert.deepEqual(seen.sort(), [0, 1, 2, 3, 4, 5, 6]);
  assert.deepEqual(await inParallel([], 4, () => Promise.resolve(1)), []);
});

Deno.test("inParallel rejects with the first failure", async () => {
  await assert.rejects(
    inParallel(
      [1, 2, 3],
      2,
      (n) => n === 2 ? Promise.reject(new Error("two")) : Promise.resolve(n),
    ),
    /two/,
  );
});
