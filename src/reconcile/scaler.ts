/**
 * The Scaler reducer: (object, peers, installed KEDA objects, user KEDA objects, last apply
 * outcome, now) → Plan. docs/design.md's state table is data (SCALER_STATES) plus row 13, this project's
 * Warning row; every status it writes is one of those rows.
 *
 * Passes, as for Serverless: a duplicate reports itself and installs nothing; the served object
 * claims first (`served: "True"`, Initialized, finalizer); then each pass validates the spec,
 * applies what is not observed yet, prunes what is no longer rendered, reports a failed apply from
 * the last outcome, and verifies the three KEDA Deployments. Deletion waits for the user's
 * ScaledObjects, ScaledJobs and TriggerAuthentications, then removes everything it installed.
 */
import { formatErrors } from "../api/issues.ts";
import { parseScaler } from "../api/scaler.ts";
import type { KubeObject } from "../api/object.ts";
import type { ModuleImages } from "../api/images.ts";
import { rowFor, type StateRow } from "./conditions.ts";
import {
  type Decision,
  deletionDecision,
  duplicateDecision,
  planOf,
  stateRow,
} from "./decision.ts";
import {
  DEFAULT_MODULE_NAMESPACE,
  deletionPhase,
  describeDiff,
  diffInstalled,
  isInSync,
  pendingFailure,
  REQUEUE_MS,
} from "./install.ts";
import { kedaConfig } from "./keda/config.ts";
import { KEDA_DEPLOYMENTS, KEDA_VERSION, VERSION_LABEL } from "./keda/names.ts";
import { renderKeda } from "./keda/render.ts";
import { ownerLabelValue, SCALER_FINALIZER } from "./labels.ts";
import type { ApplyOutcome, Plan } from "./plan.ts";
import { claimingPlan, classifyModuleObject, type ModuleMeta } from "./singleton.ts";
import type { ClaimInput } from "./claim.ts";
import { moduleReadiness } from "./verify.ts";

/**
 * docs/design.md "Scaler: condition type / status / reason mapped to CR state", row by row, and row 13:
 * docs/design.md leaves open what leads to `Warning`; here it is KEDA installed and ready while something
 * the spec asked for was not applied as asked (a reserved pod annotation dropped, a protected env
 * entry kept), shown with `Installed` True, reason `Verified`, and a message saying what.
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
];

/** Everything the Scaler reducer reads. */
export interface ScalerInput {
  /** The Scaler as read from the cluster, unparsed: the reducer reports what is wrong with it. */
  object: unknown;
  /** Every Scaler in the cluster, the reconciled one included or not. */
  peers: readonly unknown[];
  /** The module's claim Lease: where it lives and what is observed there. */
  claim: ClaimInput;
  /** Observed objects carrying `managedLabels("keda")`. */
  installed: readonly KubeObject[];
  /** User objects that block deletion, by kind: `{ ScaledObject: 1, ScaledJob: 0, TriggerAuthentication: 0 }`. */
  userObjects: Readonly<Record<string, number>>;
  /** Epoch milliseconds. */
  now: number;
  images: ModuleImages;
  /** What happened to the writes of the previous Plan for this object (fed back by the runtime). */
  lastOutcome?: ApplyOutcome;
}

const S = (reason: string, state?: string) => rowFor(SCALER_STATES, reason, state);
const DEPLOYMENTS = Object.values(KEDA_DEPLOYMENTS);

/** `kedaVersion`: the version label of the observed keda-operator Deployment, when there is one. */
function versionFields(
  installed: readonly KubeObject[],
  namespace: string | undefined,
): Record<string, string> {
  const op = installed.find((o) =>
    o.kind === "Deployment" && o.metadata.name === KEDA_DEPLOYMENTS.operator &&
    (namespace === undefined || o.metadata.namespace === namespace)
  );
  const version = op?.metadata.labels?.[VERSION_LABEL];
  return version ? { kedaVersion: version } : {};
}

function deletion(input: ScalerInput, meta: ModuleMeta): Decision {
  return deletionDecision(SCALER_STATES, deletionPhase(input.installed, input.userObjects), meta, {
    objects: "KEDA's objects",
    module: "KEDA",
    finalizer: SCALER_FINALIZER,
    fields: versionFields(input.installed, undefined),
  });
}

function install(
  input: ScalerInput,
  meta: ModuleMeta,
  spec: Parameters<typeof kedaConfig>[0],
): Decision {
  const namespace = meta.namespace ?? DEFAULT_MODULE_NAMESPACE;
  const fields = versionFields(input.installed, namespace);
  const served = { served: true, drop: ["Deleted"], finalizer: { add: SCALER_FINALIZER }, fields };
  const config = kedaConfig(spec);
  if (!config.ok) {
    return {
      ...served,
      row: S("ValidationErr"),
      message: `Invalid configuration: ${formatErrors(config.errors)}`,
    };
  }
  const target = { namespace, owner: ownerLabelValue(meta) };
  const diff = diffInstalled(renderKeda(target, config.components, input.images), input.installed);
  const writes = { apply: diff.apply, delete: diff.prune };
  const failure = pendingFailure(input.lastOutcome, meta.generation, diff);
  if (failure) {
    const deployment = failure.failed?.kind === "Deployment";
    return {
      ...served,
      ...writes,
      row: S(deployment ? "KedaDeploymentUpdateErr" : "ApplyObjError"),
      message: failure.message,
      requeueAfterMs: REQUEUE_MS.failure,
    };
  }
  if (!isInSync(diff)) {
    return {
      ...served,
      ...writes,
      row: S("Verification"),
      message: `Installing KEDA ${KEDA_VERSION}: ${describeDiff(diff)}.`,
      requeueAfterMs: REQUEUE_MS.verifying,
    };
  }
  const readiness = moduleReadiness(DEPLOYMENTS, namespace, input.installed);
  const settled = { ...served, drop: ["Deleted", "DeploymentFailure"] };
  switch (readiness.kind) {
    case "replicaFailure":
      return {
        ...served,
        row: S("DeploymentReplicaFailure"),
        message: `Replica failure: ${readiness.message}`,
        requeueAfterMs: REQUEUE_MS.failure,
      };
    case "stalled":
      return {
        ...settled,
        row: S("VerificationErr"),
        message: `Verification failed: ${readiness.message}`,
        requeueAfterMs: REQUEUE_MS.failure,
      };
    case "waiting":
      return {
        ...settled,
        row: S("Verification"),
        message: `Verifying KEDA ${KEDA_VERSION}: ${readiness.message}.`,
        requeueAfterMs: REQUEUE_MS.verifying,
      };
    case "ready": {
      const ready = `KEDA ${KEDA_VERSION} is installed: ${DEPLOYMENTS.join(", ")} are ready`;
      return config.warnings.length > 0
        ? {
          ...settled,
          row: S("Verified", "Warning"),
          message: `${ready}, but ${config.warnings.join("; ")}.`,
        }
        : { ...settled, row: S("Verified", "Ready"), message: `${ready}.` };
    }
  }
}

/** Reconciles one Scaler. Pure and total: any input gives a Plan, never an exception. */
export function reconcileScaler(input: ScalerInput): Plan {
  const raw = input.object;
  const obj = classifyModuleObject("Scaler", raw, input.peers, input.claim);
  if (obj.kind === "malformed") {
    return planOf(
      raw,
      { row: S("ValidationErr"), message: obj.message, served: false, fields: {} },
      input.now,
      undefined,
    );
  }
  const generation = obj.meta.generation;
  if (obj.kind === "claiming") return claimingPlan(obj);
  if (obj.kind === "duplicate") {
    const decision = duplicateDecision(
      S("KedaDuplicated"),
      obj.message,
      obj.meta,
      SCALER_FINALIZER,
    );
    return planOf(raw, decision, input.now, generation);
  }
  if (obj.meta.deletionTimestamp) {
    return planOf(raw, deletion(input, obj.meta), input.now, generation);
  }
  const parsed = parseScaler(raw);
  const namespace = obj.meta.namespace ?? DEFAULT_MODULE_NAMESPACE;
  if (!parsed.ok) {
    const decision: Decision = {
      row: S("ValidationErr"),
      message: `The Scaler object is invalid: ${formatErrors(parsed.errors)}`,
      served: true,
      drop: ["Deleted"],
      fields: versionFields(input.installed, namespace),
    };
    return planOf(raw, decision, input.now, generation);
  }
  if (!obj.claimed) {
    const decision: Decision = {
      row: S("Initialized"),
      message: `Claimed as the served Scaler; installing KEDA ${KEDA_VERSION} next.`,
      served: true,
      keepOnly: [],
      fields: versionFields(input.installed, namespace),
      finalizer: { add: SCALER_FINALIZER },
      requeueAfterMs: REQUEUE_MS.claim,
    };
    return planOf(raw, decision, input.now, generation);
  }
  return planOf(raw, install(input, obj.meta, parsed.value.spec), input.now, generation);
}
