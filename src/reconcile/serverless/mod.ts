/**
 * The Serverless module as data for the module lifecycle (module/lifecycle.ts): its state table
 * (SERVERLESS_STATES; every status the reducer writes is one of its rows), what it renders, and
 * the few words and rows where it differs from the Scaler. Its configuration shows in the status
 * (the settings fields and a Configured condition beside Installed).
 */
import { parseServerless, type ServerlessSpec } from "../../api/serverless.ts";
import { conditionsOf, rowCondition, rowFor, type StateRow } from "../conditions.ts";
import { SERVERLESS_FINALIZER } from "../labels.ts";
import { rawStatus, stateRow } from "../module/decision.ts";
import { describeDiff } from "../module/install_diff.ts";
import { type ModuleInput, type ModuleLifecycle, reconcileModule } from "../module/lifecycle.ts";
import type { Plan } from "../plan.ts";
import {
  checkConfiguration,
  configuredMessage,
  type ServerlessSettings,
  SETTINGS_STATUS_FIELDS,
  settingsStatus,
} from "./config.ts";
import { CONTROLLER_DEPLOYMENT, renderServerless } from "./render.ts";

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

/** Everything the Serverless reducer reads (`installed`: objects carrying `managedLabels("serverless")`). */
export type ServerlessInput = ModuleInput;

/** The Serverless module: the controller Deployment, its settings in the status. */
export const SERVERLESS: ModuleLifecycle<ServerlessSpec, ServerlessSettings> = {
  kind: "Serverless",
  states: SERVERLESS_STATES,
  finalizer: SERVERLESS_FINALIZER,
  deletion: { objects: "the Serverless module's objects", module: "Serverless" },
  keptFields: SETTINGS_STATUS_FIELDS,
  deployments: [CONTROLLER_DEPLOYMENT],
  invalid: "ConfigurationCheckErr",
  duplicate: "ServerlessDuplicated",
  claimed: {
    reason: "ConfigurationCheck",
    message: "Claimed as the served Serverless; checking the configuration.",
  },
  // A spec field this operator does not know (a newer CRD) is refused, never ignored.
  parse: (object) => parseServerless(object, { unknown: "spec" }),
  configure(spec) {
    const check = checkConfiguration(spec);
    return check.ok ? { ok: true, value: check.settings } : check;
  },
  render: (settings, target, images, crds) =>
    renderServerless({ ...target, image: images.serverlessController, settings, crds }),
  configured: (settings) => ({
    fields: settingsStatus(settings),
    also: [rowCondition(rowFor(SERVERLESS_STATES, "Configured"), configuredMessage(settings))],
  }),
  failed: () => "InstallationErr",
  applying(diff, settings, object) {
    // The first install shows the configuration verified; later ones say what they update.
    const installedBefore = conditionsOf(rawStatus(object)).some((c) => c.type === "Installed");
    return installedBefore
      ? { reason: "Installation", message: `Updating the installation: ${describeDiff(diff)}.` }
      : { reason: "Configured", message: configuredMessage(settings), also: [] };
  },
  stalled: (message) => ({ reason: "InstallationErr", message: `Rollout failed: ${message}` }),
  waiting: (message) => ({
    reason: "Installation",
    message: `Waiting for the workloads: ${message}.`,
  }),
  ready: (_, namespace) => ({
    reason: "Installed",
    message: `Serverless is installed: Deployment ${namespace}/${CONTROLLER_DEPLOYMENT} is ready.`,
  }),
};

/** Reconciles one Serverless. Pure and total: any input gives a Plan, never an exception. */
export function reconcileServerless(input: ServerlessInput): Plan {
  return reconcileModule(SERVERLESS, input);
}
