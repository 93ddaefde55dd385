/**
 * Is what the operator wants observed in the cluster? The desired-subset test used to skip writes
 * already done, and the readiness of Deployments (docs/design.md "Verification").
 */
import type { KubeObject } from "../api/object.ts";
import { compareQuantities, parseQuantity } from "./keda/quantity.ts";

function isEmptyContainer(v: unknown): boolean {
  if (Array.isArray(v)) return v.length === 0;
  return v !== null && typeof v === "object" && Object.keys(v).length === 0;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** A field path, innermost key first (a linked list: no copying on the way down). */
interface Path {
  key: string;
  up: Path | undefined;
}

/**
 * True when the field at `path` holds a resource quantity the API server stores in canonical form
 * (`0.5` comes back as `500m`, `1024Mi` as `1Gi`): container resources, an env divisor, an
 * emptyDir size limit.
 */
function isQuantityPath(path: Path | undefined): boolean {
  const last = path?.key;
  const parent = path?.up?.key;
  const grand = path?.up?.up?.key;
  return (grand === "resources" && (parent === "limits" || parent === "requests")) ||
    (last === "divisor" && parent === "resourceFieldRef") ||
    (last === "sizeLimit" && parent === "emptyDir");
}

function sameQuantity(desired: unknown, observed: unknown): boolean {
  const text = (v: unknown) =>
    typeof v === "string" ? v : typeof v === "number" ? String(v) : undefined;
  const [a, b] = [text(desired), text(observed)];
  const qa = a === undefined ? undefined : parseQuantity(a);
  const qb = b === undefined ? undefined : parseQuantity(b);
  return qa !== undefined && qb !== undefined && compareQuantities(qa, qb) === 0;
}

/**
 * Results for a top-level `spec` both frozen: an upstream CRD's spec is one shared frozen object
 * and the cached observed spec keeps its identity until the object changes, so the walk over a
 * 300 KB schema is done once per observed version instead of once per reconcile.
 */
const specResults = new WeakMap<object, WeakMap<object, boolean>>();

function observedAt(desired: unknown, observed: unknown, path: Path | undefined): boolean {
  if (desired === observed) return true;
  if (
    path?.key === "spec" && path.up === undefined && isRecord(desired) && isRecord(observed) &&
    Object.isFrozen(desired) && Object.isFrozen(observed)
  ) {
    let byObserved = specResults.get(desired);
    const known = byObserved?.get(observed);
    if (known !== undefined) return known;
    const result = walkRecord(desired, observed, path);
    if (!byObserved) specResults.set(desired, byObserved = new WeakMap());
    byObserved.set(observed, result);
    return result;
  }
  return walk(desired, observed, path);
}

function walkRecord(
  desired: Record<string, unknown>,
  observed: Record<string, unknown>,
  path: Path | undefined,
): boolean {
  for (const k in desired) {
    if (!observedAt(desired[k], observed[k], { key: k, up: path })) return false;
  }
  return true;
}

function walk(desired: unknown, observed: unknown, path: Path | undefined): boolean {
  if (desired === undefined) return true;
  // The API server omits null and empty fields: null, {} and [] all match a missing field.
  if (desired === null) return observed === null || observed === undefined;
  if ((observed === undefined || observed === null) && isEmptyContainer(desired)) return true;
  if (Array.isArray(desired)) {
    if (!Array.isArray(observed) || observed.length !== desired.length) return false;
    for (let i = 0; i < desired.length; i++) {
      if (!observedAt(desired[i], observed[i], path)) return false;
    }
    return true;
  }
  if (isRecord(desired)) return isRecord(observed) && walkRecord(desired, observed, path);
  return isQuantityPath(path) && sameQuantity(desired, observed);
}

/**
 * True when `observed` holds everything `desired` says, so that applying `desired` would change
 * nothing: every field of a desired object is present with a matching value (extra observed
 * fields, such as server defaults, are fine); arrays match element by element and have the same
 * length; scalars are equal without coercion. What the API server does to a stored object is
 * allowed for: a null, empty map or empty list in `desired` matches a missing field (the server
 * omits them), an undefined one is absent, and a resource quantity matches its canonical form.
 * The runtime skips writes with this same test (`isSubset` in src/runtime/diff.ts).
 */
export function isObserved(desired: unknown, observed: unknown): boolean {
  return observedAt(desired, observed, undefined);
}

/** What a Deployment's status says about its rollout. */
export type Readiness =
  | { kind: "ready" }
  | { kind: "waiting"; message: string }
  /** Progressing=False: the rollout gave up (ProgressDeadlineExceeded). */
  | { kind: "stalled"; message: string }
  /** ReplicaFailure=True: Pods cannot be created (quota, admission). */
  | { kind: "replicaFailure"; message: string };

interface DeploymentCondition {
  type?: unknown;
  status?: unknown;
  reason?: unknown;
  message?: unknown;
}

interface DeploymentStatus {
  observedGeneration?: unknown;
  replicas?: unknown;
  updatedReplicas?: unknown;
  availableReplicas?: unknown;
  unavailableReplicas?: unknown;
  conditions?: unknown;
}

function num(v: unknown, fallback: number): number {
  return typeof v === "number" && Number.isFinite(v) ? v : fallback;
}

function conditionText(c: DeploymentCondition): string {
  const reason = typeof c.reason === "string" && c.reason ? c.reason : "no reason given";
  return typeof c.message === "string" && c.message ? `${reason}: ${c.message}` : reason;
}

/**
 * The readiness of one observed Deployment (docs/design.md): ready when the controller has seen the
 * current generation, it is Available, not Progressing=False, has no unavailable replicas and no
 * replicas left from an older template (replicas > updatedReplicas). ReplicaFailure wins over everything.
 */
export function deploymentReadiness(dep: KubeObject): Readiness {
  const status = (dep.status ?? {}) as DeploymentStatus;
  const conditions =
    (Array.isArray(status.conditions) ? status.conditions : []) as DeploymentCondition[];
  const cond = (type: string) => conditions.find((c) => c.type === type);
  const failure = cond("ReplicaFailure");
  if (failure?.status === "True") {
    return { kind: "replicaFailure", message: conditionText(failure) };
  }
  const progressing = cond("Progressing");
  if (progressing?.status === "False") {
    return { kind: "stalled", message: conditionText(progressing) };
  }
  const generation = num(dep.metadata.generation, 0);
  if (num(status.observedGeneration, -1) < generation) {
    return {
      kind: "waiting",
      message: "the Deployment controller has not seen the latest change yet",
    };
  }
  // Counts of zero are omitted by the API server, so a missing updatedReplicas means none yet.
  const replicas = num(status.replicas, 0);
  const updated = num(status.updatedReplicas, 0);
  if (replicas > updated) {
    return {
      kind: "waiting",
      message: `${replicas - updated} old replica(s) still being replaced`,
    };
  }
  const unavailable = num(status.unavailableReplicas, 0);
  if (unavailable > 0) return { kind: "waiting", message: `${unavailable} replica(s) unavailable` };
  if (cond("Available")?.status !== "True") {
    return { kind: "waiting", message: "not Available yet" };
  }
  return { kind: "ready" };
}

/** The readiness of a module's Deployments taken together. */
export type ModuleReadiness =
  | { kind: "ready" }
  | { kind: "waiting" | "stalled" | "replicaFailure"; message: string };

/**
 * Combines the readiness of the Deployments named `names` in `namespace`, looked up in `observed`:
 * any replica failure first, then any stalled rollout, then any still waiting. A Deployment not
 * observed is waiting. Messages name each Deployment as `namespace/name`.
 */
export function moduleReadiness(
  names: readonly string[],
  namespace: string,
  observed: readonly KubeObject[],
): ModuleReadiness {
  const found = names.map((name) => {
    const dep = observed.find((o) =>
      o.kind === "Deployment" && o.metadata.namespace === namespace && o.metadata.name === name
    );
    const r: Readiness = dep
      ? deploymentReadiness(dep)
      : { kind: "waiting", message: "not created yet" };
    return { name: `${namespace}/${name}`, r };
  });
  for (const kind of ["replicaFailure", "stalled", "waiting"] as const) {
    const hit = found.filter((f) => f.r.kind === kind);
    if (hit.length > 0) {
      const parts = hit.map((f) => `Deployment ${f.name}: ${"message" in f.r ? f.r.message : ""}`);
      return { kind, message: parts.join("; ") };
    }
  }
  return { kind: "ready" };
}
