/** Every resource type the operator reads or writes, in one place. */
import type { ResourceType } from "./object.ts";
import { GATEWAY_GROUP, OPERATOR_GROUP } from "./groups.ts";

/** A resource type; namespaced unless `namespaced` is false. */
export function resourceType(
  group: string,
  version: string,
  kind: string,
  plural: string,
  namespaced = true,
): ResourceType {
  return { group, version, kind, plural, namespaced };
}

const t = resourceType;

/** Resource types by kind. */
export const RESOURCES = {
  Serverless: t(OPERATOR_GROUP, "v1alpha1", "Serverless", "serverlesses"),
  Scaler: t(OPERATOR_GROUP, "v1alpha1", "Scaler", "scalers"),
  RateLimit: t(GATEWAY_GROUP, "v1alpha1", "RateLimit", "ratelimits"),
  EnvoyFilter: t("networking.istio.io", "v1alpha3", "EnvoyFilter", "envoyfilters"),
  Namespace: t("", "v1", "Namespace", "namespaces", false),
  Pod: t("", "v1", "Pod", "pods"),
  Service: t("", "v1", "Service", "services"),
  ServiceAccount: t("", "v1", "ServiceAccount", "serviceaccounts"),
  ConfigMap: t("", "v1", "ConfigMap", "configmaps"),
  Secret: t("", "v1", "Secret", "secrets"),
  Event: t("", "v1", "Event", "events"),
  Deployment: t("apps", "v1", "Deployment", "deployments"),
  PodDisruptionBudget: t("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets"),
  NetworkPolicy: t("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies"),
  Lease: t("coordination.k8s.io", "v1", "Lease", "leases"),
  TokenReview: t("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", false),
  SubjectAccessReview: t(
    "authorization.k8s.io",
    "v1",
    "SubjectAccessReview",
    "subjectaccessreviews",
    false,
  ),
  ClusterRole: t("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false),
  ClusterRoleBinding: t(
    "rbac.authorization.k8s.io",
    "v1",
    "ClusterRoleBinding",
    "clusterrolebindings",
    false,
  ),
  Role: t("rbac.authorization.k8s.io", "v1", "Role", "roles"),
  RoleBinding: t("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings"),
  CustomResourceDefinition: t(
    "apiextensions.k8s.io",
    "v1",
    "CustomResourceDefinition",
    "customresourcedefinitions",
    false,
  ),
  APIService: t("apiregistration.k8s.io", "v1", "APIService", "apiservices", false),
  ValidatingWebhookConfiguration: t(
    "admissionregistration.k8s.io",
    "v1",
    "ValidatingWebhookConfiguration",
    "validatingwebhookconfigurations",
    false,
  ),
  Function: t("serverless.platform-project.io", "v1alpha2", "Function", "functions"),
  ScaledObject: t("keda.sh", "v1alpha1", "ScaledObject", "scaledobjects"),
  ScaledJob: t("keda.sh", "v1alpha1", "ScaledJob", "scaledjobs"),
  TriggerAuthentication: t(
    "keda.sh",
    "v1alpha1",
    "TriggerAuthentication",
    "triggerauthentications",
  ),
  ClusterTriggerAuthentication: t(
    "keda.sh",
    "v1alpha1",
    "ClusterTriggerAuthentication",
    "clustertriggerauthentications",
    false,
  ),
  CloudEventSource: t("eventing.keda.sh", "v1alpha1", "CloudEventSource", "cloudeventsources"),
  ClusterCloudEventSource: t(
    "eventing.keda.sh",
    "v1alpha1",
    "ClusterCloudEventSource",
    "clustercloudeventsources",
    false,
  ),
} as const satisfies Record<string, ResourceType>;

/** The apiVersion string of a resource type. */
export function apiVersionOf(type: ResourceType): string {
  return type.group ? `${type.group}/${type.version}` : type.version;
}

/** Finds the resource type of an apiVersion and kind; undefined for kinds the operator does not know. */
export function resourceFor(apiVersion: string, kind: string): ResourceType | undefined {
  return Object.values(RESOURCES).find((r) => r.kind === kind && apiVersionOf(r) === apiVersion);
}
