/**
 * A module reducer's decision for one pass (a state-table row, its message, the writes) and its
 * conversion into a Plan: conditions updated by the rules of conditions.ts, an Event for each
 * condition change worth one (`conditionEvents`). Shared by the Serverless and Scaler reducers.
 */
import type { Condition, ConditionStatus } from "../api/common.ts";
import type { KubeObject } from "../api/object.ts";
import { kubeTime } from "../api/time.ts";
import {
  conditionEvents,
  type ConditionInput,
  conditionsOf,
  rowCondition,
  rowFor,
  type StateRow,
  updateConditions,
} from "./conditions.ts";
import { type DeletionPhase, REQUEUE_MS } from "./install.ts";
import type { ObjectRef, Plan } from "./plan.ts";
import type { ModuleMeta } from "./singleton.ts";

const DEPLOYMENT_FAILURE = "DeploymentFailure";

/** What one pass decided. */
export interface Decision {
  /** The state-table row the status shows. */
  row: StateRow;
  /** The message of the row's condition. */
  message: string;
  served: boolean;
  /** Conditions set before the row's own (e.g. Configured next to Installed). */
  also?: readonly ConditionInput[];
  /** Condition types to remove. */
  drop?: readonly string[];
  /** When given, condition types to keep (besides those set); every other is removed. */
  keepOnly?: readonly string[];
  /** Status fields besides served, state and conditions; undefined keeps `keptFields` of the old status. */
  fields?: Record<string, unknown>;
  apply?: KubeObject[];
  delete?: ObjectRef[];
  finalizer?: Plan["finalizer"];
  requeueAfterMs?: number;
}

/** The status of a raw object as a record, or an empty one when it has none or it is not an object. */
export function rawStatus(raw: unknown): Record<string, unknown> {
  const status = raw !== null && typeof raw === "object"
    ? (raw as { status?: unknown }).status
    : undefined;
  return status !== null && typeof status === "object" && !Array.isArray(status)
    ? status as Record<string, unknown>
    : {};
}

/** Builds a state-table row. */
export function stateRow(
  no: number,
  state: string,
  type: string,
  status: ConditionStatus,
  reason: string,
  meaning: string,
): StateRow {
  return { no, state, type, status, reason, meaning };
}

/**
 * The Plan of a decision about `raw`. `keptFields` are the string status fields carried over from
 * the old status when the decision sets no fields. A condition is a problem, and its Event a
 * Warning, when it is False, a DeploymentFailure, or the row's own condition in state Warning.
 */
export function planOf(
  raw: unknown,
  d: Decision,
  now: number,
  generation: number | undefined,
  keptFields: readonly string[] = [],
): Plan {
  const old = rawStatus(raw);
  const before: Condition[] = conditionsOf(old);
  const conditions = updateConditions(
    before,
    {
      set: [...(d.also ?? []), rowCondition(d.row, d.message)],
      // DeploymentFailure describes the current rollout only: any other row means it is not the
      // explanation now, and leaving it would make the status read as row 8 long after it cleared.
      drop: d.row.type === DEPLOYMENT_FAILURE ? d.drop : [...(d.drop ?? []), DEPLOYMENT_FAILURE],
      keepOnly: d.keepOnly,
    },
    kubeTime(now),
    generation,
  );
  const fields = d.fields ??
    Object.fromEntries(
      keptFields.flatMap((k) => (typeof old[k] === "string" ? [[k, old[k]]] : [])),
    );
  // The old state tells whether a condition was a problem before (a row of state Warning has the
  // same condition as its Ready row: only the state and message differ).
  const problemIn = (state: unknown) => (c: Condition) =>
    c.status === "False" || (c.type === DEPLOYMENT_FAILURE && c.status === "True") ||
    (state === "Warning" && c.type === d.row.type);
  return {
    apply: d.apply ?? [],
    delete: d.delete ?? [],
    status: { served: d.served ? "True" : "False", state: d.row.state, conditions, ...fields },
    ...(d.finalizer ? { finalizer: d.finalizer } : {}),
    ...(d.requeueAfterMs !== undefined ? { requeueAfterMs: d.requeueAfterMs } : {}),
    events: conditionEvents(before, conditions, problemIn(d.row.state), problemIn(old.state)),
  };
}

function finalizerRemoval(meta: ModuleMeta, finalizer: string): Pick<Decision, "finalizer"> {
  return (meta.finalizers ?? []).includes(finalizer) ? { finalizer: { remove: finalizer } } : {};
}

/**
 * The decision for a duplicate module object: not served, only the row's condition, no status
 * fields, and a finalizer left from when it was served removed (it would only block deletion).
 */
export function duplicateDecision(
  row: StateRow,
  message: string,
  meta: ModuleMeta,
  finalizer: string,
): Decision {
  return {
    row,
    message,
    served: false,
    keepOnly: [],
    fields: {},
    ...finalizerRemoval(meta, finalizer),
  };
}

/** How a module's deletion messages name it, and what its status keeps meanwhile. */
export interface DeletionWords {
  /** What is deleted: `KEDA's objects`. */
  objects: string;
  /** The module: `KEDA` (`KEDA module deleted.`). */
  module: string;
  /** The module object's finalizer, removed once everything is gone. */
  finalizer: string;
  /** Status fields to show while deleting. */
  fields?: Record<string, unknown>;
}

/**
 * The decision for a module object being deleted, by the phase of its deletion: the rows
 * DeletionErr (blocked by users' objects), Deletion and Deleted, which both module tables share.
 */
export function deletionDecision(
  table: readonly StateRow[],
  phase: DeletionPhase,
  meta: ModuleMeta,
  words: DeletionWords,
): Decision {
  const base = {
    served: true,
    drop: [DEPLOYMENT_FAILURE],
    ...(words.fields ? { fields: words.fields } : {}),
  };
  switch (phase.phase) {
    case "blocked":
      return {
        ...base,
        row: rowFor(table, "DeletionErr"),
        message: phase.message,
        requeueAfterMs: REQUEUE_MS.blocked,
      };
    case "deleting":
      return {
        ...base,
        row: rowFor(table, "Deletion"),
        message: `Deleting ${words.objects}; waiting for them to be gone.`,
        delete: phase.delete,
        requeueAfterMs: REQUEUE_MS.deleting,
      };
    case "deleted":
      return {
        ...base,
        row: rowFor(table, "Deleted"),
        message: `${words.module} module deleted.`,
        ...finalizerRemoval(meta, words.finalizer),
      };
  }
}
