import assert from "node:assert/strict";
import { WorkQueue, type WorkResult } from "../../src/runtime/queue.ts";
import { ManualClock, seededRandom } from "./helpers.ts";

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => resolve = r);
  return { promise, resolve };
}

function setup(handler: (key: string) => Promise<WorkResult>, concurrency = 1) {
  const clock = new ManualClock();
  const depths: number[] = [];
  const q = new WorkQueue(
    { clock, random: seededRandom(), concurrency, onDepth: (d) => depths.push(d) },
    handler,
  );
  return { clock, q, depths };
}

Deno.test("queue dedupes a key that is waiting", async () => {
  const seen: string[] = [];
  const { clock, q, depths } = setup((k) => {
    seen.push(k);
    return Promise.resolve({ type: "done" });
  });
  q.add("a");
  q.add("b");
  q.add("a");
  q.add("a");
  assert.equal(q.depth, 2);
  await clock.flush();
  assert.deepEqual(seen, ["a", "b"]);
  assert.equal(depths.at(-1), 0);
});

Deno.test("queue never runs one key twice at once and runs it once more after re-adds", async () => {
  const gate = deferred();
  let running = 0;
  let maxRunning = 0;
  let runs = 0;
  const { clock, q } = setup(async () => {
    runs++;
    running++;
    maxRunning = Math.max(maxRunning, running);
    if (runs === 1) await gate.promise;
    running--;
    return { type: "done" };
  }, 4);
  q.add("a");
  await clock.flush();
  q.add("a");
  q.add("a");
  q.add("a");
  await clock.flush();
  assert.equal(runs, 1, "still the first run");
  gate.resolve();
  await clock.flush();
  assert.equal(runs, 2, "exactly one more run for all the re-adds");
  assert.equal(maxRunning, 1);
});

Deno.test("queue respects its concurrency limit", async () => {
  const gates = new Map<string, ReturnType<typeof deferred>>();
  const { clock, q } = setup(async (k) => {
    const g = deferred();
    gates.set(k, g);
    await g.promise;
    return { type: "done" };
  }, 2);
  for (const k of ["a", "b", "c", "d"]) q.add(k);
  await clock.flush();
  assert.equal(q.active, 2);
  assert.equal(q.depth, 2);
  gates.get("a")!.resolve();
  await clock.flush();
  assert.deepEqual([...gates.keys()], ["a", "b", "c"]);
  assert.equal(q.active, 2);
});

Deno.test("queue backs off per key exponentially with jitter and resets on success", async () => {
  const times: number[] = [];
  let fail = 6;
  const { clock, q } = setup(() => {
    times.push(clock.now());
    return Promise.resolve(fail-- > 0 ? { type: "retry" } : { type: "done" });
  });
  const start = clock.now();
  q.add("k");
  await clock.advance(10_000);
  assert.equal(times.length, 7);
  assert.equal(times[0], start);
  const gaps = times.slice(1).map((t, i) => t - times[i]);
  gaps.forEach((g, i) => {
    const full = 5 * 2 ** i;
    assert.ok(
      g >= Math.floor(full / 2) && g <= full,
      `gap ${i} = ${g}, expected in [${full / 2}, ${full}]`,
    );
  });
  assert.equal(q.failures("k"), 0, "success forgets the failures");
});

Deno.test("queue caps the backoff at 5 minutes", async () => {
  const times: number[] = [];
  const { clock, q } = setup(() => {
    times.push(clock.now());
    return Promise.resolve({ type: "retry" });
  });
  q.add("k");
  await clock.advance(3_600_000);
  const gaps = times.slice(1).map((t, i) => t - times[i]);
  assert.ok(Math.max(...gaps) <= 300_000);
  assert.ok(gaps.at(-1)! >= 150_000);
});

Deno.test("queue honours requeueAfter and keeps the earliest timer", async () => {
  const times: number[] = [];
  const { clock, q } = setup(() => {
    times.push(clock.now());
    return Promise.resolve(
      times.length === 1 ? { type: "done", requeueAfterMs: 1_000 } : { type: "done" },
    );
  });
  const start = clock.now();
  q.add("k");
  await clock.advance(999);
  assert.equal(times.length, 1);
  q.addAfter("k", 5_000); // later than the pending timer: ignored
  await clock.advance(1);
  assert.deepEqual(times.map((t) => t - start), [0, 1_000]);
  await clock.advance(10_000);
  assert.equal(times.length, 2);
  assert.equal(q.delayed, 0);
});

Deno.test("a terminal failure is not retried; shutdown waits for the running key", async () => {
  const gate = deferred();
  let runs = 0;
  let finished = false;
  const { clock, q } = setup(async (k) => {
    runs++;
    if (k === "slow") {
      await gate.promise;
      finished = true;
    }
    return { type: "terminal" };
  });
  q.add("t");
  await clock.advance(60_000);
  assert.equal(runs, 1);
  q.add("slow");
  await clock.flush();
  let stopped = false;
  const down = q.shutdown().then(() => stopped = true);
  q.add("after");
  await clock.flush();
  assert.equal(stopped, false);
  gate.resolve();
  await down;
  assert.equal(finished, true);
  assert.equal(runs, 2, "nothing ran after shutdown");
});

Deno.test("a running key marked only by its own writes' echoes does not run again; any other mark does", async () => {
  for (
    const [marks, again] of [
      [[true, true], false],
      [[true, false], true],
      [[true, undefined], true], // a mark without an echo check is a change like any other
    ] as const
  ) {
    const gate = deferred();
    let runs = 0;
    const { clock, q } = setup(async () => {
      if (++runs === 1) await gate.promise;
      return { type: "done" };
    });
    q.add("a");
    await clock.flush();
    // Asked only once the run has ended: what the run wrote is known then.
    let asked = false;
    for (const own of marks) {
      q.add("a", own === undefined ? undefined : () => (asked = true, own));
    }
    assert.equal(asked, false, "not asked while the run goes on");
    gate.resolve();
    await clock.flush();
    assert.equal(runs, again ? 2 : 1, `marks ${JSON.stringify(marks)}`);
    // A key that is not running runs for any mark, echo or not.
    q.add("a", () => true);
    await clock.flush();
    assert.equal(runs, again ? 3 : 2);
  }
});
