/** Test helpers: a simulated cluster on a fresh clock with a driver and a fault-free client. */
import { SimClock } from "../../sim/clock.ts";
import { Driver } from "../../sim/driver.ts";
import { SimCluster, type SimClusterOptions } from "../../sim/cluster/mod.ts";
import { Prng } from "../../sim/prng.ts";
import { ApiError } from "../../src/runtime/cluster.ts";

/** A world for a test. */
export function world(opts: Partial<SimClusterOptions> & { seed?: number } = {}) {
  const clock = new SimClock();
  const cluster = new SimCluster({ clock, prng: new Prng(opts.seed ?? 1), ...opts });
  const driver = new Driver(clock);
  const client = cluster.client("user", { manager: "kubectl", faultFree: true });
  return { clock, cluster, driver, client, store: cluster.store };
}

/** Awaits `p` while driving virtual time until it settles. */
export async function drive<T>(driver: Driver, p: Promise<T>, limitMs = 60_000): Promise<T> {
  let done = false;
  const wrapped = p.finally(() => (done = true));
  await driver.runUntilTrue(() => done, driver.clock.now() + limitMs);
  return await wrapped;
}

/** The ApiError code a promise rejects with (fails when it resolves). */
export async function codeOf(p: Promise<unknown>): Promise<number> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ApiError) return err.code;
    throw err;
  }
  throw new Error("expected an ApiError, but the call succeeded");
}
