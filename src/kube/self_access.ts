/**
 * Whether the operator may do what it needs, asked the cheap way first. One SelfSubjectRulesReview
 * per scope lists the rules that apply; a check those rules cover is allowed. Only checks they do
 * not cover, or all of a scope whose rules the server cannot list completely (a webhook authorizer,
 * which may also deny what RBAC allows), are asked one by one with SelfSubjectAccessReviews. With
 * deploy/'s RBAC that is 2 requests at start-up instead of one per verb and resource (110), which
 * competed with the first lists for the API server and for this process.
 */
import type { ResourceType } from "../api/object.ts";
import { type Cluster, inParallel, isApiError } from "../runtime/mod.ts";
import {
  type AccessScope,
  installedNames,
  NAMED_VERBS,
  partAccessOf,
  type RbacPart,
  type Verb,
} from "./rbac.ts";

/** SelfSubjectAccessReview: not in RESOURCES because it needs no grant (system:basic-user allows it). */
export const SELF_SUBJECT_ACCESS_REVIEW: ResourceType = {
  group: "authorization.k8s.io",
  version: "v1",
  kind: "SelfSubjectAccessReview",
  plural: "selfsubjectaccessreviews",
  namespaced: false,
};

/** SelfSubjectRulesReview: like SELF_SUBJECT_ACCESS_REVIEW, allowed to every authenticated user. */
export const SELF_SUBJECT_RULES_REVIEW: ResourceType = {
  group: "authorization.k8s.io",
  version: "v1",
  kind: "SelfSubjectRulesReview",
  plural: "selfsubjectrulesreviews",
  namespaced: false,
};

/**
 * The namespace a rules review names to get the cluster-wide rules alone. A rules review needs a
 * namespace and adds that namespace's RoleBindings to the cluster's; this name is not a valid
 * namespace name (it has a dot), so no RoleBinding can be in it.
 */
export const CLUSTER_SCOPE_NAMESPACE = "platform-operator.cluster-scope";

/** One access check: a verb on a resource (and subresource), cluster-wide or in a namespace. */
export interface AccessCheck {
  type: ResourceType;
  verb: Verb;
  subresource?: string;
  namespace?: string;
  /** For verbs granted by name only: one of the names (any one shows the rule is there). */
  name?: string;
}

/** A rule as a rules review lists it (rbac/v1 PolicyRule's resource part). */
export interface ResourceRule {
  verbs: readonly string[];
  apiGroups?: readonly string[];
  resources?: readonly string[];
  resourceNames?: readonly string[];
}

/** One check's answer: allowed or not, or the error that left it unknown. */
export type AccessAnswer = { allowed: boolean } | { error: unknown };

/** True when `rule` allows `check`, as Kubernetes' RBAC matches a rule (rbac/v1 RuleAllows). */
export function ruleAllows(rule: ResourceRule, check: AccessCheck): boolean {
  const any = (list: readonly string[] | undefined, value: string) =>
    (list ?? []).some((v) => v === "*" || v === value);
  if (!any(rule.verbs, check.verb) || !any(rule.apiGroups, check.type.group)) return false;
  const sub = check.subresource;
  const combined = sub ? `${check.type.plural}/${sub}` : check.type.plural;
  const resource = (rule.resources ?? []).some((r) =>
    r === "*" || r === combined || (sub !== undefined && r === `*/${sub}`)
  );
  if (!resource) return false;
  const names = rule.resourceNames ?? [];
  return names.length === 0 || (check.name !== undefined && names.includes(check.name));
}

/** The rules a rules review answered, or undefined when they cannot decide anything alone. */
function completeRules(review: unknown): readonly ResourceRule[] | undefined {
  const status = (review as { status?: { incomplete?: unknown; resourceRules?: unknown } })
    ?.status;
  if (!status || status.incomplete !== false || !Array.isArray(status.resourceRules)) {
    return undefined;
  }
  return status.resourceRules as ResourceRule[];
}

async function rulesIn(cluster: Cluster, namespace: string) {
  try {
    return completeRules(
      await cluster.create(SELF_SUBJECT_RULES_REVIEW, {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SelfSubjectRulesReview",
        metadata: { name: "" },
        spec: { namespace },
      }),
    );
  } catch (err) {
    // An API server without rules reviews, or one refusing them: each check is asked instead.
    if (isApiError(err)) return undefined;
    throw err;
  }
}

async function accessReview(cluster: Cluster, check: AccessCheck): Promise<AccessAnswer> {
  try {
    const review = await cluster.create(SELF_SUBJECT_ACCESS_REVIEW, {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SelfSubjectAccessReview",
      metadata: { name: "" },
      spec: {
        resourceAttributes: {
          group: check.type.group,
          resource: check.type.plural,
          verb: check.verb,
          ...(check.subresource ? { subresource: check.subresource } : {}),
          ...(check.namespace ? { namespace: check.namespace } : {}),
          ...(check.name ? { name: check.name } : {}),
        },
      },
    });
    return { allowed: (review.status as { allowed?: boolean } | undefined)?.allowed === true };
  } catch (error) {
    return { error };
  }
}

/**
 * Answers every check, each at its index: one rules review per scope (the cluster, each
 * namespace named), then an access review for each check left undecided, `parallel` at a time.
 */
export async function reviewAccess(
  cluster: Cluster,
  checks: readonly AccessCheck[],
  parallel: number,
): Promise<AccessAnswer[]> {
  const scopes = [...new Set(checks.map((c) => c.namespace ?? CLUSTER_SCOPE_NAMESPACE))];
  const rules = new Map(
    await Promise.all(scopes.map(async (ns) => [ns, await rulesIn(cluster, ns)] as const)),
  );
  const answers: (AccessAnswer | undefined)[] = checks.map((c) =>
    rules.get(c.namespace ?? CLUSTER_SCOPE_NAMESPACE)?.some((r) => ruleAllows(r, c))
      ? { allowed: true }
      : undefined
  );
  // Not covered by complete rules is denied; asked anyway, so that no reading of rules here can
  // report a grant as missing.
  const open = answers.flatMap((a, i) => a ? [] : [i]);
  const asked = await inParallel(open, parallel, (i) => accessReview(cluster, checks[i]));
  open.forEach((i, k) => answers[i] = asked[k]);
  return answers as AccessAnswer[];
}

/**
 * The checks of what `part` (without: the whole operator) does with `types` (its rows of
 * ACCESS), each where its scope holds:
 * cluster-wide, or in the namespace `namespaces` gives the scope (a scope without one is not
 * checked: no leader election, no Lease). A named verb is checked on one of the part's names.
 */
export function partChecks(
  part: RbacPart | undefined,
  types: readonly ResourceType[],
  namespaces: Partial<Record<AccessScope, string>>,
): AccessCheck[] {
  const named = installedNames(part);
  return types.flatMap((type) => {
    const access = partAccessOf(type, part);
    if (!access) return [];
    const scope = access.scope ?? "cluster";
    const namespace = scope === "cluster" ? undefined : namespaces[scope];
    if (scope !== "cluster" && !namespace) return [];
    const where = namespace ? { namespace } : {};
    return [
      ...access.verbs.map((verb): AccessCheck => {
        const name = NAMED_VERBS.includes(verb) ? named[type.kind]?.[0] : undefined;
        return { type, verb, ...where, ...(name ? { name } : {}) };
      }),
      ...(access.status ?? []).map((verb) => ({ type, verb, subresource: "status", ...where })),
      ...(access.finalizers ?? []).map((verb) => ({
        type,
        verb,
        subresource: "finalizers",
        ...where,
      })),
    ];
  });
}
