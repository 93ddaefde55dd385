/**
 * Are a module's Deployments rolled out? The readiness of one Deployment from its status, and of a
 * module's Deployments taken together (docs/design.md, "Verification").
 */
import type { KubeObject } from "../../api/object.ts";

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
