/**
 * Startup checks, so that a missing CRD, a missing RBAC grant or an unreachable API server shows as
 * one log line saying what to do (and a retry), not as a loop of stack traces. Works on any
 * Cluster; RBAC is asked with rules and access reviews (self_access.ts), which every
 * authenticated user may create.
 */
import { ApiError, type Cluster, inParallel, isApiError } from "../runtime/mod.ts";
import { resourceName, type ResourceType } from "../api/object.ts";
import { GATEWAY_GROUP, OPERATOR_GROUP } from "../api/groups.ts";
import { ENGINE_ROLE, type Verb } from "./rbac.ts";
import { type AccessCheck, partChecks, reviewAccess } from "./self_access.ts";
import { GLOBAL_ENGINE_SERVICE } from "../api/global_engine.ts";
import type { ListAnswer } from "./first_lists.ts";

/** What kind of problem a check found. */
export type ProblemKind = "unreachable" | "unauthorized" | "crd-missing" | "forbidden" | "error";

/** One problem: a single log line's worth, ending in what to do. */
export interface Problem {
  kind: ProblemKind;
  message: string;
  /** Everything behind a shortened message (e.g. every forbidden verb), for a log field. */
  details?: string[];
}

/** A type to check, as the controllers declare it. */
export interface CheckedType {
  type: ResourceType;
  /** Its CRD may be missing (the operator installs it later): absence is not a problem. */
  optional?: boolean;
}

/** What to check. */
export interface PreflightOptions {
  /** The types the enabled controllers watch (primaries included). */
  types: readonly CheckedType[];
  /** Types the operator writes without watching them (Event, Lease): only their access is checked. */
  alsoUses?: readonly ResourceType[];
  /** The namespace of the leader election Lease; omit without leader election. */
  leaseNamespace?: string;
  /** Where the API server is and where credentials came from, for messages. */
  server: string;
  source: string;
  /** Groups whose CRDs this project ships in deploy/. */
  ownGroups?: readonly string[];
  /**
   * How a list of a type was answered already (first_lists.ts): a type with an answer is not
   * probed again. Undefined for a type that has none.
   */
  listed?: (type: ResourceType) => ListAnswer | undefined;
  /**
   * Access the operator needs beyond its ClusterRole's table (rbac.ts), each with what grants it
   * (say, list and watch of istiod's EndpointSlices: a Role in istiod's namespace).
   */
  alsoChecks?: readonly { check: AccessCheck; grantedBy: string }[];
  /**
   * When given, the access to check instead of the table's rows of `types` and `alsoUses`, and
   * the problem their denial makes (run_checks.ts: each enabled controller's roles).
   */
  access?: {
    checks: readonly AccessCheck[];
    forbidden: (denied: readonly AccessCheck[]) => Problem;
  };
  /** List probes in flight at once, and access reviews (self_access.ts); default 16 each. */
  parallel?: number;
}

const OWN_GROUPS = [OPERATOR_GROUP, GATEWAY_GROUP];
const INSTALL = "run kubectl apply -k deploy/";

function crdHint(type: ResourceType, ownGroups: readonly string[]): string {
  if (ownGroups.includes(type.group)) return INSTALL;
  if (type.group === "networking.istio.io") {
    return "install Istio, or run without the ratelimit controller (--controllers)";
  }
  return "install the component that provides it, or run without the controller that needs it (--controllers)";
}

function accessChecks(types: readonly ResourceType[], leaseNamespace?: string): AccessCheck[] {
  return partChecks(undefined, types, {
    "lease-namespace": leaseNamespace,
    "engine-namespace": GLOBAL_ENGINE_SERVICE.namespace,
  });
}

function connectionProblem(err: ApiError, opts: PreflightOptions): Problem | undefined {
  if (err.code === 0) {
    return {
      kind: "unreachable",
      message: `cannot reach the API server ${opts.server} (${opts.source}): ${err.message}: ` +
        "check the address and the network, or pass --kubeconfig/--context",
    };
  }
  if (err.code === 401) {
    return {
      kind: "unauthorized",
      message: `the API server ${opts.server} rejected the credentials of ${opts.source} (401): ` +
        "refresh the kubeconfig, or check the service account token",
    };
  }
  return undefined;
}

/**
 * Runs the checks and returns the problems, at most one per kind, each naming everything of that
 * kind. Empty means the operator can start.
 */
export async function preflight(cluster: Cluster, opts: PreflightOptions): Promise<Problem[]> {
  const ownGroups = opts.ownGroups ?? OWN_GROUPS;
  const missing: ResourceType[] = [];
  const errors: string[] = [];
  const parallel = opts.parallel ?? 16;
  const types = uniqueChecked(opts.types);
  // The probes and the access reviews go out at once: a start-up waits for the slowest request,
  // not for the probes and then the reviews. A type found missing has its reviews dropped after.
  const reviewed = unique([...types.map((t) => t.type), ...(opts.alsoUses ?? [])]);
  const extra = opts.alsoChecks ?? [];
  const table = opts.access?.checks ?? accessChecks(reviewed, opts.leaseNamespace);
  const allChecks = [...table, ...extra.map((e) => e.check)];
  const probe = ({ type }: CheckedType) =>
    opts.listed?.(type) ??
      cluster.list(type, { limit: 1 }).then(() => undefined, (err: unknown) => err);
  const [listed, access] = await Promise.all([
    inParallel(types, parallel, probe),
    reviewAccess(cluster, allChecks, parallel),
  ]);
  const reviewErrors: (string | undefined)[] = [];
  const reviews = access.map((a, i) => {
    if ("allowed" in a) return a.allowed;
    if (!isApiError(a.error)) throw a.error;
    const c = allChecks[i];
    reviewErrors[i] = `access review of ${c.verb} ${
      resourceName(c.type, c.subresource)
    }: ${a.error.code} ${a.error.message}`;
    return true; // Unknown is not "denied"; the error is reported instead.
  });
  for (const [i, { type, optional }] of types.entries()) {
    const err = listed[i];
    if (err === undefined) continue;
    if (!(err instanceof ApiError)) throw err;
    const fatal = connectionProblem(err, opts);
    if (fatal) return [fatal];
    if (err.code === 404 && !optional) missing.push(type);
    else if (err.code !== 404 && err.code !== 403) {
      errors.push(`list ${resourceName(type)}: ${err.code} ${err.message}`);
    }
  }
  const problems: Problem[] = [];
  if (missing.length > 0) {
    const hints = [...new Set(missing.map((t) => crdHint(t, ownGroups)))];
    const names = missing.map((t) => resourceName(t)).join(", ");
    const verb = missing.length === 1 ? "is" : "are";
    problems.push({
      kind: "crd-missing",
      message: `CRD ${names} ${verb} not installed: ${hints.join("; ")}`,
    });
  }
  // A type both watched and used (Lease) stays reviewed: only a watched type's CRD can be missing.
  const dropped = new Set(missing.map((t) => resourceName(t)));
  (opts.alsoUses ?? []).forEach((t) => dropped.delete(resourceName(t)));
  const kept = allChecks.map((c) => !dropped.has(resourceName(c.type)));
  errors.push(...reviewErrors.filter((e, i): e is string => e !== undefined && kept[i]));
  const denied = allChecks.filter((_, i) => kept[i] && !reviews[i]);
  if (denied.length > 0 && opts.access) problems.push(opts.access.forbidden(denied));
  else if (denied.length > 0) {
    const first = allChecks.length - extra.length;
    const grants = extra.filter((_, k) => kept[first + k] && !reviews[first + k]).map((e) =>
      e.grantedBy
    );
    // The table's checks in the engine's namespace are granted by deploy/global-engine's Role.
    const fromTable = allChecks.slice(0, first).filter((_, i) => kept[i] && !reviews[i]);
    const engine = fromTable.filter((c) => c.namespace === GLOBAL_ENGINE_SERVICE.namespace);
    if (engine.length > 0) {
      grants.push(
        `apply deploy/global-engine's Role ${ENGINE_ROLE} in namespace ${GLOBAL_ENGINE_SERVICE.namespace} (docs/operations.md, The global rate limit engine)`,
      );
    }
    problems.push(
      forbiddenProblem(denied, fromTable.length > engine.length, [...new Set(grants)]),
    );
  }
  if (errors.length > 0) {
    problems.push({ kind: "error", message: `checks failed: ${errors.join("; ")}` });
  }
  return problems;
}

/** The checked types, each once; a type any controller needs is not optional. */
function uniqueChecked(types: readonly CheckedType[]): CheckedType[] {
  const byName = new Map<string, CheckedType>();
  for (const t of types) {
    const key = resourceName(t.type);
    const seen = byName.get(key);
    byName.set(key, seen && !(seen.optional && t.optional) ? { type: seen.type } : t);
  }
  return [...byName.values()];
}

function unique(types: ResourceType[]): ResourceType[] {
  const seen = new Set<string>();
  return types.filter((t) => {
    const key = resourceName(t);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Denied verbs named in the message itself; the rest go to `details`. */
const LISTED = 4;

/** Denied checks as `verbs resource[ in namespace N]`, one entry per resource. */
export function deniedText(denied: readonly AccessCheck[]): string[] {
  const byResource = new Map<string, Verb[]>();
  for (const c of denied) {
    const where = c.namespace ? ` in namespace ${c.namespace}` : "";
    const key = `${resourceName(c.type, c.subresource)}${where}`;
    const verbs = byResource.get(key) ?? [];
    if (!verbs.includes(c.verb)) verbs.push(c.verb);
    byResource.set(key, verbs);
  }
  return [...byResource].map(([res, verbs]) => `${verbs.join(",")} ${res}`);
}

/** The message naming the first denied resources, the rest in details, and then `fixes`. */
export function forbiddenMessage(all: readonly string[], fixes: readonly string[]): Problem {
  const more = all.length > LISTED ? ` and ${all.length - LISTED} more resources` : "";
  const message = `RBAC forbids the operator to ${all.slice(0, LISTED).join("; ")}${more}: ${
    fixes.join("; ")
  }`;
  return { kind: "forbidden", message, details: [...all] };
}

function forbiddenProblem(denied: AccessCheck[], table: boolean, grants: string[]): Problem {
  const fixes = [
    ...(table
      ? [
        `${INSTALL} (ClusterRole platform-operator), and with --lease-namespace outside platform-system grant the leases Role there too`,
      ]
      : []),
    ...grants,
  ];
  return forbiddenMessage(deniedText(denied), fixes);
}
