/** The Serverless controller: what the runtime watches for it and how the cache becomes the reducer's input. */
import { RESOURCES } from "../api/resources.ts";
import type { ControllerSpec } from "../runtime/controller.ts";
import { reconcileServerless } from "../reconcile/serverless.ts";
import {
  holdDeletion,
  installedObjects,
  type ModuleKind,
  moduleTriggers,
  moduleWatches,
  splitKey,
  userObjectCounts,
} from "./module.ts";

/** The Serverless module: what it installs and what blocks its deletion. */
export const SERVERLESS_MODULE: ModuleKind = {
  module: "serverless",
  primary: RESOURCES.Serverless,
  installed: [
    RESOURCES.CustomResourceDefinition,
    RESOURCES.ServiceAccount,
    RESOURCES.ClusterRole,
    RESOURCES.ClusterRoleBinding,
    RESOURCES.Role,
    RESOURCES.RoleBinding,
    RESOURCES.ConfigMap,
    RESOURCES.Service,
    RESOURCES.Deployment,
  ],
  userTypes: [RESOURCES.Function],
};

/** The Serverless controller (ControllerSpec for the runtime). */
export const serverlessController: ControllerSpec = {
  name: "serverless",
  primary: RESOURCES.Serverless,
  watches: moduleWatches(SERVERLESS_MODULE),
  triggers: (type, obj, cache) => moduleTriggers(SERVERLESS_MODULE, type, obj, cache),
  reconcile(key, cache, ctx) {
    const { namespace, name } = splitKey(key);
    const object = cache.get(RESOURCES.Serverless, namespace, name);
    if (!object) return undefined;
    const held = holdDeletion(SERVERLESS_MODULE, cache, object);
    if (held) return held;
    return reconcileServerless({
      object,
      peers: cache.list(RESOURCES.Serverless),
      installed: installedObjects(SERVERLESS_MODULE, cache),
      userObjects: userObjectCounts(SERVERLESS_MODULE, cache),
      now: ctx.now,
      images: ctx.images,
      ...(ctx.lastOutcome ? { lastOutcome: ctx.lastOutcome } : {}),
    });
  },
};
