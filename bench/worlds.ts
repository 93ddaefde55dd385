/**
 * Steady-state reducer inputs: the simulator's API server (sim/cluster) stores the objects and
 * carries out a reducer's Plans (status, finalizer, applied and deleted objects; its Deployment
 * controller rolls the Deployments out at once) until one changes nothing, so a bench times the
 * reconcile an operator makes most often, the one that finds everything in place.
 */
import { RESOURCES } from "../src/api/resources.ts";
import { SCALER_MODULE } from "../src/controllers/scaler.ts";
import { SERVERLESS_MODULE } from "../src/controllers/serverless.ts";
import type { KubeObject, ResourceType } from "../src/api/object.ts";

import { FIELD_MANAGER, MODULE_LABEL } from "../src/reconcile/labels.ts";
import type { Plan } from "../src/reconcile/plan.ts";
import { SimClock } from "../sim/clock.ts";
import { type Actor, SimCluster, type Store } from "../sim/cluster/mod.ts";
import { Prng } from "../sim/prng.ts";
import type { ModuleImages } from "../src/api/images.ts";

/** A fixed time: 2026-01-01T00:00:00Z. */
export const NOW = Date.UTC(2026, 0, 1);

/** Images for the module reducers. */
export const IMAGES: ModuleImages = {
  serverlessController: "registry.example/serverless-controller:1.0.0",
  kedaOperator: "registry.example/keda:2.20.2",
  kedaMetricsServer: "registry.example/keda-metrics-apiserver:2.20.2",
  kedaAdmissionWebhooks: "registry.example/keda-admission-webhooks:2.20.2",
};

/** A module object and what it installed. */
export interface ModuleWorld {
  object: KubeObject;
  installed: KubeObject[];
}

const OPERATOR: Actor = { name: "operator", manager: FIELD_MANAGER };
const USER: Actor = { name: "user", manager: "kubectl" };

/**
 * A simulated cluster (the project's and Istio's CRDs installed) on a clock stopped at NOW, whose
 * Deployments roll out at once and whose aggregator judges APIServices at once.
 */
function simCluster(): SimCluster {
  return new SimCluster({
    clock: new SimClock(NOW),
    prng: new Prng(1),
    deployments: { readyDelayMs: () => 0, reactionMs: () => 0 },
    aggregator: { reactionMs: () => 0 },
  });
}

/** Runs the built-in controllers' work due now (their timers never wait: see simCluster). */
function drain(cluster: SimCluster): void {
  for (let fire = cluster.clock.popDue(NOW); fire; fire = cluster.clock.popDue(NOW)) fire();
}

function served(store: Store, obj: { apiVersion: string; kind: string }): ResourceType {
  const type = store.types.byKind(obj.apiVersion, obj.kind);
  if (!type) throw new Error(`the simulated cluster does not serve ${obj.apiVersion} ${obj.kind}`);
  return type;
}

function ensureNamespace(store: Store, name: string | undefined): void {
  if (!name || store.get(RESOURCES.Namespace, undefined, name)) return;
  const ns = { apiVersion: "v1", kind: "Namespace", metadata: { name } };
  store.create(RESOURCES.Namespace, ns, USER);
}

let shared: SimCluster | undefined;

/** An object as the API server stores it once the operator applied it (its namespace exists). */
export function stored(obj: KubeObject): KubeObject {
  const cluster = shared ??= simCluster();
  ensureNamespace(cluster.store, obj.metadata.namespace);
  const type = served(cluster.store, obj);
  cluster.store.apply(type, obj, OPERATOR, true);
  drain(cluster);
  return cluster.store.get(type, obj.metadata.namespace, obj.metadata.name)!;
}

/** Carries out a Plan's writes about `object` as the runner would; true when any changed something. */
function carryOut(cluster: SimCluster, object: KubeObject, plan: Plan): boolean {
  const store = cluster.store;
  const type = served(store, object);
  const { namespace, name } = object.metadata;
  let changed = false;
  for (const o of plan.apply) {
    ensureNamespace(store, o.metadata.namespace);
    changed = store.apply(served(store, o), o, OPERATOR, true).changed || changed;
  }
  for (const r of plan.delete) {
    const t = served(store, r);
    if (store.get(t, r.namespace, r.name)) {
      changed = store.delete(t, r.namespace, r.name, {}, OPERATOR).changed || changed;
    }
  }
  const cur = store.get(type, namespace, name)!;
  const finalizers = new Set(cur.metadata.finalizers ?? []);
  if (plan.finalizer?.add) finalizers.add(plan.finalizer.add);
  if (plan.finalizer?.remove) finalizers.delete(plan.finalizer.remove);
  const meta = { ...cur.metadata, finalizers: [...finalizers] };
  changed = store.update(type, { ...cur, metadata: meta }, OPERATOR).changed || changed;
  if (plan.status) {
    const status = {
      apiVersion: object.apiVersion,
      kind: object.kind,
      metadata: { name, namespace },
    };
    changed =
      store.apply(type, { ...status, status: plan.status }, OPERATOR, true, "status").changed ||
      changed;
  }
  drain(cluster);
  return changed;
}

/** The module object (Serverless or Scaler) as stored, and what its module installed. */
function worldOf(store: Store, start: KubeObject): ModuleWorld {
  const kind = start.kind === "Scaler" ? SCALER_MODULE : SERVERLESS_MODULE;
  const object = store.get(kind.primary, start.metadata.namespace, start.metadata.name)!;
  const installed = kind.installed.flatMap((type) =>
    store.types.serves(type) ? store.objects(type) : []
  ).filter((o) => o.metadata.labels?.[MODULE_LABEL] === kind.module);
  return { object, installed };
}

/**
 * Stores `start` in a fresh simulated cluster, then reconciles and carries out Plans until one
 * changes nothing; throws after `max` passes.
 */
export function settle(
  start: ModuleWorld,
  reconcile: (w: ModuleWorld) => Plan,
  max = 10,
): { world: ModuleWorld; plan: Plan } {
  const cluster = simCluster();
  ensureNamespace(cluster.store, start.object.metadata.namespace);
  cluster.store.create(served(cluster.store, start.object), start.object, USER);
  for (let pass = 0; pass < max; pass++) {
    const world = worldOf(cluster.store, start.object);
    const plan = reconcile(world);
    if (!carryOut(cluster, world.object, plan)) return { world, plan };
  }
  throw new Error(`no steady state after ${max} passes`);
}
