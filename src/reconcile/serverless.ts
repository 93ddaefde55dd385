/**
 * The Serverless reducer: (object, peers, installed objects, Functions, now) → Plan. docs/design.md's
 * state table is data (SERVERLESS_STATES); every status it writes is one of its rows.
 *
 * Passes, each one Plan: a duplicate reports itself and installs nothing; the served object first
 * claims (`served: "True"`, ConfigurationCheck, finalizer) so that no two objects install at once;
 * then each pass checks the configuration, applies what is not observed yet and prunes what is no
 * longer rendered, and verifies the controller Deployment. Deletion waits for the user's Functions,
 * deletes every installed object, and removes the finalizer once nothing is left.
 */
import { formatErrors } from "../api/issues.ts";
import { parseServerless } from "../api/serverless.ts";
import type { KubeObject } from "../api/object.ts";
import type { ModuleImages } from "../api/images.ts";
import { conditionsOf, rowCondition, rowFor, type StateRow } from "./conditions.ts";
import {
  type Decision,
  deletionDecision,
  duplicateDecision,
  planOf,
  rawStatus,
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
import { ownerLabelValue, SERVERLESS_FINALIZER } from "./labels.ts";
import type { ApplyOutcome, Plan } from "./plan.ts";
import {
  checkConfiguration,
  configuredMessage,
  SETTINGS_STATUS_FIELDS,
  settingsStatus,
} from "./serverless/config.ts";
import { CONTROLLER_DEPLOYMENT, renderServerless } from "./serverless/render.ts";
import { claimingPlan, classifyModuleObject, type ModuleMeta } from "./singleton.ts";
import type { ClaimInput } from "./claim.ts";
import { moduleReadiness } from "./verify.ts";

/** docs/design.md "Serverless: condition type / status / reason mapped to CR state", row by row. */
// deno-fmt-ignore
export const SERVERLESS_STATES: readonly StateRow[] = [
  stateRow(1, "Processing", "Configured", "True", "Configured", "Configuration verified"),
  stateRow(2, "Processing", "Configured", "Unknown", "ConfigurationCheck", "Configuration verification ongoing"),
  stateRow(3, "Error", "Configured", "False", "ConfigurationCheckErr", "Configuration verification error"),
  stateRow(4, "Error", "Configured", "False", "ServerlessDuplicated", "Only one Serverless resource is allowed"),
  stateRow(5, "Ready", "Installed", "True", "Installed", "Workloads deployed"),
  stateRow(6, "Processing", "Installed", "Unknown", "Installation", "Workloads being deployed"),
  stateRow(7, "Error", "Installed", "False", "InstallationErr", "Installation error"),
  stateRow(8, "Error", "DeploymentFailure", "True", "DeploymentReplicaFailure", "Manager has the replica-failure condition"),
  stateRow(9, "Deleting", "Deleted", "Unknown", "Deletion", "Deletion in progress"),
  stateRow(10, "Deleting", "Deleted", "True", "Deleted", "Module deleted"),
  stateRow(11, "Error", "Deleted", "False", "DeletionErr", "Deletion failed"),
];

/** Everything the Serverless reducer reads. */
export interface ServerlessInput {
  /** The Serverless as read from the cluster, unparsed: the reducer reports what is wrong with it. */
  object: unknown;
  /** Every Serverless in the cluster, the reconciled one included or not. */
  peers: readonly unknown[];
  /** The module's claim Lease: where it lives and what is observed there. */
  claim: ClaimInput;
  /** Observed objects carrying `managedLabels("serverless")`. */
  installed: readonly KubeObject[];
  /** User objects that block deletion, by kind: `{ Function: 2 }`. */
  userObjects: Readonly<Record<string, number>>;
  /** Epoch milliseconds. */
  now: number;
  images: ModuleImages;
  /** What happened to the writes of the previous Plan for this object. */
  lastOutcome?: ApplyOutcome;
}

const S = (reason: string) => rowFor(SERVERLESS_STATES, reason);

function toPlan(raw: unknown, d: Decision, now: number, generation: number | undefined): Plan {
  return planOf(raw, d, now, generation, SETTINGS_STATUS_FIELDS);
}

function deletion(input: ServerlessInput, meta: ModuleMeta): Decision {
  const phase = deletionPhase(input.installed, input.userObjects);
  return deletionDecision(SERVERLESS_STATES, phase, meta, {
    objects: "the Serverless module's objects",
    module: "Serverless",
    finalizer: SERVERLESS_FINALIZER,
  });
}

function install(
  input: ServerlessInput,
  meta: ModuleMeta,
  spec: Parameters<typeof checkConfiguration>[0],
): Decision {
  const served = { served: true, drop: ["Deleted"], finalizer: { add: SERVERLESS_FINALIZER } };
  const check = checkConfiguration(spec);
  if (!check.ok) {
    return {
      ...served,
      row: S("ConfigurationCheckErr"),
      message: `Invalid configuration: ${formatErrors(check.errors)}`,
    };
  }
  const namespace = meta.namespace ?? DEFAULT_MODULE_NAMESPACE;
  const rendered = renderServerless({
    namespace,
    owner: ownerLabelValue(meta),
    image: input.images.serverlessController,
    settings: check.settings,
  });
  const diff = diffInstalled(rendered, input.installed);
  const configured = rowCondition(S("Configured"), configuredMessage(check.settings));
  const ok = { ...served, fields: settingsStatus(check.settings), also: [configured] };
  const writes = { apply: diff.apply, delete: diff.prune };
  const failure = pendingFailure(input.lastOutcome, meta.generation, diff);
  if (failure) {
    return {
      ...ok,
      ...writes,
      row: S("InstallationErr"),
      message: failure.message,
      requeueAfterMs: REQUEUE_MS.failure,
    };
  }
  if (!isInSync(diff)) {
    const installedBefore = conditionsOf(rawStatus(input.object)).some((c) =>
      c.type === "Installed"
    );
    if (!installedBefore) {
      return {
        ...ok,
        ...writes,
        also: [],
        row: S("Configured"),
        message: configured.message,
        requeueAfterMs: REQUEUE_MS.verifying,
      };
    }
    return {
      ...ok,
      ...writes,
      row: S("Installation"),
      message: `Updating the installation: ${describeDiff(diff)}.`,
      requeueAfterMs: REQUEUE_MS.verifying,
    };
  }
  const readiness = moduleReadiness([CONTROLLER_DEPLOYMENT], namespace, input.installed);
  switch (readiness.kind) {
    case "replicaFailure":
      return {
        ...ok,
        row: S("DeploymentReplicaFailure"),
        message: `Replica failure: ${readiness.message}`,
        requeueAfterMs: REQUEUE_MS.failure,
      };
    case "stalled":
      return {
        ...ok,
        drop: ["Deleted", "DeploymentFailure"],
        row: S("InstallationErr"),
        message: `Rollout failed: ${readiness.message}`,
        requeueAfterMs: REQUEUE_MS.failure,
      };
    case "waiting":
      return {
        ...ok,
        drop: ["Deleted", "DeploymentFailure"],
        row: S("Installation"),
        message: `Waiting for the workloads: ${readiness.message}.`,
        requeueAfterMs: REQUEUE_MS.verifying,
      };
    case "ready":
      return {
        ...ok,
        drop: ["Deleted", "DeploymentFailure"],
        row: S("Installed"),
        message:
          `Serverless is installed: Deployment ${namespace}/${CONTROLLER_DEPLOYMENT} is ready.`,
      };
  }
}

/** Reconciles one Serverless. Pure and total: any input gives a Plan, never an exception. */
export function reconcileServerless(input: ServerlessInput): Plan {
  const raw = input.object;
  const obj = classifyModuleObject("Serverless", raw, input.peers, input.claim);
  if (obj.kind === "malformed") {
    return toPlan(
      raw,
      { row: S("ConfigurationCheckErr"), message: obj.message, served: false },
      input.now,
      undefined,
    );
  }
  const generation = obj.meta.generation;
  if (obj.kind === "claiming") return claimingPlan(obj);
  if (obj.kind === "duplicate") {
    const row = S("ServerlessDuplicated");
    const decision = duplicateDecision(row, obj.message, obj.meta, SERVERLESS_FINALIZER);
    return toPlan(raw, decision, input.now, generation);
  }
  if (obj.meta.deletionTimestamp) {
    return toPlan(raw, deletion(input, obj.meta), input.now, generation);
  }
  const parsed = parseServerless(raw);
  if (!parsed.ok) {
    const message = `The Serverless object is invalid: ${formatErrors(parsed.errors)}`;
    return toPlan(
      raw,
      { row: S("ConfigurationCheckErr"), message, served: true, drop: ["Deleted"] },
      input.now,
      generation,
    );
  }
  if (!obj.claimed) {
    const decision: Decision = {
      row: S("ConfigurationCheck"),
      message: "Claimed as the served Serverless; checking the configuration.",
      served: true,
      keepOnly: [],
      finalizer: { add: SERVERLESS_FINALIZER },
      requeueAfterMs: REQUEUE_MS.claim,
    };
    return toPlan(raw, decision, input.now, generation);
  }
  return toPlan(raw, install(input, obj.meta, parsed.value.spec), input.now, generation);
}
