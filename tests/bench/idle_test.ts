/**
 * Idleness is for memory readings only and bounded: a subject that never goes quiet (a fake whose
 * reconcile count grows at every look, as the peer's does when its requeues never leave a 5 s gap)
 * still gets its figure, taken at the bound and marked in the note; and no phase of the cluster
 * bench waits on idleness but through that bound.
 */
import assert from "node:assert/strict";
import { idleMark, idleRss, settle } from "../../bench/cluster/idle.ts";
import { waitIdleBy, type WorkProbe } from "../../bench/cluster/operator.ts";

/** A subject that reconciles between any two looks at its metrics, forever. */
function neverQuiet() {
  let total = 0;
  const work: WorkProbe = () => Promise.resolve({ total: ++total, depth: 0 });
  return {
    pid: Deno.pid,
    waitIdle: (quietMs: number, timeoutMs: number) =>
      waitIdleBy("never-quiet fake", work, quietMs, timeoutMs),
  };
}

/** A subject with nothing to do. */
function quiet() {
  const work: WorkProbe = () => Promise.resolve({ total: 7, depth: 0 });
  return {
    pid: Deno.pid,
    waitIdle: (quietMs: number, timeoutMs: number) =>
      waitIdleBy("quiet fake", work, quietMs, timeoutMs),
  };
}

/** Fails when `p` has not settled within `ms`: what the old one-hour wait would do here. */
async function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`still waiting after ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const FAST = { everyMs: 50, minMs: 100, maxMs: 1_000 };

Deno.test("a subject that never goes quiet still gets a memory figure, marked NOT IDLE", async () => {
  const t0 = Date.now();
  const m = await within(10_000, idleRss(neverQuiet(), 1_000, 2_000, FAST));
  assert.equal(m.settled.idle, false);
  assert.ok(Date.now() - t0 >= 2_000, "it waited out the bound first");
  assert.ok(m.mb > 0, `a reading: ${m.mb}`);
  assert.match(m.mark, /^NOT IDLE: still reconciling after the 2 s bound, so taken then; $/);
});

Deno.test("settle: the wait after convergence ends at its bound, not in an hour", async () => {
  // The old converge phase waited `r.waitIdle(5_000, 3_600_000)` here and hung for 37 minutes.
  const s = await within(10_000, settle(neverQuiet(), 1_000, 2_000));
  assert.deepEqual(s, { idle: false, boundMs: 2_000 });
  assert.notEqual(idleMark(s), "");
});

Deno.test("a quiet subject is idle, with its reconciles, and its figure is not marked", async () => {
  const m = await within(10_000, idleRss(quiet(), 600, 5_000, FAST));
  assert.deepEqual(m.settled, { idle: true, boundMs: 5_000, reconciles: 7 });
  assert.equal(m.mark, "");
  // What the reading is made of, from the same /proc/<pid>/status.
  assert.match(m.split, /^of it \d+(\.\d)? MB anonymous .* and \d+(\.\d)? MB file-backed /);
});

Deno.test("no cluster phase waits on idleness but through the bounded settle", async () => {
  for (const f of ["mod.ts", "phases.ts", "latency.ts", "latency_phase.ts"]) {
    const text = await Deno.readTextFile(new URL(`../../bench/cluster/${f}`, import.meta.url))
      .catch(() => "");
    assert.doesNotMatch(text, /\.waitIdle\(/, `bench/cluster/${f} calls waitIdle directly`);
  }
});
