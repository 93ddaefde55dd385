/** Test helpers: a manual clock, a seeded Random, a capturing logger. */
import type { Clock, Random } from "../../src/runtime/clock.ts";
import { SimClock } from "../../sim/clock.ts";
import { ApiError, type Cluster } from "../../src/runtime/cluster.ts";
import { createLogger, type Logger } from "../../src/runtime/log.ts";

/**
 * The simulator's clock moved only when a test says so. Timers fire in (time, creation) order; the
 * simulated cluster (test_cluster.ts) schedules its built-in controllers on it too.
 */
export class ManualClock extends SimClock {
  constructor(start = Date.UTC(2026, 0, 1)) {
    super(start);
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
    const target = this.now() + ms;
    await this.flush();
    for (;;) {
      const fire = this.popDue(target);
      if (!fire) break;
      fire();
      await this.flush();
    }
    this.advanceTo(target);
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
