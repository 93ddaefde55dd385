/** Reading the operator's status off real objects: state, served, conditions. */
import type { KubeObject } from "../../src/api/object.ts";
import { type ClusterHandle, OPERATOR_USER } from "../../tools/cluster/mod.ts";

/** A status condition as read back from the API. */
export interface ConditionView {
  type: string;
  status: string;
  reason: string;
  message?: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

/** The part of a status every kind shares. */
export interface StatusView {
  state?: string;
  served?: string;
  conditions?: ConditionView[];
  [key: string]: unknown;
}

/** The status of an object (empty when it has none yet). */
export function statusOf(obj: KubeObject | undefined): StatusView {
  return (obj?.status ?? {}) as StatusView;
}

/**
 * The states the operator wrote into `resource`'s statuses in `namespace` since `sinceMs`, in
 * order, from the audit log (which records module status writes with their bodies): a state held
 * for less than a poll's period is there too.
 */
export async function statesWritten(
  cluster: Pick<ClusterHandle, "writes">,
  resource: string,
  namespace: string,
  sinceMs: number,
): Promise<string[]> {
  const events = await cluster.writes({
    user: OPERATOR_USER,
    sinceMs,
    resource,
    namespace,
    successfulOnly: true,
  });
  return events.filter((e) => e.objectRef?.subresource === "status")
    .map((e) => String(statusOf(e.requestObject as KubeObject).state ?? ""));
}

/** The condition of `type`, if present. */
export function conditionOf(obj: KubeObject | undefined, type: string): ConditionView | undefined {
  return statusOf(obj).conditions?.find((c) => c.type === type);
}

/** What a condition must show; omitted fields match anything. */
export interface ConditionWant {
  type: string;
  status?: string;
  reason?: string;
}

/** What a status must show; omitted fields match anything. */
export interface StatusWant {
  state?: string;
  served?: string;
  conditions?: ConditionWant[];
}

/** True when `obj`'s status shows everything in `want`. */
export function statusMatches(obj: KubeObject | undefined, want: StatusWant): boolean {
  const s = statusOf(obj);
  if (want.state !== undefined && s.state !== want.state) return false;
  if (want.served !== undefined && s.served !== want.served) return false;
  return (want.conditions ?? []).every((w) => {
    const c = conditionOf(obj, w.type);
    return c !== undefined && (w.status === undefined || c.status === w.status) &&
      (w.reason === undefined || c.reason === w.reason);
  });
}

/** The comparable part of a status: state, served, and each condition's type/status/reason, sorted. */
export interface StatusSummary {
  state?: string;
  served?: string;
  conditions: string[];
}

/** Summarises a status for comparison and messages (`Installed/True/Verified`). */
export function summarize(obj: KubeObject | undefined): StatusSummary {
  const s = statusOf(obj);
  return {
    ...(s.state !== undefined ? { state: s.state } : {}),
    ...(s.served !== undefined ? { served: s.served } : {}),
    conditions: (s.conditions ?? []).map((c) => `${c.type}/${c.status}/${c.reason}`).sort(),
  };
}

/** One line describing an object's status, for failure messages. */
export function describe(obj: KubeObject | undefined): string {
  if (!obj) return "(absent)";
  const s = statusOf(obj);
  const conds = (s.conditions ?? []).map((c) =>
    `${c.type}=${c.status}/${c.reason}: ${c.message ?? ""}`
  ).join("; ");
  const ns = obj.metadata.namespace ? `${obj.metadata.namespace}/` : "";
  return `${obj.kind} ${ns}${obj.metadata.name}: state=${s.state ?? "-"} served=${
    s.served ?? "-"
  } [${conds}]`;
}

/**
 * A Scaler whose KEDA is installed and rolled out on a kwok node: kwok's Pods never serve, so the
 * API server's aggregator reports KEDA's metrics APIService not Available (FailedDiscoveryCheck, or
 * MissingEndpoints) and the Scaler says so (docs/design.md, Scaler row 14) instead of `Ready`.
 */
export const SCALER_ON_KWOK: StatusWant = {
  state: "Warning",
  conditions: [{ type: "Installed", status: "False", reason: "MetricsAPIUnavailable" }],
};

/** Throws unless `scaler`'s Installed message names KEDA's APIService and the aggregator's reason. */
export function assertAggregatorVerdict(scaler: KubeObject | undefined): void {
  const message = conditionOf(scaler, "Installed")?.message ?? "";
  const named =
    /the aggregator reports APIService v1beta1\.external\.metrics\.k8s\.io \(Service [\w-]+\/keda-operator-metrics-apiserver\) not Available: (FailedDiscoveryCheck|MissingEndpoints|EndpointsNotFound|ServiceNotFound): /;
  if (!named.test(message)) {
    throw new Error(
      `the Scaler's Installed message does not give the aggregator's verdict: ${message}`,
    );
  }
}

/**
 * How long after KEDA's Deployments are ready a Scaler on kwok shows SCALER_ON_KWOK: the 30 s the
 * operator gives the aggregator (METRICS_API_GRACE_MS) and the aggregator's own checks (5 s
 * timeouts), with room.
 */
export const KWOK_VERDICT_MS = 150_000;
