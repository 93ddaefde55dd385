/**
 * Reducer throughput: steady-state reconciles a second of the process's CPU time, per kind,
 * against a baseline loop that builds the same input and only parses the object (the cheapest
 * thing a reconcile must do). CPU time, not elapsed: other processes sharing the machine's cores
 * do not lengthen it (stats.ts `Clock`), so the ratios hold on a busy machine.
 */
import { type ClaimInput, claimLease } from "../src/reconcile/module/claim.ts";
import { parseRateLimit } from "../src/api/ratelimit.ts";
import { parseScaler } from "../src/api/scaler.ts";
import { parseServerless } from "../src/api/serverless.ts";
import type { KubeObject } from "../src/api/object.ts";
import { deepFreeze } from "../src/api/json.ts";
import { type RateLimitInput, reconcileRateLimit } from "../src/reconcile/ratelimit/mod.ts";
import { reconcileScaler, type ScalerInput } from "../src/reconcile/scaler/mod.ts";
import { reconcileServerless, type ServerlessInput } from "../src/reconcile/serverless/mod.ts";
import { ALL_CONTROLLERS } from "../src/controllers/registry.ts";
import { preloadControllers } from "../src/runtime/mod.ts";
import { controllerLoops, filledCache } from "./controller.ts";
import { podObject, rateLimitObject, RULE_COUNTS } from "./fixtures.ts";
import type { Report } from "./report.ts";
import { compareLoops, type Loop, type LoopOptions } from "./stats.ts";
import { IMAGES, type ModuleWorld, NOW, settle, stored } from "./worlds.ts";
import { FUNCTION_CRDS, KEDA_CRDS } from "../src/controllers/embedded_crds.ts";

const SECTION = "reducer (steady-state reconciles a CPU second, median)";

/** RateLimits (and one Pod each) in the reconciled one's namespace: its peers. */
export const PEERS = 10;

/** Target: RateLimits a second with 4 rules (issue 7). */
export const RATELIMIT_TARGET = 20_000;

/** RateLimits (and Pods) in the namespace of the scaling figure: every peer is looked at. */
export const CROWD = 1_000;

/** RateLimits (and Pods) in the one namespace of the controller's scaling figure (issue 14). */
export const ONE_NAMESPACE = 10_000;

/** Target: controller reconciles a second with ONE_NAMESPACE RateLimits in one namespace. */
export const CONTROLLER_TARGET = 20_000;

/**
 * Inputs of one namespace of `peers` RateLimits with `rules` rules each, at their fixpoint, every
 * object and list deep-frozen as the operator's cache hands them out (src/runtime/cache).
 */
export function rateLimitInputs(rules: number, peers = PEERS): RateLimitInput[] {
  const objects = Array.from(
    { length: peers },
    (_, i) => rateLimitObject({ i, rules, stored: true }),
  );
  const pods = deepFreeze(objects.map((_, i) => podObject(i)));
  const first = objects.map((rateLimit) =>
    reconcileRateLimit({ rateLimit, peers: objects, pods, meshInstalled: true, now: NOW })
  );
  const settled = deepFreeze(
    objects.map((o, k) => ({ ...o, status: first[k].status }) as KubeObject),
  );
  return settled.map((rateLimit, k) => {
    const ef = first[k].apply[0];
    if (!ef) throw new Error(`RateLimit ${k} with ${rules} rules is not valid: no EnvoyFilter`);
    return {
      rateLimit,
      peers: settled,
      pods,
      envoyFilter: deepFreeze(structuredClone(stored(ef))),
      meshInstalled: true,
      now: NOW,
    };
  });
}

/** The subject and baseline loops of the RateLimit reducer over `inputs`. */
export function rateLimitLoops(
  inputs: readonly RateLimitInput[],
): { subject: Loop; baseline: Loop } {
  const build = (i: number): RateLimitInput => ({ ...inputs[i % inputs.length], now: NOW + i });
  return {
    subject: (n) => {
      let writes = 0;
      for (let i = 0; i < n; i++) writes += reconcileRateLimit(build(i)).apply.length;
      return writes;
    },
    baseline: (n) => {
      let ok = 0;
      for (let i = 0; i < n; i++) {
        const input = build(i);
        if (parseRateLimit({ ...(input.rateLimit as KubeObject), status: undefined }).ok) ok++;
      }
      return ok;
    },
  };
}

function moduleObject(kind: "Serverless" | "Scaler", spec: Record<string, unknown>): KubeObject {
  return {
    apiVersion: "operator.platform-project.io/v1alpha1",
    kind,
    metadata: {
      name: "default",
      namespace: "platform-system",
      uid: `uid-${kind}`,
      generation: 1,
      creationTimestamp: "2025-12-01T00:00:00Z",
    },
    spec,
  };
}

/** The module's claim, held by `holder` (the served path, which the benchmark measures). */
function heldClaim(module: "serverless" | "keda", holder: KubeObject): ClaimInput {
  const site = { namespace: "platform-system", module } as const;
  return { ...site, observed: claimLease(site, holder.metadata) };
}

function serverlessInput(w: ModuleWorld, now = NOW): ServerlessInput {
  return {
    object: w.object,
    peers: [w.object],
    claim: heldClaim("serverless", w.object),
    installed: w.installed,
    userObjects: { Function: [] },
    now,
    images: IMAGES,
    crds: FUNCTION_CRDS.get(),
  };
}

function scalerInput(w: ModuleWorld, now = NOW): ScalerInput {
  return {
    object: w.object,
    peers: [w.object],
    claim: heldClaim("keda", w.object),
    installed: w.installed,
    userObjects: { ScaledObject: [], ScaledJob: [], TriggerAuthentication: [] },
    now,
    images: IMAGES,
    crds: KEDA_CRDS.get(),
  };
}

/** The Serverless reducer's loops at its fixpoint (installed, Ready). */
export function serverlessLoops(): { subject: Loop; baseline: Loop; state: unknown } {
  const start = moduleObject("Serverless", {
    eventing: { endpoint: "http://eventing.example:8080/publish" },
    tracing: { endpoint: "http://tracing.example:9411/api/v2/spans" },
    logLevel: "info",
  });
  const { world } = settle(
    { object: start, installed: [] },
    (w) => reconcileServerless(serverlessInput(w)),
  );
  return {
    state: (world.object.status as { state?: string } | undefined)?.state,
    subject: (n) => {
      let k = 0;
      for (let i = 0; i < n; i++) {
        k += reconcileServerless(serverlessInput(world, NOW + i)).apply.length;
      }
      return k;
    },
    baseline: (n) => {
      let ok = 0;
      for (let i = 0; i < n; i++) {
        const input = serverlessInput(world, NOW + i);
        if (parseServerless({ ...(input.object as KubeObject), status: undefined }).ok) ok++;
      }
      return ok;
    },
  };
}

/** The Scaler reducer's loops at its fixpoint (installed, Ready). */
export function scalerLoops(): { subject: Loop; baseline: Loop; state: unknown } {
  const start = moduleObject("Scaler", {
    logging: { operator: { level: "debug" } },
    resources: { operator: { limits: { cpu: "1", memory: "1Gi" }, requests: { cpu: "100m" } } },
    env: [{ name: "KEDA_HTTP_DEFAULT_TIMEOUT", value: "3000" }],
  });
  const { world } = settle(
    { object: start, installed: [] },
    (w) => reconcileScaler(scalerInput(w)),
  );
  return {
    state: (world.object.status as { state?: string } | undefined)?.state,
    subject: (n) => {
      let k = 0;
      for (let i = 0; i < n; i++) k += reconcileScaler(scalerInput(world, NOW + i)).apply.length;
      return k;
    },
    baseline: (n) => {
      let ok = 0;
      for (let i = 0; i < n; i++) {
        const input = scalerInput(world, NOW + i);
        if (parseScaler({ ...(input.object as KubeObject), status: undefined }).ok) ok++;
      }
      return ok;
    },
  };
}

/**
 * The shortest timed run, in milliseconds: a loop whose `n` units take less is called again in
 * the same run (a cache read of the controller's baseline takes under a microsecond). 50, not the
 * 10 it was: in a run of 10 ms one young-generation collection is a tenth of the time.
 */
export const MIN_RUN_MS = 50;

/**
 * The least untimed time of each comparison, in milliseconds (`LoopOptions.warmupMs`): the quick
 * run's one warm-up of 500 reconciles (about 20 ms) timed the RateLimit reducer while V8 was still
 * optimizing it, reading 4 to 6 where the full run reads 3 (bench/RESULTS.md).
 */
export const WARMUP_MS = 300;

/** Sizes of the reducer bench. */
export interface ReducerOptions {
  /** RateLimit reconciles a run. */
  n: number;
  /** Module (Serverless, Scaler) reconciles a run: each renders the whole module, so fewer. */
  moduleN: number;
  /** Reconciles a run with a crowded namespace. */
  crowdN: number;
  /** RateLimits and Pods in the crowded namespace (and in each of the cache's 10); default CROWD. */
  crowd?: number;
  /** RateLimits and Pods in the single namespace of the controller figure; default ONE_NAMESPACE. */
  oneNamespace?: number;
  runs: number;
}

/** Default sizes: `quick` for CI (a few seconds), else the full run. */
export function reducerOptions(quick: boolean): ReducerOptions {
  return quick
    ? { n: 500, moduleN: 50, crowdN: 50, runs: 7, oneNamespace: 1_000 }
    : { n: 20_000, moduleN: 1_000, crowdN: 1_000, runs: 7 };
}

/** Runs the reducer bench into `report`. */
export async function benchReducers(report: Report, o: ReducerOptions): Promise<void> {
  const loopOpts = (n: number): LoopOptions => ({
    n,
    runs: o.runs,
    warmup: 1,
    warmupMs: WARMUP_MS,
    minMs: MIN_RUN_MS,
    clock: "cpu",
  });
  for (const rules of RULE_COUNTS) {
    const { subject, baseline } = rateLimitLoops(rateLimitInputs(rules));
    const c = compareLoops(subject, baseline, loopOpts(o.n));
    report.add({
      section: SECTION,
      name: `RateLimit, ${rules} rules`,
      value: c.rate,
      unit: "objects/s",
      baseline: { name: "build input + parse", value: c.baselineRate },
      ratio: c.ratio,
      ...(rules === 4 ? { target: { of: "value", op: ">=", bound: RATELIMIT_TARGET } } : {}),
      note: `${o.runs} runs of ${o.n}; ${PEERS} RateLimits and Pods in the namespace`,
    });
  }
  const size = o.crowd ?? CROWD;
  const crowd = rateLimitLoops(rateLimitInputs(4, size));
  const c = compareLoops(crowd.subject, crowd.baseline, loopOpts(o.crowdN));
  report.add({
    section: SECTION,
    name: `RateLimit, 4 rules, ${size} peers`,
    value: c.rate,
    unit: "objects/s",
    baseline: { name: "build input + parse", value: c.baselineRate },
    ratio: c.ratio,
    note: `${o.runs} runs of ${o.crowdN}; ${size} RateLimits and ${size} Pods in the namespace ` +
      "(the reducer given them all; the controller passes only rivals)",
  });
  const { cache, keys } = filledCache(10, size);
  const ctl = controllerLoops(cache, keys);
  // Steady state is a later wave: every RateLimit was reconciled once before.
  ctl.subject(keys.length);
  const k = compareLoops(ctl.subject, ctl.baseline, loopOpts(o.crowdN));
  report.add({
    section: SECTION,
    name: `RateLimit controller, ${10 * size} cached`,
    value: k.rate,
    unit: "objects/s",
    baseline: { name: "cache get + parse of the RateLimit", value: k.baselineRate },
    ratio: k.ratio,
    note: `${o.runs} runs of ${o.crowdN}; 10 namespaces of ${size} RateLimits and Pods in the ` +
      "runtime's Cache; reconcile reads rivals, Pods, EnvoyFilter, CRD (a no-op wave's unit cost)",
  });
  const one = o.oneNamespace ?? ONE_NAMESPACE;
  const single = filledCache(1, one);
  const sl = controllerLoops(single.cache, single.keys);
  sl.subject(single.keys.length);
  const s1 = compareLoops(sl.subject, sl.baseline, loopOpts(o.crowdN));
  report.add({
    section: SECTION,
    name: `RateLimit controller, ${one} RateLimits and Pods in one namespace`,
    value: s1.rate,
    unit: "objects/s",
    baseline: { name: "cache get + parse of the RateLimit", value: s1.baselineRate },
    ratio: s1.ratio,
    target: { of: "value", op: ">=", bound: CONTROLLER_TARGET },
    note: `${o.runs} runs of ${o.crowdN}; reconcile reads the rivals of its selector by index ` +
      "(issue 14: the cost must not grow with the namespace)",
  });
  // The module reducers render the upstream CRDs, which their controllers load first.
  await preloadControllers(ALL_CONTROLLERS);
  for (const [kind, make] of [["Serverless", serverlessLoops], ["Scaler", scalerLoops]] as const) {
    const { subject, baseline, state } = make();
    const c = compareLoops(subject, baseline, loopOpts(o.moduleN));
    report.add({
      section: SECTION,
      name: kind,
      value: c.rate,
      unit: "objects/s",
      baseline: { name: "build input + parse", value: c.baselineRate },
      ratio: c.ratio,
      note: `${o.runs} runs of ${o.moduleN}; steady state ${
        String(state)
      }, module rendered and diffed`,
    });
  }
}
