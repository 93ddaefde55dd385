/**
 * The operator's RBAC, in one place: for every resource type it knows (RESOURCES), the verbs it
 * uses and which part of the operator uses them (the operator itself, one of its controllers, the
 * global rate limit engine). deploy/'s roles are generated from this table (`deno task deploy`):
 * deploy/base/rbac.yaml the operator's own, and one kustomize component per controller
 * (deploy/ratelimit, deploy/scaler, deploy/serverless) with that controller's roles only; a test
 * fails when they differ or a type has no row, so each role grants what its code uses and no more.
 * No `escalate`, no `bind`, no wildcard: what a module's RBAC grants, the operator holds in a role
 * of that module's own (module_grants.ts), and get, patch and delete of the cluster-scoped objects
 * it installs are limited to their names.
 */
import { RESOURCES } from "../api/resources.ts";
import { SCALER_MODULE } from "../controllers/scaler.ts";
import { SERVERLESS_MODULE } from "../controllers/serverless.ts";
import { CONTROLLER_NAMES, type ControllerName } from "../controllers/registry.ts";
import { KEDA_CLUSTER_OBJECTS } from "../reconcile/scaler/names.ts";
import type { KubeObject, ResourceType } from "../api/object.ts";
import {
  MODULE_CONTROLLERS,
  type ModuleController,
  moduleGrants,
  moduleRbacNames,
  type PolicyRule,
} from "./module_grants.ts";

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

/**
 * Who needs a grant, and so which roles hold it: the operator itself whatever it serves
 * (deploy/base), one controller (its kustomize component deploy/<name>, its Helm value
 * modules.<name>.enabled), or the global rate limit engine (deploy/global-engine, with
 * `--global-redis-secret`).
 */
export type RbacPart = "operator" | ControllerName | "global-engine";

/** Every part, in the order its roles are written. */
export const RBAC_PARTS: readonly RbacPart[] = ["operator", ...CONTROLLER_NAMES, "global-engine"];

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
  /** The parts that use these verbs (a part using fewer: PART_ACCESS). */
  for: readonly RbacPart[];
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

/** Why a primary's verbs are what they are. */
const PRIMARY_WHY =
  "primary: watched; finalizer by JSON patch; status by apply; read back after a write that got no answer";

/** The module controllers: what they install they also hold (module_grants.ts). */
const MODULES: readonly RbacPart[] = MODULE_CONTROLLERS;

/** The verbs per kind of RESOURCES. Every kind has a row; an empty row means the operator never calls the API for it. */
export const ACCESS: Readonly<Record<string, Access>> = {
  Serverless: {
    verbs: ["get", ...CACHED, "patch"],
    status: ["patch"],
    finalizers: ["update"],
    for: ["serverless"],
    why: PRIMARY_WHY,
  },
  Scaler: {
    verbs: ["get", ...CACHED, "patch"],
    status: ["patch"],
    finalizers: ["update"],
    for: ["scaler"],
    why: PRIMARY_WHY,
  },
  RateLimit: {
    verbs: ["get", ...CACHED, "patch"],
    status: ["patch"],
    finalizers: ["update"],
    for: ["ratelimit"],
    why: PRIMARY_WHY,
  },
  EnvoyFilter: {
    verbs: INSTALLED,
    for: ["ratelimit"],
    why: "the rate limit filters the operator generates",
  },
  Namespace: { verbs: [], for: [], why: "not called" },
  Pod: {
    verbs: CACHED,
    for: ["ratelimit"],
    why: "the pods a RateLimit selects (conflicts between RateLimits)",
  },
  Service: { verbs: INSTALLED, for: MODULES, why: "module workloads" },
  ServiceAccount: { verbs: INSTALLED, for: MODULES, why: "module workloads" },
  ConfigMap: { verbs: INSTALLED, for: ["serverless"], why: "module configuration" },
  Secret: {
    verbs: CACHED,
    scope: "engine-namespace",
    for: ["global-engine"],
    why: "the Redis Secret of --global-redis-secret, watched in the engine's namespace only",
  },
  Event: {
    verbs: ["create", "get", "patch"],
    for: ["operator"],
    why:
      "Kubernetes Events about the reconciled objects; a repeat counted by patch (count, lastTimestamp), on the count read back after a restart",
  },
  Deployment: {
    verbs: INSTALLED,
    for: MODULES,
    why: "module workloads; their conditions are verified",
  },
  PodDisruptionBudget: {
    verbs: INSTALLED,
    scope: "engine-namespace",
    for: ["global-engine"],
    why: "the global rate limit engine's PodDisruptionBudget",
  },
  NetworkPolicy: {
    verbs: INSTALLED,
    scope: "engine-namespace",
    for: ["global-engine"],
    why: "the global rate limit engine's NetworkPolicy (its debug port for the operator only)",
  },
  Lease: {
    verbs: ["get", "list", "watch", "create", "update", "delete"],
    scope: "lease-namespace",
    for: ["operator"],
    why: "leader election; the module claims (watched, created, stale ones deleted)",
  },
  TokenReview: {
    verbs: ["create"],
    for: ["operator"],
    why: "/metrics: authenticates a scraper's bearer token",
  },
  SubjectAccessReview: {
    verbs: ["create"],
    for: ["operator"],
    why: "/metrics: may that scraper get /metrics",
  },
  ClusterRole: { verbs: INSTALLED, for: MODULES, why: "module RBAC (its rules: module_grants.ts)" },
  ClusterRoleBinding: { verbs: INSTALLED, for: MODULES, why: "module RBAC" },
  Role: { verbs: INSTALLED, for: MODULES, why: "module RBAC (its rules: module_grants.ts)" },
  RoleBinding: { verbs: INSTALLED, for: MODULES, why: "module RBAC" },
  CustomResourceDefinition: {
    verbs: INSTALLED,
    for: MODULES,
    why: "the modules' CRDs (Function, KEDA)",
  },
  APIService: { verbs: INSTALLED, for: ["scaler"], why: "KEDA's external metrics API" },
  ValidatingWebhookConfiguration: {
    verbs: INSTALLED,
    for: ["scaler"],
    why: "KEDA's admission webhook",
  },
  Function: {
    verbs: CACHED,
    for: ["serverless"],
    why: "user objects that block Serverless deletion",
  },
  ScaledObject: { verbs: CACHED, for: ["scaler"], why: "user objects that block Scaler deletion" },
  ScaledJob: { verbs: CACHED, for: ["scaler"], why: "user objects that block Scaler deletion" },
  TriggerAuthentication: {
    verbs: CACHED,
    for: ["scaler"],
    why: "user objects that block Scaler deletion",
  },
  ClusterTriggerAuthentication: {
    verbs: CACHED,
    for: ["scaler"],
    why: "user objects that block Scaler deletion",
  },
  CloudEventSource: {
    verbs: CACHED,
    for: ["scaler"],
    why: "user objects that block Scaler deletion",
  },
  ClusterCloudEventSource: {
    verbs: CACHED,
    for: ["scaler"],
    why: "user objects that block Scaler deletion",
  },
};

export type { PolicyRule };

/**
 * What a part uses of a type beyond the rows whose `for` names it: fewer verbs, or another scope.
 * The RateLimit controller only watches CRDs (is Istio's EnvoyFilter installed); the global
 * engine's controller installs its ServiceAccount, Deployment and Service in its namespace only.
 */
export const PART_ACCESS: Readonly<Partial<Record<RbacPart, Readonly<Record<string, Access>>>>> = {
  operator: {
    Pod: {
      verbs: ["get"],
      scope: "lease-namespace",
      for: ["operator"],
      why: "its own Pod, read on start: was its last container OOM-killed (src/cli/oom_restart.ts)",
    },
  },
  ratelimit: {
    CustomResourceDefinition: {
      verbs: CACHED,
      for: ["ratelimit"],
      why: "whether Istio's EnvoyFilter CRD is installed",
    },
  },
  "global-engine": Object.fromEntries(
    ["ServiceAccount", "Deployment", "Service"].map((kind) => [kind, {
      verbs: INSTALLED,
      scope: "engine-namespace",
      for: ["global-engine"],
      why: "the global rate limit engine's workload, in its namespace only",
    }]),
  ),
};

/** Verbs that name one object, so a rule can list the names (list, watch and create cannot). */
export const NAMED_VERBS: readonly Verb[] = ["get", "patch", "delete"];

/** The module controllers among `part` (none but itself for a module, none for other parts). */
function modulesOf(part?: RbacPart): readonly ModuleController[] {
  if (part === undefined) return MODULE_CONTROLLERS;
  return MODULE_CONTROLLERS.filter((m) => m === part);
}

/**
 * The names of the cluster-scoped objects the operator installs, by kind: its get, patch and
 * delete of these kinds are limited to them. Those `part` installs, or every part's.
 */
export function installedNames(part?: RbacPart): Readonly<Record<string, readonly string[]>> {
  const modules = modulesOf(part);
  if (modules.length === 0) return {};
  // The modules' user types are the kinds of the CRDs they install (tests/controllers).
  const kinds = { serverless: SERVERLESS_MODULE, scaler: SCALER_MODULE };
  const crds = modules.flatMap((m) => kinds[m].userTypes).map((t) => `${t.plural}.${t.group}`);
  return {
    CustomResourceDefinition: crds.sort(),
    ...(modules.includes("scaler")
      ? {
        APIService: [KEDA_CLUSTER_OBJECTS.apiService],
        ValidatingWebhookConfiguration: [KEDA_CLUSTER_OBJECTS.webhook],
      }
      : {}),
    ClusterRole: moduleRbacNames("ClusterRole", modules),
    ClusterRoleBinding: moduleRbacNames("ClusterRoleBinding", modules),
  };
}

/** The access of a resource type (every part's); throws when the table has no row for it. */
export function accessOf(type: ResourceType): Access {
  const row = ACCESS[type.kind];
  if (!row) {
    throw new Error(
      `src/kube/rbac.ts ACCESS has no row for ${type.kind}: add the verbs the operator uses`,
    );
  }
  return row;
}

/** What `part` uses of a resource type (undefined: nothing); with no part, every part's. */
export function partAccessOf(type: ResourceType, part?: RbacPart): Access | undefined {
  const row = accessOf(type);
  if (part === undefined || row.for.includes(part)) return row;
  return PART_ACCESS[part]?.[type.kind];
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
 * The rules of one scope, of one part or (without `part`) the whole operator's: one rule per API
 * group and verb set, resources sorted, so the YAML is stable and easy to review.
 */
export function rulesFor(
  scope: AccessScope,
  part?: RbacPart,
  types: readonly ResourceType[] = Object.values(RESOURCES),
  named: Readonly<Record<string, readonly string[]>> = installedNames(part),
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
    const access = partAccessOf(type, part);
    if (!access || (access.scope ?? "cluster") !== scope) continue;
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
  /** The operator's own ClusterRole; each controller's is this name and `-<controller>`. */
  clusterRole: string;
  leaseRole: string;
  /** The ClusterRole to bind a scraper of /metrics to (bound to nobody here). */
  metricsReader: string;
}

/** The defaults used in deploy/. */
export const DEFAULT_RBAC_NAMES: RbacNames = {
  namespace: "platform-system",
  serviceAccount: "platform-operator",
  clusterRole: "platform-operator",
  leaseRole: "platform-operator-leader-election",
  metricsReader: "platform-operator-metrics-reader",
};

/** The name of the operator's Role in the global rate limit engine's namespace. */
export const ENGINE_ROLE = "platform-operator-global-engine";

/** The name of the role (ClusterRole; the engine's: Role) holding `part`'s own rules. */
export function partRoleName(part: RbacPart, names: RbacNames = DEFAULT_RBAC_NAMES): string {
  if (part === "operator") return names.clusterRole;
  if (part === "global-engine") return ENGINE_ROLE;
  return `${names.clusterRole}-${part}`;
}

/**
 * The name of the ClusterRole, and of the Role in the module's namespace, holding what the RBAC
 * of `module` grants (module_grants.ts).
 */
export function grantsRoleName(
  module: ModuleController,
  names: RbacNames = DEFAULT_RBAC_NAMES,
): string {
  return `${names.clusterRole}-${module}-grants`;
}

/** The labels of the objects deploy/ installs for the operator itself. */
export const OPERATOR_OBJECT_LABELS: Readonly<Record<string, string>> = {
  "app.kubernetes.io/name": "platform-operator",
  "app.kubernetes.io/part-of": "platform-operator",
};

const RBAC_API = "rbac.authorization.k8s.io/v1";

/** A role of `kind` named `name` with `rules`, and its binding to the operator's ServiceAccount. */
function boundRole(
  kind: "ClusterRole" | "Role",
  name: string,
  rules: PolicyRule[],
  names: RbacNames,
  namespace?: string,
): KubeObject[] {
  const metadata = {
    name,
    ...(kind === "Role" ? { namespace: namespace ?? names.namespace } : {}),
    labels: { ...OPERATOR_OBJECT_LABELS },
  };
  return [
    { apiVersion: RBAC_API, kind, metadata, rules },
    {
      apiVersion: RBAC_API,
      kind: `${kind}Binding`,
      metadata,
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind, name },
      subjects: [{
        kind: "ServiceAccount",
        name: names.serviceAccount,
        namespace: names.namespace,
      }],
    },
  ];
}

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
  return boundRole("Role", name, rules, names, namespace);
}

/**
 * The operator's own roles, whatever it serves, and their bindings to its ServiceAccount: a
 * ClusterRole granting the `operator` rows of ACCESS (Events, the reviews of /metrics' readers), a
 * Role for its Leases; and, bound to nobody, the ClusterRole that lets a scraper read /metrics.
 */
export function operatorRbacObjects(names: RbacNames = DEFAULT_RBAC_NAMES): KubeObject[] {
  return [
    ...boundRole("ClusterRole", names.clusterRole, rulesFor("cluster", "operator"), names),
    ...boundRole("Role", names.leaseRole, rulesFor("lease-namespace", "operator"), names),
    // What the operator's SubjectAccessReview asks for a scraper (as kubebuilder's metrics-reader).
    {
      apiVersion: RBAC_API,
      kind: "ClusterRole",
      metadata: { name: names.metricsReader, labels: { ...OPERATOR_OBJECT_LABELS } },
      rules: [{ nonResourceURLs: ["/metrics"], verbs: ["get"] }],
    },
  ];
}

/**
 * One controller's roles and their bindings to the operator's ServiceAccount: a ClusterRole
 * granting its rows of ACCESS and, for a module, a ClusterRole and a Role (in the operator's
 * namespace, where the module is installed) holding what the module's RBAC grants.
 */
export function controllerRbacObjects(
  controller: ControllerName,
  names: RbacNames = DEFAULT_RBAC_NAMES,
): KubeObject[] {
  const own = boundRole(
    "ClusterRole",
    partRoleName(controller, names),
    rulesFor("cluster", controller),
    names,
  );
  const module = MODULE_CONTROLLERS.find((m) => m === controller);
  if (!module) return own;
  const grants = moduleGrants(names.namespace, [module]);
  const name = grantsRoleName(module, names);
  return [
    ...own,
    ...boundRole("ClusterRole", name, grants.cluster, names),
    ...(grants.namespaced.length > 0 ? boundRole("Role", name, grants.namespaced, names) : []),
  ];
}

/** The roles of an operator running `controllers` (default all): its own and theirs. */
export function rbacObjects(
  names: RbacNames = DEFAULT_RBAC_NAMES,
  controllers: readonly ControllerName[] = CONTROLLER_NAMES,
): KubeObject[] {
  return [
    ...operatorRbacObjects(names),
    ...controllers.flatMap((c) => controllerRbacObjects(c, names)),
  ];
}

/**
 * The module grants Roles and their bindings in `namespace`: what a cluster admin applies there
 * before a Serverless or Scaler is created in a namespace other than the operator's own (deploy/
 * has them for platform-system only).
 */
export function moduleGrantsRole(
  namespace: string,
  names: RbacNames = DEFAULT_RBAC_NAMES,
): KubeObject[] {
  return MODULE_CONTROLLERS.flatMap((m) =>
    controllerRbacObjects(m, { ...names, namespace })
      .filter((o) => o.metadata.name === grantsRoleName(m, names) && o.metadata.namespace)
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
      )
  );
}

/**
 * The Role in `namespace` (the engine's, GLOBAL_ENGINE_SERVICE's) granting the global engine's
 * part of ACCESS, and its binding to the operator's ServiceAccount (deploy/global-engine).
 */
export function engineRbacObjects(
  namespace: string,
  names: RbacNames = DEFAULT_RBAC_NAMES,
): KubeObject[] {
  return namespacedRole(
    ENGINE_ROLE,
    namespace,
    rulesFor("engine-namespace", "global-engine"),
    names,
  );
}
