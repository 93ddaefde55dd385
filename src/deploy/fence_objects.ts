/**
 * deploy/base/fence.yaml: the API server fences the operator's writes by its Lease. A write the
 * old leader had in flight when it was cut off from the API server (in its kernel's send buffer)
 * lands when the path heals, after the new leader has written (docs/faults.md); the operator
 * cannot take it back, so the API server refuses it: a ValidatingAdmissionPolicy, its param the
 * leader election Lease, denies a write by the operator's ServiceAccount from a Pod that does not
 * hold the Lease.
 *
 * Only requests that carry the Pod name of a bound ServiceAccount token
 * (`authentication.kubernetes.io/pod-name` in the user's extra) are matched: the operator run
 * outside a Pod (`deno task dev`, a token from the TokenRequest API) is not fenced. The
 * election's own writes (Leases), Events and access or token reviews are not fenced either. With
 * no Lease (leader election off) nothing is denied.
 */
import type { KubeObject } from "../api/object.ts";
import { DEFAULT_RBAC_NAMES, type RbacNames } from "../kube/rbac.ts";
import { admissionPolicy } from "./admission_policy.ts";
import { DEFAULT_LEASE_NAME } from "../runtime/mod.ts";

/** The name of the fence's ValidatingAdmissionPolicy and of its binding. */
export const FENCE_NAME = "platform-operator-leader-writes";

/** The user-info extra key of a bound token's Pod name. */
export const POD_NAME_EXTRA = "authentication.kubernetes.io/pod-name";

/** The fence's policy and binding, for the operator of `names` and its Lease `leaseName`. */
export function fenceObjects(
  names: RbacNames = DEFAULT_RBAC_NAMES,
  leaseName: string = DEFAULT_LEASE_NAME,
): KubeObject[] {
  const user = `system:serviceaccount:${names.namespace}:${names.serviceAccount}`;
  const pod = `request.userInfo.extra['${POD_NAME_EXTRA}'][0]`;
  const holder = "(has(params.spec) && has(params.spec.holderIdentity) ? " +
    "params.spec.holderIdentity : '')";
  return admissionPolicy(
    FENCE_NAME,
    {
      failurePolicy: "Fail",
      paramKind: { apiVersion: "coordination.k8s.io/v1", kind: "Lease" },
      matchConstraints: {
        resourceRules: [{
          apiGroups: ["*"],
          apiVersions: ["*"],
          operations: ["CREATE", "UPDATE", "DELETE"],
          // Every resource and every subresource (a status, a scale).
          resources: ["*/*"],
        }],
        // The election itself, Events (a standby records them too), and reviews.
        excludeResourceRules: [
          ["coordination.k8s.io", "leases"],
          ["", "events"],
          ["events.k8s.io", "events"],
          ["authorization.k8s.io", "*"],
          ["authentication.k8s.io", "*"],
        ].map(([group, resource]) => ({
          apiGroups: [group],
          apiVersions: ["*"],
          operations: ["*"],
          resources: [resource],
        })),
      },
      matchConditions: [{
        name: "operator-pod",
        expression: `request.userInfo.username == '${user}' && ` +
          `'${POD_NAME_EXTRA}' in request.userInfo.extra`,
      }],
      validations: [{
        expression: `${pod} == ${holder}`,
        reason: "Forbidden",
        messageExpression: `'only the leader writes: Pod ' + ${pod} + ' does not hold Lease ` +
          `${names.namespace}/${leaseName} (held by ' + ${holder} + ')'`,
      }],
    },
    {
      validationActions: ["Deny"],
      paramRef: {
        name: leaseName,
        namespace: names.namespace,
        // Leader election off: no Lease, no fence.
        parameterNotFoundAction: "Allow",
      },
    },
  );
}
