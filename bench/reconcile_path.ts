/**
 * The path of one RateLimit reconcile through the source, from the controller to its Plan (issue
 * 41): which files under src/ it enters, and which it enters again while still inside them.
 *
 * The world is one namespace of RateLimits (4 rules each), each selecting one Pod with a mesh
 * sidecar, settled by the controller itself: its filters applied and statuses written into the
 * runtime's cache (projections included) until a reconcile changes nothing. Three reconciles are
 * measured, each settled first, each after a warm-up that is not counted:
 * - `at rest`: the spec is applied and nothing changed (the path of every resync);
 * - `refused`: a new generation is invalid and the filter of the last good one stays, its limits
 *   read back from the cached (projected) filter;
 * - `conflict`: a newer RateLimit selects the same Pods and is refused (the filter its older rival
 *   holds is looked at).
 *
 * For each it prints:
 * - files entered: V8 precise coverage (node:inspector `Profiler.takePreciseCoverage`, call
 *   counts) around one reconcile, the counters reset after the warm-up: every file under src/
 *   with a function that ran;
 * - files beneath `reconcileRateLimit` and re-entries, from the CPU profiler sampling at 1 µs
 *   over many repeated reconciles: every sampled stack is read root to leaf as the files of its
 *   frames under src/ (frames of one file in a row are one visit: recursion within a file is not
 *   re-entry); a file met again after another file is a re-entry, printed with the path between.
 *   Sampling may miss a short call, so files entered that no sample saw are listed too.
 *
 * Run: `./deno run -A bench/reconcile_path.ts` (`--json` prints the reports as one JSON array; `--runs=N`
 * sets the profiled reconciles, default 20000).
 */
import { Session } from "node:inspector/promises";
import type { Profiler } from "node:inspector";
import { RESOURCES } from "../src/api/resources.ts";
import type { KubeObject, ResourceType } from "../src/api/object.ts";
import { MESH_PROXY_CONTAINER } from "../src/api/pod.ts";
import { CONTROLLERS } from "../src/controllers/registry.ts";
import { ENVOYFILTER_CRD, loadRateLimitReducer } from "../src/controllers/ratelimit.ts";
import { Cache, type ReconcileContext } from "../src/runtime/mod.ts";
import type { Plan } from "../src/reconcile/plan.ts";
import { deepEqual } from "../src/api/json.ts";
import { specDigest } from "../src/reconcile/hash.ts";
import { podObject, rateLimitObject } from "./fixtures.ts";
import { IMAGES, NOW, stored } from "./worlds.ts";

// The reducer loads with a controller's preload; reconcile is called directly here.
await loadRateLimitReducer();

const controller = CONTROLLERS.ratelimit;

/** The namespace of the world, and how many RateLimits (and Pods) it holds. */
const NAMESPACE = "path";
const RATELIMITS = 20;

/** The RateLimit whose reconcile is measured. */
const MEASURED = 7;

const REPO = new URL("../", import.meta.url).href;

/** A world of settled RateLimits in the runtime's cache, and how to change one of them. */
interface World {
  cache: Cache;
  /** The RateLimit whose reconcile is measured. */
  key: string;
  /** Stores `obj` in the cache, as a watch event would, with a new resourceVersion. */
  put(type: ResourceType, obj: KubeObject): void;
}

function ctx(i: number): ReconcileContext {
  return { now: NOW + i, images: IMAGES, namespace: "platform-system" };
}

/** Pod `i` of the world, with a mesh sidecar. */
function sidecarPod(i: number): KubeObject {
  const pod = podObject(i, { namespace: NAMESPACE });
  const spec = pod.spec as { containers: { name: string; image: string }[] };
  return {
    ...pod,
    spec: {
      ...spec,
      containers: [...spec.containers, { name: MESH_PROXY_CONTAINER, image: "istio/proxyv2" }],
    },
  };
}

/** Applies a Plan's writes about the RateLimit `key` to the cache; true when any changed it. */
function carryOut(world: World, key: string, plan: Plan): boolean {
  let changed = false;
  for (const o of plan.apply) {
    const { namespace, name } = o.metadata;
    if (world.cache.specDigest(RESOURCES.EnvoyFilter, namespace, name) !== specDigest(o.spec)) {
      world.put(RESOURCES.EnvoyFilter, stored(o));
      changed = true;
    }
  }
  const [namespace, name] = key.split("/");
  const rl = world.cache.get(RESOURCES.RateLimit, namespace, name)!;
  if (plan.status && !deepEqual(plan.status, rl.status)) {
    world.put(RESOURCES.RateLimit, { ...rl, status: plan.status });
    changed = true;
  }
  return changed;
}

/** The settled world (see the module doc). */
function settledWorld(): World {
  const cache = new Cache();
  for (const ix of controller.indexes ?? []) cache.addIndex(ix.type, ix.name, ix.keys);
  let version = 100_000;
  const storeOf = (type: ResourceType) =>
    cache.store(type, undefined, controller.watches.find((w) => w.type === type)?.project);
  const fill = (type: ResourceType, objects: KubeObject[]) => {
    const store = storeOf(type);
    store.handle({ type: "init" });
    for (const object of objects) store.handle({ type: "init-apply", object });
    store.handle({ type: "init-done" });
  };
  const rls = Array.from(
    { length: RATELIMITS },
    (_, i) => rateLimitObject({ i, rules: 4, namespace: NAMESPACE, stored: true }),
  );
  fill(RESOURCES.RateLimit, rls);
  fill(RESOURCES.Pod, rls.map((_, i) => sidecarPod(i)));
  fill(RESOURCES.EnvoyFilter, []);
  fill(RESOURCES.CustomResourceDefinition, [{
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: ENVOYFILTER_CRD, resourceVersion: "1" },
  }]);
  const world: World = {
    cache,
    key: `${NAMESPACE}/${rls[MEASURED].metadata.name}`,
    put(type, obj) {
      const object = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(version++) } };
      storeOf(type).handle({ type: "apply", object });
    },
  };
  settle(world, rls.map((o) => `${NAMESPACE}/${o.metadata.name}`));
  return world;
}

/** Reconciles `keys` and carries out their Plans until none changes anything. */
function settle(world: World, keys: readonly string[]): void {
  for (let pass = 0;; pass++) {
    if (pass === 5) throw new Error("the world does not settle in 5 passes");
    let changed = false;
    for (const key of keys) {
      const plan = controller.reconcile(key, world.cache, ctx(0));
      if (plan) changed = carryOut(world, key, plan) || changed;
    }
    if (!changed) return;
  }
}

/** A file's path from the repository's root, when it is one of ours. */
function repoPath(url: string): string | undefined {
  return url.startsWith(REPO) ? url.slice(REPO.length) : undefined;
}

const isSource = (path: string | undefined): path is string => !!path?.startsWith("src/");

/** The files under src/ that one call of `run` enters, by precise coverage. */
async function filesEntered(session: Session, run: () => void): Promise<string[]> {
  await session.post("Profiler.startPreciseCoverage", { callCount: true, detailed: false });
  // Reset the counters: only what runs from here counts.
  await session.post("Profiler.takePreciseCoverage");
  run();
  const { result } = await session.post("Profiler.takePreciseCoverage");
  await session.post("Profiler.stopPreciseCoverage");
  const files = new Set<string>();
  for (const script of result) {
    const path = repoPath(script.url);
    if (isSource(path) && script.functions.some((f) => f.ranges.some((r) => r.count > 0))) {
      files.add(path);
    }
  }
  return [...files].sort();
}

/** What the sampled stacks show. */
interface Sampled {
  samples: number;
  /** Files under src/ seen beneath a `reconcileRateLimit` frame. */
  beneath: string[];
  /** Every file under src/ seen. */
  seen: string[];
  /** Each re-entry: the files (and the function entering each) from one visit to the next. */
  reentries: string[];
}

/** One frame of a stack as re-entry reads it: its file, and the function it entered by. */
interface Visit {
  file: string;
  fn: string;
}

/** Samples `runs` calls of `run` with the CPU profiler, and reads every sampled stack. */
async function sampleStacks(session: Session, run: () => void, runs: number): Promise<Sampled> {
  await session.post("Profiler.setSamplingInterval", { interval: 1 });
  await session.post("Profiler.start");
  for (let i = 0; i < runs; i++) run();
  const { profile } = await session.post("Profiler.stop");
  const byId = new Map<number, Profiler.ProfileNode>();
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const beneath = new Set<string>();
  const seen = new Set<string>();
  const reentries = new Set<string>();
  const done = new Set<number>();
  for (const leaf of profile.samples ?? []) {
    if (done.has(leaf)) continue;
    done.add(leaf);
    // Root to leaf, frames outside src/ left out, frames of one file in a row one visit.
    const frames: Profiler.ProfileNode["callFrame"][] = [];
    for (let id: number | undefined = leaf; id !== undefined; id = parent.get(id)) {
      frames.unshift(byId.get(id)!.callFrame);
    }
    const visits: Visit[] = [];
    let under = false;
    for (const frame of frames) {
      const file = repoPath(frame.url);
      if (!isSource(file)) continue;
      seen.add(file);
      if (under) beneath.add(file);
      if (frame.functionName === "reconcileRateLimit") {
        under = true;
        beneath.add(file);
      }
      if (visits.at(-1)?.file !== file) {
        visits.push({ file, fn: frame.functionName || "(anonymous)" });
      }
    }
    for (let j = 0; j < visits.length; j++) {
      const again = visits.findIndex((v, k) => k > j && v.file === visits[j].file);
      if (again < 0) continue;
      reentries.add(
        visits.slice(j, again + 1).map((v) => `${v.file} ${v.fn}`).join(" -> "),
      );
    }
  }
  return {
    samples: profile.samples?.length ?? 0,
    beneath: [...beneath].sort(),
    seen: [...seen].sort(),
    reentries: [...reentries].sort(),
  };
}

/** What one scenario measured. */
export interface PathReport {
  scenario: string;
  /** The Plan's state and writes, in short. */
  outcome: string;
  /** Files under src/ entered (precise coverage). */
  entered: string[];
  /** Files under src/ sampled beneath `reconcileRateLimit`. */
  beneath: string[];
  /** Files sampled on a stack twice with another file between. */
  reentered: string[];
  /** Each distinct re-entry, as the files and functions from one visit to the next. */
  reentries: string[];
  /** Files entered that no sample saw. */
  unsampled: string[];
  samples: number;
}

/** Warms up the reconcile of `world.key`, then measures it (see the module doc). */
async function measure(
  session: Session,
  scenario: string,
  world: World,
  runs: number,
): Promise<PathReport> {
  let i = 1;
  let plan: Plan | undefined;
  const run = () => {
    plan = controller.reconcile(world.key, world.cache, ctx(i++));
  };
  for (let w = 0; w < 2000; w++) run();
  const entered = await filesEntered(session, run);
  const outcome = `${
    (plan?.status as { state?: string } | undefined)?.state
  }, ${plan?.apply.length} apply, ${plan?.delete.length} delete, ${plan?.events.length} events`;
  const sampled = await sampleStacks(session, run, runs);
  const reentered = new Set(sampled.reentries.map((r) => r.slice(0, r.indexOf(" "))));
  return {
    scenario,
    outcome,
    entered,
    beneath: sampled.beneath,
    reentered: [...reentered].sort(),
    reentries: sampled.reentries,
    unsampled: entered.filter((f) => !sampled.seen.includes(f)),
    samples: sampled.samples,
  };
}

/** The measured RateLimit with a new generation its validation refuses, settled. */
function refuse(world: World): void {
  const [ns, name] = world.key.split("/");
  const rl = world.cache.get(RESOURCES.RateLimit, ns, name)!;
  const spec = structuredClone(rl.spec) as {
    local: { defaultBucket: { fillInterval: string } };
  };
  // The rules' intervals (1s to 4s) are no longer multiples of the default bucket's.
  spec.local.defaultBucket.fillInterval = "3s";
  world.put(RESOURCES.RateLimit, { ...rl, metadata: { ...rl.metadata, generation: 2 }, spec });
  settle(world, [world.key]);
}

/**
 * A newer RateLimit selecting the measured one's Pods, settled: it is refused (the older one wins),
 * and it becomes the one measured.
 */
function rival(world: World): void {
  const [ns, name] = world.key.split("/");
  const older = world.cache.get(RESOURCES.RateLimit, ns, name)!.spec as Record<string, unknown>;
  const rl = rateLimitObject({ i: RATELIMITS, rules: 4, namespace: NAMESPACE, stored: true });
  world.put(RESOURCES.RateLimit, {
    ...rl,
    spec: { ...rl.spec as Record<string, unknown>, selectorLabels: older.selectorLabels },
  });
  world.key = `${NAMESPACE}/${rl.metadata.name}`;
  settle(world, [world.key]);
}

function printReport(r: PathReport): void {
  const list = (title: string, files: readonly string[]) => {
    console.log(`  ${title}: ${files.length}`);
    for (const f of files) console.log(`    ${f}`);
  };
  console.log(`${r.scenario} (${r.outcome}; ${r.samples} samples)`);
  list("files entered (precise coverage)", r.entered);
  list("beneath reconcileRateLimit (sampled)", r.beneath);
  list("files re-entered (sampled)", r.reentered);
  for (const p of r.reentries) console.log(`      ${p}`);
  if (r.unsampled.length > 0) list("entered but never sampled", r.unsampled);
}

/** Measures the three reconciles (see the module doc), sampling `runs` of each. */
export async function reconcilePaths(runs = 20_000): Promise<PathReport[]> {
  const session = new Session();
  session.connect();
  try {
    await session.post("Profiler.enable");
    const world = settledWorld();
    const reports = [await measure(session, "at rest", world, runs)];
    refuse(world);
    reports.push(await measure(session, "refused", world, runs));
    rival(world);
    reports.push(await measure(session, "conflict", world, runs));
    await session.post("Profiler.disable");
    return reports;
  } finally {
    session.disconnect();
  }
}

if (import.meta.main) {
  const runsArg = Deno.args.find((a) => a.startsWith("--runs="));
  const reports = await reconcilePaths(
    runsArg ? Number(runsArg.slice("--runs=".length)) : undefined,
  );
  if (Deno.args.includes("--json")) console.log(JSON.stringify(reports));
  else reports.forEach(printReport);
}
