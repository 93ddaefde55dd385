/** Serverless objects, inputs and a runner for the reducer's tests. */
import type { Condition } from "../../src/api/common.ts";
import type { KubeObject } from "../../src/api/object.ts";

import type { Plan } from "../../src/reconcile/plan.ts";
import { reconcileServerless, type ServerlessInput } from "../../src/reconcile/serverless/mod.ts";
import { type CarryOutOptions, convergeWith } from "./plans_on_sim_store.ts";
import { claimOf, moduleObject, type World } from "./module_fixtures.ts";
import { FUNCTION_CRDS, KEDA_CRDS } from "../../src/controllers/embedded_crds.ts";
import type { ServerlessSettings } from "../../src/reconcile/serverless/config.ts";
import type { ModuleImages } from "../../src/api/images.ts";

// The module reducers render the upstream CRDs, which a controller loads before its first
// reconcile (ControllerSpec.preload) and hands in; every test reducing a module comes through here.
/** KEDA's CRDs, loaded, as the Scaler controller hands them to its reducer. */
export const KEDA_CRD_LIST = await KEDA_CRDS.load();
/** The Function CRD, loaded, as the Serverless controller hands it to its reducer. */
export const FUNCTION_CRD_LIST = await FUNCTION_CRDS.load();

/** A fixed time: 2026-01-01T00:00:00Z. */
export const NOW = Date.UTC(2026, 0, 1);

/** Pinned test images. */
export const IMAGES: ModuleImages = {
  serverlessController: "registry.example/serverless-controller:1.0.0",
  kedaOperator: "registry.example/keda:2.20.2",
  kedaMetricsServer: "registry.example/keda-metrics-apiserver:2.20.2",
  kedaAdmissionWebhooks: "registry.example/keda-admission-webhooks:2.20.2",
};

/** The settings of a Serverless with an empty spec (what renderServerless gets). */
export const SETTINGS: ServerlessSettings = {
  functionRequeueDuration: "5m",
  healthzLivenessTimeout: "10s",
  tracingEndpoint: "",
  eventingEndpoint: "",
  defaultRuntimePodPreset: "M",
  logLevel: "info",
  logFormat: "json",
};

/** A Serverless as the API server returns it. */
export function serverless(
  spec: Record<string, unknown> = {},
  meta: Partial<KubeObject["metadata"]> = {},
): KubeObject {
  return moduleObject("Serverless", spec, meta);
}

/** A world holding just `object`. */
export function world(object: KubeObject, others: KubeObject[] = []): World {
  return { object, others, installed: [] };
}

/** The reducer input for a world. */
export function inputOf(w: World, extra: Partial<ServerlessInput> = {}): ServerlessInput {
  return {
    object: w.object,
    peers: [...(w.object ? [w.object] : []), ...w.others],
    claim: claimOf("serverless", w),
    installed: w.installed,
    userObjects: { Function: [] },
    now: NOW,
    images: IMAGES,
    crds: FUNCTION_CRD_LIST,
    ...extra,
  };
}

/** Reconciles and carries out the Plan until it writes nothing (at most `max` passes). */
export function converge(
  w: World,
  extra: Partial<ServerlessInput> = {},
  opts: CarryOutOptions = {},
  max = 6,
): { world: World; plan: Plan; passes: number } {
  return convergeWith((cur) => reconcileServerless(inputOf(cur, extra)), w, opts, max);
}

/** The status of a Plan, typed for assertions. */
export function statusOf(
  plan: Plan,
): { state?: string; served?: string; conditions: Condition[] } & Record<string, unknown> {
  const s = (plan.status ?? {}) as { conditions?: Condition[] } & Record<string, unknown>;
  return { ...s, conditions: s.conditions ?? [] };
}

/** The condition of `type` in a Plan's status. */
export function conditionOf(plan: Plan, type: string): Condition | undefined {
  return statusOf(plan).conditions.find((c) => c.type === type);
}
