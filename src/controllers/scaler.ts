/** The Scaler controller: what the runtime watches for it and how the cache becomes the reducer's input. */
import { RESOURCES } from "../api/resources.ts";
import type { ControllerSpec } from "../runtime/mod.ts";
import { KEDA_CRDS } from "./embedded_crds.ts";
import { moduleController, type ModuleKind } from "./module_controller.ts";

/** The KEDA module: what it installs and what blocks its deletion. */
export const SCALER_MODULE: ModuleKind = {
  module: "keda",
  primary: RESOURCES.Scaler,
  installed: [
    RESOURCES.CustomResourceDefinition,
    RESOURCES.ServiceAccount,
    RESOURCES.ClusterRole,
    RESOURCES.ClusterRoleBinding,
    RESOURCES.Role,
    RESOURCES.RoleBinding,
    RESOURCES.Service,
    RESOURCES.Deployment,
    RESOURCES.APIService,
    RESOURCES.ValidatingWebhookConfiguration,
  ],
  // Every kind of KEDA's CRDs blocks deletion: removing a CRD deletes its objects, which are
  // users'. A test checks this list against the kinds of the generated CRDs, so a KEDA release
  // with a new CRD cannot be installed without its objects holding deletion.
  userTypes: [
    RESOURCES.ScaledObject,
    RESOURCES.ScaledJob,
    RESOURCES.TriggerAuthentication,
    RESOURCES.ClusterTriggerAuthentication,
    RESOURCES.CloudEventSource,
    RESOURCES.ClusterCloudEventSource,
  ],
  crds: KEDA_CRDS,
};

const loadScaler = async () => (await import("../reconcile/scaler/mod.ts")).reconcileScaler;

/** The Scaler controller (ControllerSpec for the runtime), without cluster DNS lookups. */
export const scalerController: ControllerSpec = moduleController(
  "scaler",
  SCALER_MODULE,
  loadScaler,
);

/**
 * The Scaler controller; with `clusterDns` it also reads the operator's cluster DNS lookups of the
 * name KEDA's metrics server dials (the operator must then serve the DNSLookup type).
 */
export function scalerControllerFor(clusterDns: boolean): ControllerSpec {
  return clusterDns
    ? moduleController("scaler", { ...SCALER_MODULE, lookups: true }, loadScaler)
    : scalerController;
}
