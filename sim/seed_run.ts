/**
 * One seed of the sweep: a generated workload under the seed's fault mix (safety phase), then the
 * faults stop and the operator must converge to the oracle's outcome within a bound (liveness),
 * stay quiet while nothing changes, and the data plane must enforce what is applied.
 */
import { RESOURCES } from "../src/api/resources.ts";
import { ApiError, type Logger } from "../src/runtime/mod.ts";
import type { KubeObject } from "../src/api/object.ts";
import type { EnvoyBehaviour } from "../src/dataplane/mod.ts";
import type { FaultConfig } from "./faults.ts";
import { violationOf } from "./oracle.ts";
import { expectQuiet, reportRun, RunFailure, type RunResult } from "./run_result.ts";
import { Simulation, type SimulationOptions } from "./simulation.ts";
import { offset } from "./trace.ts";
import {
  DEMO,
  demoWorkload,
  generateWorkload,
  SWEEP_CLIENT_HEADER,
  SWEEP_GLOBAL_PATH,
  SWEEP_MAX_TOKENS,
  SWEEP_RULE_PATH,
  type WorkloadAction,
} from "./workload.ts";

/** Length of the safety phase: user actions and random faults happen in it. */
export const SAFETY_MS = 150_000;
/**
 * The sweep's quiet period: longer than every requeue interval of the reconcilers (the scenarios'
 * longer quiet period also covers the runtime's 10-minute resync).
 */
export const SWEEP_QUIET_MS = 3 * 60_000;
/** Bound on convergence once faults stop. */
export const CONVERGE_LIMIT_MS = 30 * 60_000;

/** Options of one sweep seed. */
export interface SeedOptions {
  faults: FaultConfig;
  log?: Logger;
  /** The Envoy of the mesh's proxies; default DEFAULT_ENVOY. */
  envoy?: EnvoyBehaviour;
  replay?: (seed: number) => string;
  /**
   * Runs after the generated workload's last action, faults still on: an injection point for tests
   * (a request that never finishes, a timer that throws) to prove the sweep reports such a seed.
   */
  inject?: (sim: Simulation) => Promise<void>;
  /** The operator under test and the user's objects (mutation tests pass mutants here). */
  sim?: Pick<SimulationOptions, "operator" | "userObjects" | "engine">;
}

class SeedFailure extends RunFailure {}

async function perform(sim: Simulation, a: WorkloadAction): Promise<string> {
  const store = sim.cluster.store;
  try {
    if (a.op === "apply") {
      const type = store.types.byKind(a.obj.apiVersion, a.obj.kind);
      if (!type) return `apply ${a.obj.kind}: type not served`;
      await sim.drive(sim.user.apply(type, a.obj, { fieldManager: "kubectl", force: true }));
      return `apply ${a.obj.kind} ${a.obj.metadata.namespace}/${a.obj.metadata.name}: ok`;
    }
    const type = store.types.byKindName(a.kind);
    if (!type) return `delete ${a.kind}: type not served`;
    const found = await sim.drive(sim.user.delete(type, a.namespace, a.name));
    return `delete ${a.kind} ${a.namespace}/${a.name}: ${found ? "ok" : "not found"}`;
  } catch (err) {
    if (err instanceof ApiError) return `${a.op}: ${err.code} ${err.message}`;
    throw err;
  }
}

/**
 * True when the RateLimit in force in `ns` is its current generation and that has a per-client
 * rule: the user's intent, not the filter (which a broken operator could render without).
 */
function perClientInForce(sim: Simulation, ns: string): boolean {
  return sim.cluster.store.objects(RESOURCES.RateLimit, ns).some((rl) => {
    const g = (rl.status as { enforcedGeneration?: number } | undefined)?.enforcedGeneration;
    const rules = (rl.spec as { local?: { buckets?: { perClient?: unknown }[] } } | undefined)
      ?.local?.buckets ?? [];
    return g !== undefined && g === rl.metadata.generation &&
      rules.some((r) => r.perClient !== undefined);
  });
}

/**
 * The data plane must enforce exactly the limits the statuses say are enforced (Ready ones, and
 * refused updates that keep their last good generation): a full bucket admits maxTokens, then 429;
 * in shadow mode (status.mode) it admits that one too, marked as one it would have rejected
 * (`200~` below). A per-client rule in force (its one-token bucket) keeps clients apart: client
 * p1's second request is over, and p2 still has its token.
 */
function probe(sim: Simulation): string | undefined {
  const inForce = (ns: string) =>
    sim.cluster.store.objects(RESOURCES.RateLimit, ns).map((rl) =>
      rl.status as { enforcedGeneration?: number; mode?: string } | undefined
    ).find((s) => s?.enforcedGeneration !== undefined);
  const targets = [
    {
      to: { namespace: DEMO.namespace, labels: DEMO.labels },
      ns: DEMO.namespace,
      label: "demo httpbin",
    },
    { to: "gateway" as const, ns: "mesh-system", label: "the gateway" },
  ];
  for (const t of targets) {
    const n = SWEEP_MAX_TOKENS + 1;
    const got = Array.from({ length: n }, () => {
      const r = sim.send({ to: t.to, path: "/probe" });
      return r.wouldReject ? `${r.status}~` : String(r.status);
    });
    const status = inForce(t.ns);
    const over = status?.mode === "Shadow" ? "200~" : "429";
    const want = status ? [...Array(SWEEP_MAX_TOKENS).fill("200"), over] : Array(n).fill("200");
    if (got.join() !== want.join()) {
      return `data plane: ${n} requests to ${t.label} got [${got}], expected [${want}]`;
    }
    if (!status || !perClientInForce(sim, t.ns)) continue;
    const clients = ["p1", "p1", "p2"].map((c) => {
      const headers = { [SWEEP_CLIENT_HEADER]: c };
      const r = sim.send({ to: t.to, path: SWEEP_RULE_PATH, headers });
      return r.wouldReject ? `${r.status}~` : String(r.status);
    });
    const perClient = ["200", over, "200"];
    if (clients.join() !== perClient.join()) {
      return `data plane: clients p1, p1, p2 at ${t.label}${SWEEP_RULE_PATH} got [${clients}], expected [${perClient}]`;
    }
  }
  return undefined;
}

/** How often, in the safety phase of a seed with global limits, a burst is sent to their path. */
export const GLOBAL_BURST_MS = 7_000;

/**
 * A burst at the global rules' path of each target: 6 requests of client g1 and 2 of g2 at one
 * instant, more than any generated limit (sim/workload.ts), so that a window admitting more than
 * its limit breaks the global-window invariant (Simulation.send checks every response).
 */
function globalBurst(sim: Simulation): void {
  for (const to of [{ namespace: DEMO.namespace, labels: DEMO.labels }, "gateway" as const]) {
    for (const client of ["g1", "g1", "g1", "g1", "g1", "g1", "g2", "g2"]) {
      sim.send({ to, path: SWEEP_GLOBAL_PATH, headers: { [SWEEP_CLIENT_HEADER]: client } });
    }
  }
}

/** True when the workload applies a RateLimit with spec.global. */
function hasGlobal(actions: readonly WorkloadAction[]): boolean {
  return actions.some((a) =>
    a.op === "apply" && a.obj.kind === "RateLimit" &&
    (a.obj.spec as { global?: unknown } | undefined)?.global !== undefined
  );
}

/** Runs one seed of the sweep. */
export async function runSeed(seed: number, opts: SeedOptions): Promise<RunResult> {
  const sim = new Simulation({
    seed,
    faults: opts.faults,
    log: opts.log,
    ...(opts.envoy ? { envoy: opts.envoy } : {}),
    ...opts.sim,
  });
  const actions = generateWorkload(
    sim.prng.fork("workload"),
    SAFETY_MS - 30_000,
    sim.mesh.envoy.dynamicDescriptors,
  );
  const run = {
    name: `seed ${seed}`,
    seed,
    envoy: sim.mesh.envoy.version,
    replay: opts.replay?.(seed) ?? "",
  };
  return await reportRun(sim, run, async () => {
    await sim.boot();
    sim.scheduleSwarm(SAFETY_MS);
    for (const obj of demoWorkload() as KubeObject[]) {
      await perform(sim, { at: 0, op: "apply", obj });
    }
    // Bursts at the global path only in seeds with global limits: the others run as before.
    const bursts = hasGlobal(actions)
      ? Array.from(
        { length: Math.floor(SAFETY_MS / GLOBAL_BURST_MS) },
        (_, k) => (k + 1) * GLOBAL_BURST_MS,
      )
      : [];
    const burstsUntil = async (t: number) => {
      while (bursts.length > 0 && bursts[0] <= t) {
        await sim.runUntil(bursts.shift()!);
        globalBurst(sim);
      }
    };
    for (const a of actions) {
      await burstsUntil(a.at);
      await sim.runUntil(a.at);
      sim.trace.add({
        t: offset(sim.clock.now()),
        event: "step",
        step: 0,
        action: await perform(sim, a),
      });
    }
    await opts.inject?.(sim);
    await burstsUntil(SAFETY_MS);
    await sim.runUntil(SAFETY_MS);
    sim.startLiveness();
    let last: string | undefined = "not checked";
    let checkedAt = -Infinity;
    const converged = await sim.driver.runUntilTrue(() => {
      if (sim.clock.now() - checkedAt < 2_000) return false;
      checkedAt = sim.clock.now();
      last = violationOf(sim);
      return last === undefined;
    }, sim.clock.now() + CONVERGE_LIMIT_MS);
    if (!converged) {
      throw new SeedFailure(
        `liveness: not converged ${CONVERGE_LIMIT_MS / 60_000} min after faults stopped: ${last}`,
      );
    }
    if (!await sim.settle(CONVERGE_LIMIT_MS)) {
      throw new SeedFailure("liveness: converged, but the operator kept writing");
    }
    await expectQuiet(sim, SWEEP_QUIET_MS);
    const wrong = violationOf(sim) ?? probe(sim);
    if (wrong) throw new SeedFailure(`after the quiet period: ${wrong}`);
    if (hasGlobal(actions)) globalBurst(sim);
  });
}
