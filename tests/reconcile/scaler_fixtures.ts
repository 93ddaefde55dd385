/** Scaler objects, inputs and a runner for the reducer's tests. */
import type { KubeObject } from "../../src/api/object.ts";
import type { Plan } from "../../src/reconcile/plan.ts";
import { reconcileScaler, type ScalerInput } from "../../src/reconcile/scaler/mod.ts";
import { IMAGES, KEDA_CRD_LIST, NOW } from "./serverless_fixtures.ts";
import { type CarryOutOptions, convergeWith } from "./plans_on_sim_store.ts";
import { claimOf, moduleObject, type World } from "./module_fixtures.ts";

export { conditionOf, IMAGES, NOW, statusOf } from "./serverless_fixtures.ts";

/** No user KEDA objects. */
export const NO_USER_OBJECTS = { ScaledObject: [], ScaledJob: [], TriggerAuthentication: [] };

/** A Scaler as the API server returns it. */
export function scaler(
  spec: Record<string, unknown> = {},
  meta: Partial<KubeObject["metadata"]> = {},
): KubeObject {
  return moduleObject("Scaler", spec, meta);
}

/** The reducer input for a world. */
export function inputOf(w: World, extra: Partial<ScalerInput> = {}): ScalerInput {
  return {
    object: w.object,
    peers: [...(w.object ? [w.object] : []), ...w.others],
    claim: claimOf("keda", w),
    installed: w.installed,
    userObjects: NO_USER_OBJECTS,
    now: NOW,
    images: IMAGES,
    crds: KEDA_CRD_LIST,
    ...extra,
  };
}

/** Reconciles and carries out the Plan until it writes nothing (at most `max` passes). */
export function converge(
  w: World,
  extra: Partial<ScalerInput> = {},
  opts: CarryOutOptions = {},
  max = 6,
): { world: World; plan: Plan; passes: number } {
  return convergeWith((cur) => reconcileScaler(inputOf(cur, extra)), w, opts, max);
}

/** A Scaler installed and ready, from nothing. */
export function installed(spec: Record<string, unknown> = {}): World {
  return converge({ object: scaler(spec), others: [], installed: [] }).world;
}
