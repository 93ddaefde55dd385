/**
 * KEDA's ServiceAccounts and RBAC, all cluster-scoped or in the served namespace: the operator
 * scales any workload, the metrics server serves external metrics to the HPA controller and
 * delegates authentication, the admission webhooks read what they validate.
 */
import type { KubeObject } from "../../api/object.ts";
import { KEDA_SERVICE_ACCOUNTS, kedaMeta, type KedaTarget } from "./names.ts";

const RBAC = "rbac.authorization.k8s.io/v1";
const READ = ["get", "list", "watch"];
const ALL = ["create", "delete", "get", "list", "patch", "update", "watch"];
const rule = (
  apiGroups: string[],
  resources: string[],
  verbs: string[],
  resourceNames?: string[],
) => ({
  apiGroups,
  resources,
  verbs,
  ...(resourceNames ? { resourceNames } : {}),
});

const KEDA_RESOURCES = [
  "scaledobjects",
  "scaledobjects/finalizers",
  "scaledobjects/status",
  "scaledjobs",
  "scaledjobs/finalizers",
  "scaledjobs/status",
  "triggerauthentications",
  "triggerauthentications/status",
  "clustertriggerauthentications",
  "clustertriggerauthentications/status",
];

const EVENTING_RESOURCES = [
  "cloudeventsources",
  "cloudeventsources/status",
  "clustercloudeventsources",
  "clustercloudeventsources/status",
];

function clusterRole(target: KedaTarget, name: string, rules: object[]): KubeObject {
  return { apiVersion: RBAC, kind: "ClusterRole", metadata: kedaMeta(target, name, false), rules };
}

function binding(
  target: KedaTarget,
  name: string,
  role: string,
  subject: { name: string; namespace: string },
): KubeObject {
  return {
    apiVersion: RBAC,
    kind: "ClusterRoleBinding",
    metadata: kedaMeta(target, name, false),
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
    subjects: [{ kind: "ServiceAccount", ...subject }],
  };
}

/**
 * KEDA's Role in the served namespace, as in its release manifest: the operator writes the
 * certificate Secret it generates (`kedaorg-certs`, which the metrics server and the webhooks
 * mount) and its leader-election Lease there.
 */
function namespacedRbac(target: KedaTarget): KubeObject[] {
  const name = "keda-operator";
  return [
    {
      apiVersion: RBAC,
      kind: "Role",
      metadata: kedaMeta(target, name, true),
      rules: [rule([""], ["secrets"], ALL), rule(["coordination.k8s.io"], ["leases"], ALL)],
    },
    {
      apiVersion: RBAC,
      kind: "RoleBinding",
      metadata: kedaMeta(target, name, true),
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name },
      subjects: [{
        kind: "ServiceAccount",
        name: KEDA_SERVICE_ACCOUNTS.operator,
        namespace: target.namespace,
      }],
    },
  ];
}

/** KEDA's ServiceAccounts, ClusterRoles, ClusterRoleBindings and its namespaced Role. */
export function kedaRbac(target: KedaTarget): KubeObject[] {
  const sa = (name: string) => ({ name, namespace: target.namespace });
  const accounts = Object.values(KEDA_SERVICE_ACCOUNTS).map((name): KubeObject => ({
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata: kedaMeta(target, name, true),
  }));
  return [
    ...accounts,
    clusterRole(target, "keda-operator", [
      rule([""], [
        "configmaps",
        "configmaps/status",
        "external",
        "limitranges",
        "pods",
        "secrets",
        "serviceaccounts",
        "services",
      ], READ),
      rule(["", "events.k8s.io"], ["events"], ["create", "patch"]),
      rule(["*"], ["*/scale"], ["get", "list", "patch", "update", "watch"]),
      rule(["*"], ["*"], ["get"]),
      rule(["apps"], ["deployments", "replicasets", "statefulsets"], ["list", "watch"]),
      rule(["discovery.k8s.io"], ["endpointslices"], READ),
      rule(["autoscaling"], ["horizontalpodautoscalers"], ALL),
      rule(["batch"], ["jobs"], ALL),
      rule(["keda.sh"], KEDA_RESOURCES, ["get", "list", "patch", "update", "watch"]),
      rule(["eventing.keda.sh"], EVENTING_RESOURCES, ["get", "list", "patch", "update", "watch"]),
      rule(["coordination.k8s.io"], ["leases"], ALL),
      rule(["admissionregistration.k8s.io"], ["validatingwebhookconfigurations"], [
        "get",
        "list",
        "patch",
        "update",
        "watch",
      ]),
      rule(["apiregistration.k8s.io"], ["apiservices"], [
        "get",
        "list",
        "patch",
        "update",
        "watch",
      ]),
    ]),
    clusterRole(target, "keda-operator-external-metrics-reader", [
      rule(["external.metrics.k8s.io"], ["externalmetrics"], READ),
    ]),
    clusterRole(target, "keda-operator-auth-reader", [
      rule([""], ["configmaps"], ["get"], ["extension-apiserver-authentication"]),
    ]),
    clusterRole(target, "keda-operator-webhook", [
      rule(["keda.sh"], [
        "scaledobjects",
        "scaledjobs",
        "triggerauthentications",
        "clustertriggerauthentications",
      ], READ),
      rule(["eventing.keda.sh"], ["cloudeventsources", "clustercloudeventsources"], READ),
      rule(["apps"], ["deployments", "statefulsets"], READ),
      rule([""], ["limitranges"], READ),
      rule(["autoscaling"], ["horizontalpodautoscalers"], READ),
    ]),
    binding(target, "keda-operator", "keda-operator", sa(KEDA_SERVICE_ACCOUNTS.operator)),
    binding(
      target,
      "keda-operator-metrics-server",
      "keda-operator",
      sa(KEDA_SERVICE_ACCOUNTS.metricServer),
    ),
    binding(
      target,
      "keda-operator-hpa-controller-external-metrics",
      "keda-operator-external-metrics-reader",
      { name: "horizontal-pod-autoscaler", namespace: "kube-system" },
    ),
    binding(
      target,
      "keda-operator-system-auth-delegator",
      "system:auth-delegator",
      sa(KEDA_SERVICE_ACCOUNTS.metricServer),
    ),
    binding(
      target,
      "keda-operator-auth-reader",
      "keda-operator-auth-reader",
      sa(KEDA_SERVICE_ACCOUNTS.metricServer),
    ),
    binding(
      target,
      "keda-operator-webhook",
      "keda-operator-webhook",
      sa(KEDA_SERVICE_ACCOUNTS.admissionWebhook),
    ),
    ...namespacedRbac(target),
  ];
}
