/**
 * A ValidatingAdmissionPolicy and its binding of the same name, as the operator installs them (the
 * advice, the write fence, the not-served refusals): one shape, the operator's labels on both.
 */
import type { JsonObject } from "../api/json.ts";
import type { KubeObject, ResourceType } from "../api/object.ts";
import { OPERATOR_OBJECT_LABELS } from "../kube/rbac.ts";

const API = "admissionregistration.k8s.io/v1";

/** The policy `name` with `spec`, and its binding `name` with `binding` (policyName added). */
export function admissionPolicy(
  name: string,
  spec: JsonObject,
  binding: JsonObject,
): [KubeObject, KubeObject] {
  return [
    {
      apiVersion: API,
      kind: "ValidatingAdmissionPolicy",
      metadata: { name, labels: { ...OPERATOR_OBJECT_LABELS } },
      spec,
    },
    {
      apiVersion: API,
      kind: "ValidatingAdmissionPolicyBinding",
      metadata: { name, labels: { ...OPERATOR_OBJECT_LABELS } },
      spec: { policyName: name, ...binding },
    },
  ];
}

/** A policy's match on `type`'s objects (every version) for `operations`. */
export function matchingType(type: ResourceType, operations: readonly string[]): JsonObject {
  return {
    resourceRules: [{
      apiGroups: [type.group],
      apiVersions: ["*"],
      operations: [...operations],
      resources: [type.plural],
    }],
  };
}
