/**
 * Steady-state reducer inputs: a small world that carries out a reducer's Plans (status, finalizer,
 * applied objects, Deployments rolled out at once) until they change nothing, so a bench times the
 * reconcile an operator makes most often, the one that finds everything in place.
 */
import type { KubeObject } from "../src/runtime/cluster.ts";
import type { ModuleImages } from "../src/runtime/controller_spec.ts";
import type { Plan } from "../src/reconcile/plan.ts";
import { identity } from "../src/reconcile/module/install_diff.ts";
import { refOf } from "../src/reconcile/plan.ts";

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

let serial = 0;

/** An applied object as the API server stores it; Deployments come back rolled out and Available. */
export function stored(obj: KubeObject): KubeObject {
  const n = ++serial;
  const meta = { ...obj.metadata, uid: `uid-${n}`, resourceVersion: String(n), generation: 1 };
  if (obj.kind !== "Deployment") return { ...obj, metadata: meta };
  const replicas = (obj.spec as { replicas?: number } | undefined)?.replicas ?? 1;
  return {
    ...obj,
    metadata: meta,
    status: {
      observedGeneration: 1,
      replicas,
      updatedReplicas: replicas,
      readyReplicas: replicas,
      availableReplicas: replicas,
      conditions: [
        { type: "Available", status: "True", reason: "MinimumReplicasAvailable" },
        { type: "Progressing", status: "True", reason: "NewReplicaSetAvailable" },
      ],
    },
  };
}

/** The world after the Plan's writes. */
export function carryOut(w: ModuleWorld, plan: Plan): ModuleWorld {
  const installed = new Map(w.installed.map((o) => [identity(refOf(o)), o]));
  for (const o of plan.apply) installed.set(identity(refOf(o)), stored(o));
  for (const r of plan.delete) installed.delete(identity(r));
  const finalizers = new Set(w.object.metadata.finalizers ?? []);
  if (plan.finalizer?.add) finalizers.add(plan.finalizer.add);
  if (plan.finalizer?.remove) finalizers.delete(plan.finalizer.remove);
  const object: KubeObject = {
    ...w.object,
    metadata: { ...w.object.metadata, finalizers: [...finalizers] },
    ...(plan.status ? { status: plan.status } : {}),
  };
  return { object, installed: [...installed.values()] };
}

/** True when carrying out `plan` would change nothing in `w`. */
export function isQuiet(w: ModuleWorld, plan: Plan): boolean {
  const fin = w.object.metadata.finalizers ?? [];
  return plan.apply.length === 0 && plan.delete.length === 0 &&
    (plan.status === undefined ||
      JSON.stringify(plan.status) === JSON.stringify(w.object.status)) &&
    (!plan.finalizer?.add || fin.includes(plan.finalizer.add)) &&
    (!plan.finalizer?.remove || !fin.includes(plan.finalizer.remove));
}

/** Reconciles and carries out Plans until one is quiet; throws after `max` passes. */
export function settle(
  start: ModuleWorld,
  reconcile: (w: ModuleWorld) => Plan,
  max = 10,
): { world: ModuleWorld; plan: Plan } {
  let w = start;
  for (let pass = 0; pass < max; pass++) {
    const plan = reconcile(w);
    if (isQuiet(w, plan)) return { world: w, plan };
    w = carryOut(w, plan);
  }
  throw new Error(`no steady state after ${max} passes`);
}
