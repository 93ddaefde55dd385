import assert from "node:assert/strict";
import { SIM_EPOCH, SimClock } from "../../sim/clock.ts";
import { Driver, LivelockError, settle } from "../../sim/driver.ts";

Deno.test("clock: sleeps wake in deadline order, ties in call order, without real waiting", async () => {
  const clock = new SimClock();
  const driver = new Driver(clock);
  const woke: string[] = [];
  const nap = (name: string, ms: number) =>
    clock.sleep(ms).then(() => woke.push(`${name}@${clock.now() - SIM_EPOCH}`));
  void nap("c", 300);
  void nap("a", 100);
  void nap("b", 100);
  void nap("z", 0);
  await driver.runUntil(SIM_EPOCH + 250);
  assert.deepEqual(woke, ["z@0", "a@100", "b@100"]);
  assert.equal(clock.now(), SIM_EPOCH + 250);
  await driver.runFor(1000);
  assert.deepEqual(woke.at(-1), "c@300");
  assert.equal(clock.pending, 0);
});

Deno.test("clock: the driver lets long microtask chains finish before the next timer", async () => {
  const clock = new SimClock(0);
  const driver = new Driver(clock);
  const log: string[] = [];
  const worker = async (name: string, period: number) => {
    for (let round = 0; round < 3; round++) {
      await clock.sleep(period);
      // A long chain of awaits (like a reconcile calling the API through several layers).
      for (let i = 0; i < 2_000; i++) await Promise.resolve();
      log.push(`${name}${round}@${clock.now()}`);
    }
  };
  void worker("x", 10);
  void worker("y", 15);
  await driver.runUntil(100);
  // If time advanced before a chain finished, the logged times would be later than the wake-up.
  // At 30 both wake: y set its timer (at 15) before x did (at 20), so y goes first.
  assert.deepEqual(log, ["x0@10", "y0@15", "x1@20", "y1@30", "x2@30", "y2@45"]);
});

Deno.test("clock: abort rejects with the reason and cancels the timer", async () => {
  const clock = new SimClock(0);
  const driver = new Driver(clock);
  const ac = new AbortController();
  const p = clock.sleep(1000, ac.signal);
  ac.abort(new Error("stop"));
  await assert.rejects(p, /stop/);
  assert.equal(clock.pending, 0);
  await assert.rejects(clock.sleep(5, ac.signal), /stop/);
  await driver.runFor(5000);
  assert.equal(driver.steps, 0);
});

Deno.test("clock: a killed view never wakes again; others keep running", async () => {
  const clock = new SimClock(0);
  const driver = new Driver(clock);
  const view = clock.view();
  let viewWoke = 0;
  let rootWoke = 0;
  void view.sleep(10).then(() => viewWoke++);
  void clock.sleep(20).then(() => rootWoke++);
  view.kill();
  void view.sleep(1).then(() => viewWoke++);
  await driver.runFor(100);
  assert.equal(viewWoke, 0);
  assert.equal(rootWoke, 1);
  assert.ok(view.dead);
});

Deno.test("clock: a jump fires every timer it skips over, in order", async () => {
  const clock = new SimClock(0);
  const driver = new Driver(clock);
  const fired: number[] = [];
  clock.schedule(50, () => fired.push(clock.now()));
  clock.schedule(500, () => fired.push(clock.now()));
  clock.jump(1000);
  await driver.runUntil(1000);
  assert.deepEqual(fired, [1000, 1000]);
});

Deno.test("clock: runUntilTrue stops at the first event after which the condition holds", async () => {
  const clock = new SimClock(0);
  const driver = new Driver(clock);
  let n = 0;
  const tick = () => clock.schedule(7, () => (n++, tick()));
  tick();
  assert.equal(await driver.runUntilTrue(() => n === 3, 1000), true);
  assert.equal(clock.now(), 21);
  assert.equal(await driver.runUntilTrue(() => n === 1000, 100), false);
  assert.equal(clock.now(), 100);
});

Deno.test("clock: zero-delay timer loops are reported as livelock", async () => {
  const clock = new SimClock(0);
  const driver = new Driver(clock, { maxStepsPerInstant: 100 });
  const spin = () => clock.schedule(0, spin);
  spin();
  await assert.rejects(driver.runFor(10), LivelockError);
});

Deno.test("clock: settle waits for promise chains queued before it", async () => {
  let done = false;
  (async () => {
    for (let i = 0; i < 10_000; i++) await null;
    done = true;
  })();
  await settle();
  assert.ok(done);
});

Deno.test("clock: jumps while waiting do not eat the wait's budget", async () => {
  const clock = new SimClock(0);
  const driver = new Driver(clock);
  // Three jumps of 80 s, each scheduled right after the previous, inside a 120 s wait for a
  // request answered 1 ms after the last jump (seeds 100443 and 100715 of the sweep).
  let answered = false;
  clock.schedule(10_000, () => {
    clock.jump(80_000);
    clock.schedule(0, () => {
      clock.jump(80_000);
      clock.schedule(0, () => {
        clock.jump(80_000);
        clock.schedule(1, () => (answered = true));
      });
    });
  });
  assert.equal(await driver.runUntilTrue(() => answered, 120_000), true);
  assert.equal(clock.now(), 250_001);
  // Without jumps, the limit still holds.
  const never = await driver.runUntilTrue(() => false, clock.now() + 5_000);
  assert.equal(never, false);
  assert.equal(clock.now(), 255_001);
});

Deno.test("clock: ranFrom widens a window by the jumps inside it, and only by them", async () => {
  const clock = new SimClock(0);
  const driver = new Driver(clock);
  assert.equal(clock.ranFrom(35_000), -35_000);
  await driver.runFor(10_000);
  clock.jump(60_000);
  await driver.runFor(20_000);
  assert.equal(clock.now(), 90_000);
  // 20 s ran since the jump; the other 15 s of a 35 s window come from before it.
  assert.equal(clock.ranFrom(35_000), -5_000);
  assert.equal(clock.ranFrom(20_000), 70_000);
  assert.equal(clock.ranFrom(10_000), 80_000);
  for (const ms of [0, 5_000, 20_000, 25_000, 35_000, 100_000]) {
    const from = clock.ranFrom(ms);
    assert.equal(clock.now() - from - clock.jumpedSince(from), ms, `window of ${ms} ms`);
  }
});
