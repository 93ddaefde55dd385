/**
 * deploy/istiod/: the optional kustomize Component that turns on finding istiod's replicas
 * (`--istiod-service`, src/kube/istiod_endpoints.ts): a Role in istiod's namespace allowing
 * exactly what the discovery does with endpointslices (list and watch, no get, no other
 * resource), bound to the operator's ServiceAccount, and the operator's variable naming the
 * Service. A Role, not a ClusterRole: the operator reads no other namespace's slices.
 */
import type { KubeObject } from "../api/object.ts";
import { ISTIO_ROOT_NAMESPACE } from "../api/mesh.ts";
import { DEFAULT_RBAC_NAMES, namespacedRole, type RbacNames } from "../kube/rbac.ts";
import {
  DISCOVERY_ROLE,
  DISCOVERY_VERBS,
  ENDPOINT_SLICE,
  type ServiceRef,
  serviceRefText,
} from "../kube/istiod_endpoints.ts";

/** The operator's variable for `--istiod-service` (run_flags.ts's envName; a test holds them equal). */
export const ISTIOD_SERVICE_ENV = "PLATFORM_OPERATOR_ISTIOD_SERVICE";

/** The Service deploy/istiod names: Istio's chart's default. */
export const DEFAULT_ISTIOD_SERVICE: ServiceRef = {
  namespace: ISTIO_ROOT_NAMESPACE,
  name: "istiod",
};

/** The Role and RoleBinding in `namespace` that let the operator find istiod's replicas there. */
export function istiodDiscoveryRbac(
  namespace: string,
  names: RbacNames = DEFAULT_RBAC_NAMES,
): KubeObject[] {
  return namespacedRole(DISCOVERY_ROLE, namespace, [{
    apiGroups: [ENDPOINT_SLICE.group],
    resources: [ENDPOINT_SLICE.plural],
    verbs: [...DISCOVERY_VERBS],
  }], names);
}

/** The patch of the operator's Deployment that names istiod's Service. */
export function istiodServicePatch(service: ServiceRef = DEFAULT_ISTIOD_SERVICE): KubeObject {
  return operatorDeploymentPatch({
    env: [{ name: ISTIOD_SERVICE_ENV, value: serviceRefText(service) }],
  });
}

/**
 * A strategic merge patch of deploy/'s operator Deployment adding `container`'s lists (env,
 * ports) to its operator container: what an optional component changes in it.
 */
export function operatorDeploymentPatch(container: Record<string, unknown>): KubeObject {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "platform-operator", namespace: DEFAULT_RBAC_NAMES.namespace },
    spec: { template: { spec: { containers: [{ name: "operator", ...container }] } } },
  } as KubeObject;
}
