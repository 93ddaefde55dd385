import assert from "node:assert/strict";
import { hash32, Prng } from "../../sim/prng.ts";

Deno.test("prng: the same seed gives the same stream", () => {
  const a = new Prng(7);
  const b = new Prng(7);
  const xs = Array.from({ length: 100 }, () => a.u32());
  const ys = Array.from({ length: 100 }, () => b.u32());
  assert.deepEqual(xs, ys);
  assert.notDeepEqual(xs, Array.from({ length: 100 }, () => new Prng(8).u32()));
});

Deno.test("prng: forks are independent of draws from the parent and of each other", () => {
  const a = new Prng(42);
  const forkFirst = a.fork("faults").u32();
  for (let i = 0; i < 50; i++) a.next();
  assert.equal(a.fork("faults").u32(), forkFirst);
  assert.notEqual(a.fork("workload").u32(), forkFirst);
  assert.equal(a.fork("x").fork("y").label, "x/y");
  assert.notEqual(a.fork("x").fork("y").u32(), a.fork("x/y").fork("").u32());
});

Deno.test("prng: ranges hold and values spread", () => {
  const r = new Prng(1);
  const counts = new Array(6).fill(0);
  let sum = 0;
  for (let i = 0; i < 60_000; i++) {
    const f = r.next();
    assert.ok(f >= 0 && f < 1);
    sum += f;
    const k = r.int(0, 5);
    assert.ok(Number.isInteger(k) && k >= 0 && k <= 5);
    counts[k]++;
  }
  assert.ok(Math.abs(sum / 60_000 - 0.5) < 0.01, `mean ${sum / 60_000}`);
  for (const c of counts) assert.ok(c > 9_000 && c < 11_000, `bucket count ${c}`);
  for (let i = 0; i < 1000; i++) {
    const d = r.logUniform(5, 500);
    assert.ok(d >= 5 && d <= 500);
  }
  assert.deepEqual(r.shuffle([1, 2, 3, 4, 5]).sort(), [1, 2, 3, 4, 5]);
  assert.throws(() => r.pick([]));
  assert.equal(r.chance(0), false);
});

Deno.test("prng: hash32 is FNV-1a", () => {
  assert.equal(hash32(""), 0x811c9dc5);
  assert.equal(hash32("a"), 0xe40c292c);
});

Deno.test("prng: every seed up to 2^53-1 is its own stream, and seeds below 2^32 are unchanged", () => {
  const draw = (seed: number) => {
    const r = new Prng(seed);
    return Array.from({ length: 8 }, () => r.u32());
  };
  // Seed 2^32 + 1 used to replay seed 1 exactly (only the low 32 bits were kept).
  for (const low of [0, 1, 77001]) {
    assert.notDeepEqual(draw(2 ** 32 + low), draw(low));
    assert.notDeepEqual(draw(2 ** 52 + low), draw(low));
    assert.notEqual(
      new Prng(2 ** 32 + low).fork("faults").u32(),
      new Prng(low).fork("faults").u32(),
    );
  }
  assert.notDeepEqual(draw(Number.MAX_SAFE_INTEGER), draw(2 ** 32 - 1));
  // The first draws of seed 1 as they were before seeds past 2^32 were told apart.
  assert.deepEqual(draw(1).slice(0, 2), [3773806752, 188501479]);
});
