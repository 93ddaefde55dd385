/** The Scaler controller: what the runtime watches for it and how the cache becomes the reducer's input. */
import { RESOURCES } from "../api/resources.ts";
import type { ControllerSpec } from "../runtime/controller.ts";
import { reconcileScaler } from "../reconcile/scaler.ts";
import {
  holdDeletion,
  installedObjects,
  type ModuleKind,
  moduleTriggers,
  moduleWatches,
  splitKey,
  userObjectCounts,
} from "./module.ts";

/** The KEDA module: what it installs and what blocks its deletion. */
export const SCALER_MODULE: ModuleKind = {
  module: "keda",
  primary: RESOURCES.Scaler,
  installed: [
    RESOURCES.CustomResourceDefinition,
    RESOURCES.ServiceAccount,
    RESOURCES.ClusterRole,
    RESOURCES.ClusterRoleBinding,
    RESOURCES.Service,
    RESOURCES.Deployment,
    RESOURCES.APIService,
    RESOURCES.ValidatingWebhookConfiguration,
  ],
  // ClusterTriggerAuthentications block deletion too: removing KEDA's CRDs would delete them,
  // and they are users' objects, whatever DESIGN.md's shorter list says.
  userTypes: [
    RESOURCES.ScaledObject,
    RESOURCES.ScaledJob,
    RESOURCES.TriggerAuthentication,
    RESOURCES.ClusterTriggerAuthentication,
  ],
};

/** The Scaler controller (ControllerSpec for the runtime). */
export const scalerController: ControllerSpec = {
  name: "scaler",
  primary: RESOURCES.Scaler,
  watches: moduleWatches(SCALER_MODULE),
  triggers: (type, obj, cache) => moduleTriggers(SCALER_MODULE, type, obj, cache),
  reconcile(key, cache, ctx) {
    const { namespace, name } = splitKey(key);
    const object = cache.get(RESOURCES.Scaler, namespace, name);
    if (!object) return undefined;
    const held = holdDeletion(SCALER_MODULE, cache, object);
    if (held) return held;
    return reconcileScaler({
      object,
      peers: cache.list(RESOURCES.Scaler),
      installed: installedObjects(SCALER_MODULE, cache),
      userObjects: userObjectCounts(SCALER_MODULE, cache),
      now: ctx.now,
      images: ctx.images,
      ...(ctx.lastOutcome ? { lastOutcome: ctx.lastOutcome } : {}),
    });
  },
};
