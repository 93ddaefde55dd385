/**
 * What the operator grants when it installs the modules, so that it can hold exactly that instead
 * of `escalate` and `bind`. Kubernetes lets a user create or change a Role or ClusterRole only with
 * rules it holds itself, and bind one only when it holds its rules, unless it has `escalate` or
 * `bind`; with those it could grant itself anything. So the rules are read from the modules' own
 * renderers (one source: what is installed is what is held) and granted to the operator in a role
 * of their own, apart from what its own code uses (src/kube/rbac.ts).
 */
import type { KubeObject } from "../api/object.ts";
import { kedaRbac } from "../reconcile/scaler/rbac.ts";
import { serverlessRbac } from "../reconcile/serverless/render.ts";

/** One RBAC PolicyRule. */
export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

/**
 * Built-in ClusterRoles a module binds without installing them: binding one needs its rules.
 * `system:auth-delegator` (KEDA's metrics server delegates authentication and authorization).
 */
export const BUILT_IN_ROLES: Readonly<Record<string, readonly PolicyRule[]>> = {
  "system:auth-delegator": [
    { apiGroups: ["authentication.k8s.io"], resources: ["tokenreviews"], verbs: ["create"] },
    {
      apiGroups: ["authorization.k8s.io"],
      resources: ["subjectaccessreviews"],
      verbs: ["create"],
    },
  ],
};

/** The operator's controllers that install a module, and so must hold what its RBAC grants. */
export type ModuleController = "serverless" | "scaler";

/** The module controllers, in the order the operator starts them. */
export const MODULE_CONTROLLERS: readonly ModuleController[] = ["serverless", "scaler"];

/**
 * The modules' RBAC objects as installed into `namespace` (the operator's own): those of
 * `modules` (default both).
 */
export function moduleRbac(
  namespace: string,
  modules: readonly ModuleController[] = MODULE_CONTROLLERS,
): KubeObject[] {
  const owner = "rbac";
  return [
    ...(modules.includes("serverless") ? serverlessRbac({ namespace, owner }) : []),
    ...(modules.includes("scaler") ? kedaRbac({ namespace, owner }) : []),
  ];
}

function rulesOf(o: KubeObject): PolicyRule[] {
  return ((o as KubeObject & { rules?: PolicyRule[] }).rules ?? []).map((r) => ({
    apiGroups: [...r.apiGroups],
    resources: [...r.resources],
    verbs: [...r.verbs].sort(),
    ...(r.resourceNames ? { resourceNames: [...r.resourceNames] } : {}),
  }));
}

/** Rules without repeats, in a stable order. */
function distinct(rules: PolicyRule[]): PolicyRule[] {
  const byKey = new Map(rules.map((r) => [JSON.stringify(r), r]));
  return [...byKey.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, r]) => r);
}

/** The rules the operator must hold to install `modules` (default both) into `namespace`. */
export function moduleGrants(
  namespace: string,
  modules: readonly ModuleController[] = MODULE_CONTROLLERS,
): { cluster: PolicyRule[]; namespaced: PolicyRule[] } {
  const objects = moduleRbac(namespace, modules);
  const cluster = objects.filter((o) => o.kind === "ClusterRole").flatMap(rulesOf);
  const bound = objects.filter((o) => o.kind === "ClusterRoleBinding")
    .map((o) => (o as KubeObject & { roleRef: { name: string } }).roleRef.name);
  for (const name of bound) cluster.push(...BUILT_IN_ROLES[name] ?? []);
  const namespaced = objects.filter((o) => o.kind === "Role").flatMap(rulesOf);
  return { cluster: distinct(cluster), namespaced: distinct(namespaced) };
}

/** Names of the cluster-scoped objects of `kind` the RBAC of `modules` (default both) installs. */
export function moduleRbacNames(
  kind: "ClusterRole" | "ClusterRoleBinding",
  modules: readonly ModuleController[] = MODULE_CONTROLLERS,
): string[] {
  return moduleRbac("any", modules).filter((o) => o.kind === kind).map((o) => o.metadata.name)
    .sort();
}
