/**
 * Regressions found by the benches at scale (see bench/RESULTS.md). They assert what happens, in
 * order or in counts, never how long it takes.
 */
import assert from "node:assert/strict";
import { controllerLoops, filledCache } from "../../bench/controller.ts";
import { systemClock, systemRandom } from "../../src/runtime/clock.ts";
import { WorkQueue } from "../../src/runtime/queue.ts";
import { RESOURCES } from "../../src/api/resources.ts";

function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) { /* a reconcile that needs no I/O */ }
}

Deno.test("a queue of work that never waits on I/O still lets a timer run before it drains", async () => {
  const keys = 150;
  let ran = 0;
  let ranWhenTimerFired = -1;
  const timer = new Promise<void>((resolve) =>
    setTimeout(() => {
      ranWhenTimerFired = ran;
      resolve();
    }, 0)
  );
  let drained!: () => void;
  const done = new Promise<void>((r) => drained = r);
  const q = new WorkQueue({ clock: systemClock, random: systemRandom, concurrency: 2 }, () => {
    busy(1);
    if (++ran === keys) drained();
    return Promise.resolve({ type: "done" });
  });
  for (let i = 0; i < keys; i++) q.add(`ns/k${i}`);
  await Promise.all([timer, done]);
  await q.shutdown();
  assert.ok(
    ranWhenTimerFired >= 0 && ranWhenTimerFired < keys,
    `timer fired after ${ranWhenTimerFired} of ${keys}`,
  );
});

Deno.test("the controller reads each namespace's lists from the cache, not one filter a call", () => {
  const { cache, keys } = filledCache(3, 20);
  const a = cache.list(RESOURCES.RateLimit, "bench-1");
  assert.equal(a.length, 20);
  assert.ok(a.every((o) => o.metadata.namespace === "bench-1"));
  assert.equal(
    cache.list(RESOURCES.RateLimit, "bench-1"),
    a,
    "the same list until the store changes",
  );
  assert.deepEqual(a.map((o) => o.metadata.name), [...a.map((o) => o.metadata.name)].sort());
  const { subject } = controllerLoops(cache, keys);
  assert.equal(subject(keys.length), keys.length, "every RateLimit in place: one EnvoyFilter each");
});
