/**
 * The operator's RBAC, in one place: for every resource type it knows (RESOURCES), the verbs it
 * uses. `deploy/rbac.yaml` is generated from this table (`deno task deploy`) and a test fails when
 * the two differ or a type has no row, so the ClusterRole grants what the code uses and no more.
 * No `escalate`, no `bind`, no wildcard: what the modules' RBAC grants, the operator holds in a
 * role of its own (module_grants.ts), and get, patch and delete of the cluster-scoped objects it
 * installs are limited to their names.
 */
import { RESOURCES } from "../api/resources.ts";
import { SCALER_MODULE } from "../controllers/scaler.ts";
import { SERVERLESS_MODULE } from "../controllers/serverless.ts";
import { KEDA_CLUSTER_OBJECTS } from "../reconcile/scaler/names.ts";
import type { KubeObject, ResourceType } from "../api/object.ts";
import { moduleGrants, moduleRbacNames, type PolicyRule } from "./module_grants.ts";

/** A Kubernetes RBAC verb the operator uses. */
export type Verb =
  | "get"
  | "list"
  | "watch"
  | "create"
  | "update"
  | "patch"
  | "delete";

/** Where a grant holds: cluster-wide, or in one namespace by a Role there. */
export type AccessScope = "cluster" | "lease-namespace" | "engine-namespace";

/** What the operator does with one resource type. */
export interface Access {
  /** Verbs on the resource itself. */
  verbs: readonly Verb[];
  /** Verbs on its `status` subresource (server-side apply of status is `patch`). */
  status?: readonly Verb[];
  /**
   * Verbs on its `finalizers` subresource: setting an ownerReference with blockOwnerDeletion on a
   * child needs `update` there when the OwnerReferencesPermissionEnforcement admission is on.
   */
  finalizers?: readonly Verb[];
  /**
   * `lease-namespace`: granted by a Role in the lease namespace only, not cluster-wide;
   * `engine-namespace`: by a Role in the global rate limit engine's namespace only
   * (deploy/global-engine), needed only with `--global-redis-secret`.
   */
  scope?: AccessScope;
  /** Why the operator needs it. */
  why: string;
}

/** Read through the watch cache: the initial list and the watch. */
const CACHED: readonly Verb[] = ["list", "watch"];
/**
 * Installed and pruned with server-side apply: `patch`, plus `create` because an apply that creates
 * the object is authorized as a create; `delete` to prune what is no longer rendered, after a `get`
 * when the type is not cached.
 */
const INSTALLED: readonly Verb[] = ["get", "list", "watch", "create", "patch", "delete"];

/** The verbs per kind of RESOURCES. Every kind has a row; an empty row means the operator never calls the API for it. */
export const ACCESS: Readonly<Record<string, Access>> = {
  Serverless: {
    verbs: [...CACHED, "patch"],
    status: ["patch"],
    finalizers: ["update"],
    why: "primary: watched; finalizer by JSON patch; status by apply",
  },
  Scaler: {
    verbs: [...CACHED, "patch"],
    status: ["patch"],
    finalizers: ["update"],
    why: "primary: watched; finalizer by JSON patch; status by apply",
  },
  RateLimit: {
    verbs: [...CACHED, "patch"],
    status: ["patch"],
    finalizers: ["update"],
    why: "primary: watched; finalizer by JSON patch; status by apply",
  },
  EnvoyFilter: { verbs: INSTALLED, why: "the rate limit filters the operator generates" },
  Namespace: { verbs: [], why: "not called" },
  Pod: { verbs: CACHED, why: "the pods a RateLimit selects (conflicts between RateLimits)" },
  Service: { verbs: INSTALLED, why: "module workloads" },
  ServiceAccount: { verbs: INSTALLED, why: "module workloads" },
  ConfigMap: { verbs: INSTALLED, why: "module configuration" },
  Secret: {
    verbs: CACHED,
    scope: "engine-namespace",
    why: "the Redis Secret of --global-redis-secret, watched in the engine's namespace only",
  },
  Event: { verbs: ["create"], why: "Kubernetes Events about the reconciled objects" },
  Deployment: { verbs: INSTALLED, why: "module workloads; their conditions are verified" },
  PodDisruptionBudget: {
    verbs: INSTALLED,
    scope: "engine-namespace",
    why: "the global rate limit engine's PodDisruptionBudget",
  },
  NetworkPolicy: {
    verbs: INSTALLED,
    scope: "engine-namespace",
    why: "the global rate limit engine's NetworkPolicy (its debug port for the operator only)",
  },
  Lease: {
    verbs: ["get", "list", "watch", "create", "update", "delete"],
    scope: "lease-namespace",
    why: "leader election; the module claims (watched, created, stale ones deleted)",
  },
  TokenReview: { verbs: ["create"], why: "/metrics: authenticates a scraper's bearer token" },
  SubjectAccessReview: { verbs: ["create"], why: "/metrics: may that scraper get /metrics" },
  ClusterRole: { verbs: INSTALLED, why: "module RBAC (its rules: module_grants.ts)" },
  ClusterRoleBinding: { verbs: INSTALLED, why: "module RBAC" },
  Role: { verbs: INSTALLED, why: "module RBAC (its rules: module_grants.ts)" },
  RoleBinding: { verbs: INSTALLED, why: "module RBAC" },
  CustomResourceDefinition: { verbs: INSTALLED, why: "the modules' CRDs (Function, KEDA)" },
  APIService: { verbs: INSTALLED, why: "KEDA's external metrics API" },
  ValidatingWebhookConfiguration: { verbs: INSTALLED, why: "KEDA's admission webhook" },
  Function: { verbs: CACHED, why: "user objects that block Serverless deletion" },
  ScaledObject: { verbs: CACHED, why: "user objects that block Scaler deletion" },
  ScaledJob: { verbs: CACHED, why: "user objects that block Scaler deletion" },
  TriggerAuthentication: { verbs: CACHED, why: "user objects that block Scaler deletion" },
  ClusterTriggerAuthentication: { verbs: CACHED, why: "user objects that block Scaler deletion" },
  CloudEventSource: { verbs: CACHED, why: "user objects that block Scaler deletion" },
  ClusterCloudEventSource: { verbs: CACHED, why: "user objects that block Scaler deletion" },
};

export type { PolicyRule };

/** Verbs that name one object, so a rule can list the names (list, watch and create cannot). */
export const NAMED_VERBS: readonly Verb[] = ["get", "patch", "delete"];

/**
 * The names of the cluster-scoped objects the operator installs, by kind: its get, patch and
 * delete of these kinds are limited to them.
 */
export function installedNames(): Readonly<Record<string, readonly string[]>> {
  // The modules' user types are the kinds of the CRDs they install (tests/controllers).
  const crds = [...SERVERLESS_MODULE.userTypes, ...SCALER_MODULE.userTypes]
    .map((t) => `${t.plural}.${t.group}`);
  return {
    CustomResourceDefinition: crds.sort(),
    APIService: [KEDA_CLUSTER_OBJECTS.apiService],
    ValidatingWebhookConfiguration: [KEDA_CLUSTER_OBJECTS.webhook],
    ClusterRole: moduleRbacNames("ClusterRole"),
    ClusterRoleBinding: moduleRbacNames("ClusterRoleBinding"),
  };
}

/** The access of a resource type; throws when the table has no row for it. */
export function accessOf(type: ResourceType): Access {
  const row = ACCESS[type.kind];
  if (!row) {
    throw new Error(
      `src/kube/rbac.ts ACCESS has no row for ${type.kind}: add the verbs the operator uses`,
    );
  }
  return row;
}

const VERB_ORDER: readonly Verb[] = [
  "get",
  "list",
  "watch",
  "create",
  "update",
  "patch",
  "delete",
];

/**
 * The rules of one scope: one rule per API group and verb set, resources sorted, so the YAML is
 * stable and easy to review.
 */
export function rulesFor(
  scope: AccessScope,
  types: readonly ResourceType[] = Object.values(RESOURCES),
  named: Readonly<Record<string, readonly string[]>> = installedNames(),
): PolicyRule[] {
  const grouped = new Map<string, PolicyRule>();
  const add = (
    group: string,
    resource: string,
    verbs: readonly Verb[],
    names?: readonly string[],
  ) => {
    if (verbs.length === 0) return;
    const sorted = VERB_ORDER.filter((v) => verbs.includes(v));
    const key = `${group}|${sorted.join(",")}|${names?.join(",") ?? ""}`;
    const rule: PolicyRule = grouped.get(key) ??
      {
        apiGroups: [group],
        resources: [],
        verbs: [...sorted],
        ...(names ? { resourceNames: [...names] } : {}),
      };
    rule.resources.push(resource);
    grouped.set(key, rule);
  };
  for (const type of types) {
    const access = accessOf(type);
    if ((access.scope ?? "cluster") !== scope) continue;
    const names = named[type.kind];
    if (names) {
      add(type.group, type.plural, access.verbs.filter((v) => !NAMED_VERBS.includes(v)));
      add(type.group, type.plural, access.verbs.filter((v) => NAMED_VERBS.includes(v)), names);
    } else add(type.group, type.plural, access.verbs);
    add(type.group, `${type.plural}/status`, access.status ?? []);
    add(type.group, `${type.plural}/finalizers`, access.finalizers ?? []);
  }
  const rules = [...grouped.values()];
  rules.forEach((r) => r.resources.sort());
  const key = (r: PolicyRule) =>
    `${r.apiGroups[0]}|${r.resources[0]}|${r.resourceNames ? "1" : "0"}`;
  return rules.sort((a, b) => key(a).localeCompare(key(b)));
}

/** Names of the operator's RBAC objects. */
export interface RbacNames {
  namespace: string;
  serviceAccount: string;
  clusterRole: string;
  leaseRole: string;
  /** The ClusterRole and Role holding what the modules' RBAC grants (module_grants.ts). */
  grantsRole: string;
  /** The ClusterRole to bind a scraper of /metrics to (bound to nobody here). */
  metricsReader: string;
}

/** The defaults used in deploy/. */
export const DEFAULT_RBAC_NAMES: RbacNames = {
  namespace: "platform-system",
  serviceAccount: "platform-operator",
  clusterRole: "platform-operator",
  leaseRole: "platform-operator-leader-election",
  grantsRole: "platform-operator-module-grants",
  metricsReader: "platform-operator-metrics-reader",
};

/** The labels of the objects deploy/ installs for the operator itself. */
export const OPERATOR_OBJECT_LABELS: Readonly<Record<string, string>> = {
  "app.kubernetes.io/name": "platform-operator",
  "app.kubernetes.io/part-of": "platform-operator",
};

/**
 * A Role `name` in `namespace` with `rules`, and its binding to the operator's ServiceAccount: what
 * an optional component grants the operator in one namespace (istiod's, the engine's).
 */
export function namespacedRole(
  name: string,
  namespace: string,
  rules: PolicyRule[],
  names: RbacNames = DEFAULT_RBAC_NAMES,
): KubeObject[] {
  const rbac = "rbac.authorization.k8s.io/v1";
  const metadata = { name, namespace, labels: { ...OPERATOR_OBJECT_LABELS } };
  return [
    { apiVersion: rbac, kind: "Role", metadata, rules },
    {
      apiVersion: rbac,
      kind: "RoleBinding",
      metadata,
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name },
      subjects: [{
        kind: "ServiceAccount",
        name: names.serviceAccount,
        namespace: names.namespace,
      }],
    },
  ];
}

/**
 * The operator's roles and their bindings to its ServiceAccount: a ClusterRole granting exactly
 * ACCESS, a Role for its Leases, and a ClusterRole and a Role holding what the modules' RBAC
 * grants (installed into the operator's namespace); and, bound to nobody, the ClusterRole that lets
 * a scraper read /metrics.
 */
export function rbacObjects(names: RbacNames = DEFAULT_RBAC_NAMES): KubeObject[] {
  const labels = { ...OPERATOR_OBJECT_LABELS };
  const subjects = [{
    kind: "ServiceAccount",
    name: names.serviceAccount,
    namespace: names.namespace,
  }];
  const rbac = "rbac.authorization.k8s.io/v1";
  const grants = moduleGrants(names.namespace);
  const role = (kind: "ClusterRole" | "Role", name: string, rules: PolicyRule[]) => {
    const namespace = kind === "Role" ? { namespace: names.namespace } : {};
    const roleRef = { apiGroup: "rbac.authorization.k8s.io", kind, name };
    return [
      { apiVersion: rbac, kind, metadata: { name, ...namespace, labels }, rules },
      {
        apiVersion: rbac,
        kind: `${kind}Binding`,
        metadata: { name, ...namespace, labels },
        roleRef,
        subjects,
      },
    ];
  };
  return [
    ...role("ClusterRole", names.clusterRole, rulesFor("cluster")),
    ...role("ClusterRole", names.grantsRole, grants.cluster),
    ...role("Role", names.leaseRole, rulesFor("lease-namespace")),
    ...role("Role", names.grantsRole, grants.namespaced),
    // What the operator's SubjectAccessReview asks for a scraper (as kubebuilder's metrics-reader).
    {
      apiVersion: rbac,
      kind: "ClusterRole",
      metadata: { name: names.metricsReader, labels },
      rules: [{ nonResourceURLs: ["/metrics"], verbs: ["get"] }],
    },
  ];
}

/**
 * The module grants Role and its binding in `namespace`: what a cluster admin applies there before
 * a Serverless or Scaler is created in a namespace other than the operator's own (deploy/ has it
 * for platform-system only).
 */
export function moduleGrantsRole(
  namespace: string,
  names: RbacNames = DEFAULT_RBAC_NAMES,
): KubeObject[] {
  return rbacObjects({ ...names, namespace })
    .filter((o) => o.metadata.name === names.grantsRole && o.metadata.namespace)
    .map((o) =>
      o.kind === "RoleBinding"
        ? {
          ...o,
          subjects: [{
            kind: "ServiceAccount",
            name: names.serviceAccount,
            namespace: names.namespace,
          }],
        }
        : o
    );
}

/** The name of the operator's Role in the global rate limit engine's namespace. */
export const ENGINE_ROLE = "platform-operator-global-engine";

/**
 * The Role in `namespace` (the engine's, GLOBAL_ENGINE_SERVICE's) granting the `engine-namespace`
 * rows of ACCESS, and its binding to the operator's ServiceAccount (deploy/global-engine).
 */
export function engineRbacObjects(
  namespace: string,
  names: RbacNames = DEFAULT_RBAC_NAMES,
): KubeObject[] {
  return namespacedRole(ENGINE_ROLE, namespace, rulesFor("engine-namespace"), names);
}
