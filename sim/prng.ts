/**
 * The simulator's one source of chance: a seeded sfc32 generator. Every choice a run makes (API
 * latency, Pod readiness, faults, the generated workload) draws from a stream forked from the run's
 * seed, so the same seed replays the same run. `fork(label)` derives an independent stream from the
 * seed and a label without drawing from the parent, so adding draws to one stream never shifts
 * another (a new fault kind does not change the workload of an old seed).
 */
import type { Random } from "../src/runtime/mod.ts";

/**
 * The largest seed, 2^53−1: the largest integer a number (a scenario's `seed:`, `--seed`) holds
 * exactly. Past it `seed + 1 === seed`, so a sweep from there would run nothing.
 */
export const MAX_SEED = Number.MAX_SAFE_INTEGER;

/** 32-bit FNV-1a of a string: turns fork labels into seed material. */
export function hash32(text: string, basis = 0x811c9dc5): number {
  let h = basis >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** splitmix32: spreads one 32-bit value into well-mixed seed words. */
function splitmix32(state: number): () => number {
  let s = state >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

/** A seeded PRNG (sfc32, period ≥ 2^32) implementing the runtime's `Random`. */
export class Prng implements Random {
  #a: number;
  #b: number;
  #c: number;
  #d: number;
  /** The seed material this stream was made from (the run seed, or a fork's derived seed). */
  readonly seed: number;
  /** The fork path, for messages: `""` for the root, `"faults/api"` for a fork of a fork. */
  readonly label: string;

  constructor(seed: number, label = "") {
    this.seed = seed;
    this.label = label;
    const mix = splitmix32(hash32(label, (seed >>> 0) ^ 0x811c9dc5));
    this.#a = mix();
    this.#b = mix();
    this.#c = mix();
    // The bits above the low 32 (seeds up to 2^53 - 1) go into a word of their own, so seed
    // 2^32 + 1 is not seed 1 again; below 2^32 they are 0 and change nothing.
    this.#d = (mix() ^ Math.floor(seed / 4294967296)) >>> 0;
    // sfc32 needs a few rounds before its output is independent of the seed words.
    for (let i = 0; i < 12; i++) this.#u32();
  }

  #u32(): number {
    const t = (((this.#a + this.#b) >>> 0) + this.#d) >>> 0;
    this.#d = (this.#d + 1) >>> 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) >>> 0;
    this.#c = (this.#c << 21) | (this.#c >>> 11);
    this.#c = (this.#c + t) >>> 0;
    return t;
  }

  /** An independent stream for `label`, derived from this stream's seed and label only. */
  fork(label: string): Prng {
    return new Prng(this.seed, this.label ? `${this.label}/${label}` : label);
  }

  /** A float in [0, 1). */
  next(): number {
    return this.#u32() / 4294967296;
  }

  /** An unsigned 32-bit integer. */
  u32(): number {
    return this.#u32();
  }

  /** An integer in [lo, hi] (both inclusive). */
  int(lo: number, hi: number): number {
    if (hi < lo) throw new RangeError(`int(${lo}, ${hi}): empty range`);
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return p > 0 && this.next() < p;
  }

  /** A uniformly chosen element of a non-empty list. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError("pick from an empty list");
    return items[this.int(0, items.length - 1)];
  }

  /** A float in [lo, hi). */
  uniform(lo: number, hi: number): number {
    return lo + this.next() * (hi - lo);
  }

  /** A duration in ms, log-uniform in [lo, hi]: mostly short, sometimes long, like real latency. */
  logUniform(lo: number, hi: number): number {
    return Math.round(Math.exp(this.uniform(Math.log(lo), Math.log(hi))));
  }

  /** A shuffled copy of `items` (Fisher–Yates). */
  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(0, i);
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  }
}
