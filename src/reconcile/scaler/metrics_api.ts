/**
 * Does KEDA's external metrics API serve? KEDA's Deployments can be rolled out while HPAs still get
 * `FailedGetExternalMetric`: the API server's aggregator reaches KEDA's metrics server through its
 * Service (endpoints, kube-proxy, DNS of what it calls). The aggregator says what it found in the
 * `Available` condition of the APIService the Scaler installs (kube-aggregator's
 * `AvailableConditionController`: `Passed`, or `ServiceNotFound`, `ServicePortError`,
 * `EndpointsNotFound`, `MissingEndpoints`, `FailedDiscoveryCheck`; `Unknown` with
 * `ServiceAccessError` or `EndpointsAccessError`). The Scaler shows that verdict, never `Ready`
 * while it is not True. The aggregator judges on its own schedule: right after KEDA's metrics
 * server became available (or the verdict changed) a False verdict may still describe the Pods
 * before, so for {@link METRICS_API_GRACE_MS} it is shown as verification in progress, and only
 * then as a problem.
 */
import type { KubeObject } from "../../api/object.ts";
import type { ObjectRef } from "../plan.ts";
import type { Step } from "../module/lifecycle.ts";
import { KEDA_CLUSTER_OBJECTS, KEDA_DEPLOYMENTS, KEDA_VERSION } from "./names.ts";

/** The reason of the Scaler's row for an APIService the aggregator reports not Available. */
export const METRICS_API_UNAVAILABLE = "MetricsAPIUnavailable";

/**
 * How long after KEDA's metrics server turned available, or the aggregator's verdict changed, a
 * False verdict counts as catching up rather than as a problem. The aggregator checks again at
 * once when the Service's endpoints change, and retries a failed discovery check within 30 s at
 * the latest (its queue's backoff), each check taking at most 6 s.
 */
export const METRICS_API_GRACE_MS = 30_000;

/**
 * The APIService whose verdict a Ready Scaler rests on: read live before such a status is
 * written, since a watch stalled unnoticed can keep an old `Available: True` in the cache.
 */
export const METRICS_API_REF: ObjectRef = {
  apiVersion: "apiregistration.k8s.io/v1",
  kind: "APIService",
  name: KEDA_CLUSTER_OBJECTS.apiService,
};

interface ApiServiceCondition {
  type?: unknown;
  status?: unknown;
  reason?: unknown;
  message?: unknown;
  lastTransitionTime?: unknown;
}

function availableOf(o: KubeObject | undefined): ApiServiceCondition | undefined {
  const status = o?.status as { conditions?: unknown } | undefined;
  const conditions =
    (Array.isArray(status?.conditions) ? status.conditions : []) as ApiServiceCondition[];
  return conditions.find((c) => c.type === "Available");
}

/** Epoch ms of a condition's lastTransitionTime; undefined when it has none readable. */
function since(c: ApiServiceCondition | undefined): number | undefined {
  const t = typeof c?.lastTransitionTime === "string" ? Date.parse(c.lastTransitionTime) : NaN;
  return Number.isFinite(t) ? t : undefined;
}

function text(v: unknown, fallback: string): string {
  return typeof v === "string" && v !== "" ? v : fallback;
}

/**
 * The step a rolled-out KEDA shows while its metrics API does not serve, or undefined when the
 * aggregator reports the APIService Available. Only the APIService the Scaler installed counts:
 * the one in `installed` whose `spec.service` is KEDA's metrics Service in `namespace`.
 */
export function metricsApiStep(
  installed: readonly KubeObject[],
  namespace: string,
  now: number,
): Step | undefined {
  const name = KEDA_CLUSTER_OBJECTS.apiService;
  const service = KEDA_DEPLOYMENTS.metricServer;
  const api = installed.find((o) => {
    const ref = (o.spec as { service?: { name?: unknown; namespace?: unknown } } | undefined)
      ?.service;
    return o.kind === "APIService" && o.metadata.name === name && ref?.name === service &&
      ref.namespace === namespace;
  });
  const what = `APIService ${name} (Service ${namespace}/${service})`;
  if (!api) {
    return {
      reason: "Verification",
      message: `Verifying KEDA ${KEDA_VERSION}: ${what} is not observed yet.`,
    };
  }
  const available = availableOf(api);
  if (available?.status === "True") return undefined;
  if (available?.status === "False") {
    const verdict = `${text(available.reason, "no reason given")}: ${
      text(available.message, "no message")
    }`;
    // The later of the verdict's and the metrics server's last change: unknown times count as old.
    const server = installed.find((o) =>
      o.kind === "Deployment" && o.metadata.name === service && o.metadata.namespace === namespace
    );
    const changed = Math.max(since(available) ?? 0, since(availableOf(server)) ?? 0);
    const left = changed + METRICS_API_GRACE_MS - now;
    if (left > 0) {
      return {
        reason: "Verification",
        message: `Verifying KEDA ${KEDA_VERSION}: waiting for the aggregator to find ${what} ` +
          `available; it reports ${verdict}.`,
        requeueAfterMs: left,
      };
    }
    return {
      reason: METRICS_API_UNAVAILABLE,
      state: "Warning",
      message: `KEDA ${KEDA_VERSION} is installed, but the aggregator reports ${what} not ` +
        `Available: ${verdict}. HPAs cannot read KEDA's metrics until it is.`,
    };
  }
  const verdict = available
    ? `Available is ${text(available.status, "empty")}: ${
      text(available.reason, "no reason given")
    }: ${text(available.message, "no message")}`
    : "no Available condition yet";
  return {
    reason: "Verification",
    message: `Verifying KEDA ${KEDA_VERSION}: the aggregator has not found ${what} ` +
      `available (${verdict}).`,
  };
}
