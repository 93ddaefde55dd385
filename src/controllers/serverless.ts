/** The Serverless controller: what the runtime watches for it and how the cache becomes the reducer's input. */
import { RESOURCES } from "../api/resources.ts";
import type { ControllerSpec } from "../runtime/mod.ts";
import { FUNCTION_CRDS } from "./embedded_crds.ts";
import { moduleController, type ModuleKind } from "./module_controller.ts";

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
  crds: FUNCTION_CRDS,
};

/** The Serverless controller (ControllerSpec for the runtime). */
export const serverlessController: ControllerSpec = moduleController(
  "serverless",
  SERVERLESS_MODULE,
  async () => (await import("../reconcile/serverless/mod.ts")).reconcileServerless,
);
