/**
 * A seed runner for tests (sim/pool.ts loads it in place of sim/seed_run.ts's): the real `runSeed`,
 * with one thing injected into some seeds right after boot, built from the simulator's own parts.
 * Every other seed is the real sweep seed, untouched.
 */
import { RESOURCES } from "../../src/api/resources.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { RunResult } from "../../sim/run_result.ts";
import type { Simulation } from "../../sim/simulation.ts";
import { runSeed as realRunSeed, type SeedOptions } from "../../sim/seed_run.ts";

/** What an injected seed does. */
export const INJECTED = {
  /** kubectl on a frozen client: its request is never answered, so `drive` gives up. */
  2: "stuck",
  /** A timer of the simulated program reads a property of undefined. */
  4: "throws",
  /** The simulated program drops a rejected promise. */
  5: "rejects",
  /** A timer that sets itself again with no delay: virtual time cannot advance. */
  6: "livelock",
  /** Kills its worker: an uncaught error on the worker's own event loop (workers only). */
  7: "dies",
  /** Never yields: the driver cannot see it, only the worker's wall-clock bound (workers only). */
  8: "loops",
} as const satisfies Record<number, string>;

type Injection = (typeof INJECTED)[keyof typeof INJECTED];

const INJECT: Record<Injection, (sim: Simulation) => Promise<void>> = {
  stuck: async (sim) => {
    const kubectl = sim.cluster.client("stuck-kubectl", { manager: "kubectl", faultFree: true });
    kubectl.kill();
    await sim.drive(kubectl.get(RESOURCES.Namespace, undefined, "demo"));
  },
  throws: (sim) => {
    const watched: KubeObject[] = [];
    sim.clock.schedule(5_000, () => void watched[0].metadata.name);
    return Promise.resolve();
  },
  rejects: (sim) => {
    sim.clock.schedule(5_000, () => {
      void Promise.reject(new Error("a write nobody awaited failed"));
    });
    return Promise.resolve();
  },
  livelock: (sim) => {
    const spin = () => void sim.clock.schedule(0, spin);
    sim.clock.schedule(5_000, spin);
    return Promise.resolve();
  },
  dies: (sim) => {
    sim.clock.schedule(5_000, () => {
      setTimeout(() => {
        throw new Error("uncaught on the worker's event loop");
      }, 0);
    });
    return Promise.resolve();
  },
  loops: (sim) => {
    sim.clock.schedule(5_000, () => {
      for (;;) { /* never yields */ }
    });
    return Promise.resolve();
  },
};

/** The real runSeed, with INJECTED's behaviour for its seeds. */
export function runSeed(seed: number, opts: SeedOptions): Promise<RunResult> {
  const what = (INJECTED as Record<number, Injection | undefined>)[seed];
  return realRunSeed(seed, what ? { ...opts, inject: INJECT[what] } : opts);
}
