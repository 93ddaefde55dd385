/** Test helpers: a manual clock, a seeded Random, a capturing logger. */
import type { Clock, Random } from "../../src/runtime/clock.ts";
import { ApiError, type Cluster } from "../../src/runtime/cluster.ts";
import { createLogger, type Logger } from "../../src/runtime/log.ts";

interface Timer {
  at: number;
  seq: number;
  resolve: () => void;
}

/** A clock that moves only when a test says so. Timers fire in (time, creation) order. */
export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  #timers: Timer[] = [];

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer: Timer = {
        at: this.#now + Math.max(0, ms),
        seq: this.#seq++,
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.#timers = this.#timers.filter((t) => t !== timer);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#timers.push(timer);
    });
  }

  /** Pending timers. */
  get pending(): number {
    return this.#timers.length;
  }

  /**
   * Lets queued promise callbacks run. Everything under test is promise-only (no real I/O), so
   * draining microtasks is enough; a few hundred turns cover the deepest await chains here.
   */
  async flush(): Promise<void> {
    for (let i = 0; i < 300; i++) await Promise.resolve();
  }

  /** Moves time forward by `ms`, firing due timers one at a time and flushing after each. */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    await this.flush();
    for (;;) {
      const due = this.#timers.filter((t) =>
        t.at <= target
      ).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.#timers = this.#timers.filter((t) => t !== due);
      this.#now = due.at;
      due.resolve();
      await this.flush();
    }
    this.#now = target;
    await this.flush();
  }

  /** Advances in `stepMs` steps until `done()` or `maxMs` passed; returns whether `done()` held. */
  async until(done: () => boolean, maxMs: number, stepMs = 100): Promise<boolean> {
    for (let t = 0; t <= maxMs; t += stepMs) {
      if (done()) return true;
      await this.advance(stepMs);
    }
    return done();
  }
}

/** mulberry32: a small seeded PRNG. */
export function seededRandom(seed = 42): Random {
  let a = seed >>> 0;
  return {
    next() {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    },
  };
}

/** A logger whose lines land in `lines` (parsed JSON). */
export function captureLogger(clock: Clock): { log: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({ clock, level: "debug", sink: (l) => lines.push(JSON.parse(l)) });
  return { log, lines };
}

/** How a replica's link to the API behaves. */
export type LinkMode = "ok" | "fail" | "hang";

/**
 * One replica's view of a shared cluster: its calls can fail or hang (a partition), and its writes
 * are counted, so a test can tell which replica wrote.
 */
export function link(
  cluster: Cluster,
  /** When given, only calls on these kinds fail or hang (e.g. only the Lease). */
  onlyKinds?: string[],
): { cluster: Cluster; mode: { value: LinkMode }; writes: string[] } {
  const mode = { value: "ok" as LinkMode };
  /** `verb:Kind` of every write. */
  const writes: string[] = [];
  type Call<A extends unknown[], R> = (...a: A) => Promise<R>;
  const wrap =
    <A extends [{ kind: string }, ...unknown[]], R>(f: Call<A, R>, verb = ""): Call<A, R> =>
    (...a) => {
      const affected = !onlyKinds || onlyKinds.includes(a[0].kind);
      if (affected && mode.value === "fail") {
        return Promise.reject(new ApiError(0, "", "connection refused"));
      }
      if (affected && mode.value === "hang") return new Promise(() => {});
      if (verb) writes.push(`${verb}:${a[0].kind}`);
      return f(...a);
    };
  return {
    mode,
    writes,
    cluster: {
      list: wrap(cluster.list.bind(cluster)),
      watch: cluster.watch.bind(cluster),
      get: wrap(cluster.get.bind(cluster)),
      create: wrap(cluster.create.bind(cluster), "create"),
      update: wrap(cluster.update.bind(cluster), "update"),
      apply: wrap(cluster.apply.bind(cluster), "apply"),
      applyStatus: wrap(cluster.applyStatus.bind(cluster), "applyStatus"),
      patch: wrap(cluster.patch.bind(cluster), "patch"),
      delete: wrap(cluster.delete.bind(cluster), "delete"),
    },
  };
}
