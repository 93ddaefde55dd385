/**
 * The Scaler module (KEDA) as data for the module lifecycle (module/lifecycle.ts): its state table
 * (SCALER_STATES plus rows 13 and 14, this project's Warning rows; every status it writes is one of
 * those rows), what it renders, and the few words and rows where it differs from Serverless. Every
 * served status shows the installed KEDA version (`kedaVersion`). KEDA is Ready only once the
 * aggregator reports its metrics APIService Available (metrics_api.ts) and, where the operator
 * looks it up, cluster DNS resolves the name KEDA's metrics server dials (cluster_dns.ts).
 */
import { fitMessage } from "../../api/message.ts";
import { parseScaler, type ScalerSpec } from "../../api/scaler.ts";
import type { KubeObject } from "../../api/object.ts";
import type { StateRow } from "../conditions.ts";
import { type KedaConfig, kedaConfig } from "./config.ts";
import { KEDA_DEPLOYMENTS, KEDA_VERSION, VERSION_LABEL } from "./names.ts";
import { renderKeda } from "./render.ts";
import { METRICS_API_REF, METRICS_API_UNAVAILABLE, metricsApiStep } from "./metrics_api.ts";
import { CLUSTER_DNS_UNAVAILABLE, clusterDnsStep } from "./cluster_dns.ts";
import { SCALER_FINALIZER } from "../labels.ts";
import { stateRow } from "../module/decision.ts";
import { describeDiff } from "../module/install_diff.ts";
import { deploymentReadiness } from "../module/readiness.ts";
import {
  type ModuleInput,
  type ModuleLifecycle,
  reconcileModule,
  shownStatus,
  type Step,
} from "../module/lifecycle.ts";
import type { Plan } from "../plan.ts";

/**
 * docs/design.md "Scaler: condition type / status / reason mapped to CR state", row by row, and row 13:
 * docs/design.md leaves open what leads to `Warning`; here it is KEDA installed and ready while something
 * the spec asked for was not applied as asked (a reserved pod annotation dropped, a protected env
 * entry kept), shown with `Installed` True, reason `Verified`, and a message saying what. Row 14:
 * KEDA installed and rolled out, but the aggregator reports its external metrics APIService not
 * Available (`Installed` False, `MetricsAPIUnavailable`, the aggregator's reason and message).
 * Row 15: KEDA installed and rolled out, but the operator's cluster DNS lookups of the name KEDA's
 * metrics server dials to reach KEDA's operator have failed for longer than the grace
 * (`Installed` False, `ClusterDNSUnavailable`, the name, the server asked and its error).
 */
// deno-fmt-ignore
export const SCALER_STATES: readonly StateRow[] = [
  stateRow(1, "Ready", "Installed", "True", "Verified", "Ready"),
  stateRow(2, "Processing", "Installed", "Unknown", "Initialized", "Initialized"),
  stateRow(3, "Processing", "Installed", "Unknown", "Verification", "Verification in progress"),
  stateRow(4, "Error", "Installed", "False", "ApplyObjError", "Applying objects failed"),
  stateRow(5, "Error", "Installed", "False", "KedaDeploymentUpdateErr", "Deployment update failed"),
  stateRow(6, "Error", "Installed", "False", "VerificationErr", "Verification failed"),
  stateRow(7, "Error", "Installed", "False", "KedaDuplicated", "Only one instance is allowed"),
  stateRow(8, "Error", "DeploymentFailure", "True", "DeploymentReplicaFailure", "Workloads have the replica-failure condition"),
  stateRow(9, "Deleting", "Deleted", "Unknown", "Deletion", "Deletion in progress"),
  stateRow(10, "Deleting", "Deleted", "True", "Deleted", "Module deleted"),
  stateRow(11, "Error", "Deleted", "False", "DeletionErr", "Deletion failed"),
  stateRow(12, "Error", "Installed", "False", "ValidationErr", "Validation failed"),
  stateRow(13, "Warning", "Installed", "True", "Verified", "Installed, but part of the spec was not applied as asked"),
  stateRow(14, "Warning", "Installed", "False", METRICS_API_UNAVAILABLE, "Installed, but KEDA's external metrics API is not available"),
  stateRow(15, "Warning", "Installed", "False", CLUSTER_DNS_UNAVAILABLE, "Installed, but cluster DNS does not resolve the name KEDA's metrics server dials"),
];

/** Everything the Scaler reducer reads (`installed`: objects carrying `managedLabels("keda")`). */
export type ScalerInput = ModuleInput;

const DEPLOYMENTS: readonly string[] = Object.values(KEDA_DEPLOYMENTS);

/**
 * `kedaVersion`: the version KEDA's Pods run. That is the keda-operator Deployment's version label
 * once every KEDA Deployment observed has rolled out its current template (so an upgrade shows the
 * new version only when the new Pods run); while one is rolling out, the version shown before stays.
 */
function versionFields(
  installed: readonly KubeObject[],
  namespace: string | undefined,
  shown: Readonly<Record<string, unknown>>,
): Record<string, string> {
  const deployments = installed.filter((o) =>
    o.kind === "Deployment" && DEPLOYMENTS.includes(o.metadata.name) &&
    (namespace === undefined || o.metadata.namespace === namespace)
  );
  const op = deployments.find((o) => o.metadata.name === KEDA_DEPLOYMENTS.operator);
  const version = op?.metadata.labels?.[VERSION_LABEL];
  const running = deployments.every((d) => deploymentReadiness(d).kind === "ready");
  if (version && running) return { kedaVersion: version };
  return typeof shown.kedaVersion === "string" ? { kedaVersion: shown.kedaVersion } : {};
}

/**
 * Whether a rolled-out KEDA serves: the aggregator's verdict on its metrics APIService and the
 * operator's cluster DNS lookups. A Warning of either comes before a verification in progress of
 * the other; the aggregator's first, since without it nothing reaches KEDA at all.
 */
function kedaServing(input: ModuleInput, namespace: string): Step | undefined {
  const api = metricsApiStep(input.installed, namespace, input.now);
  const status = shownStatus(input.object);
  const conditions = Array.isArray(status.conditions) ? status.conditions : [];
  const installed = conditions.find((c) => (c as { type?: unknown })?.type === "Installed") as
    | { reason?: unknown }
    | undefined;
  const shown = {
    ready: status.state === "Ready",
    ...(typeof installed?.reason === "string" ? { reason: installed.reason } : {}),
  };
  const dns = clusterDnsStep(input.installed, input.lookups ?? [], namespace, input.now, shown);
  return [api, dns].find((s) => s?.state === "Warning") ?? api ?? dns;
}

/** The Scaler module: KEDA's three Deployments, a Warning when part of the spec was not applied. */
export const SCALER: ModuleLifecycle<ScalerSpec, Extract<KedaConfig, { ok: true }>> = {
  kind: "Scaler",
  states: SCALER_STATES,
  finalizer: SCALER_FINALIZER,
  deletion: { objects: "KEDA's objects", module: "KEDA" },
  deployments: DEPLOYMENTS,
  invalid: "ValidationErr",
  duplicate: "KedaDuplicated",
  claimed: {
    reason: "Initialized",
    message: `Claimed as the served Scaler; installing KEDA ${KEDA_VERSION} next.`,
  },
  // A spec field this operator does not know (a newer CRD) is refused, never ignored.
  parse: (object) => parseScaler(object, { unknown: "spec" }),
  configure(spec) {
    const config = kedaConfig(spec);
    return config.ok ? { ok: true, value: config } : config;
  },
  render: (config, target, images, crds) => renderKeda(target, config.components, images, crds),
  statusFields: versionFields,
  failed: (ref) => ref?.kind === "Deployment" ? "KedaDeploymentUpdateErr" : "ApplyObjError",
  applying: (diff) => ({
    reason: "Verification",
    message: `Installing KEDA ${KEDA_VERSION}: ${describeDiff(diff)}.`,
  }),
  stalled: (message) => ({ reason: "VerificationErr", message: `Verification failed: ${message}` }),
  waiting: (message) => ({
    reason: "Verification",
    message: `Verifying KEDA ${KEDA_VERSION}: ${message}.`,
  }),
  serving: kedaServing,
  servedBy: () => [METRICS_API_REF],
  ready(config) {
    const ready = `KEDA ${KEDA_VERSION} is installed: ${DEPLOYMENTS.join(", ")} are ready`;
    return config.warnings.length > 0
      ? {
        reason: "Verified",
        state: "Warning",
        message: fitMessage(`${ready}, but `, config.warnings, "."),
      }
      : { reason: "Verified", state: "Ready", message: `${ready}.` };
  },
};

/** Reconciles one Scaler. Pure and total: any input gives a Plan, never an exception. */
export function reconcileScaler(input: ScalerInput): Plan {
  return reconcileModule(SCALER, input);
}
