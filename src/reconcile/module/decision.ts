/**
 * A module reducer's decision for one pass (a state-table row, its message, the writes) and its
 * conversion into a Plan: conditions updated by the rules of conditions.ts, an Event for each
 * condition change worth one (`conditionEvents`); and the decision for a duplicate.
 */
import type { Condition, ConditionStatus } from "../../api/common.ts";
import type { KubeObject } from "../../api/object.ts";
import { kubeTime } from "../../api/time.ts";
import {
  conditionEvents,
  type ConditionInput,
  conditionsOf,
  rowCondition,
  type StateRow,
  updateConditions,
} from "../conditions.ts";
import type { ObjectRef, Plan } from "../plan.ts";
import type { ModuleMeta } from "./singleton.ts";
import { releaseFinalizer } from "../finalizer.ts";

/** The condition type of the replica-failure row, which only the current rollout may explain. */
export const DEPLOYMENT_FAILURE = "DeploymentFailure";

/** What one pass decided. */
export interface ModuleDecision {
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
  /** Objects the status rests on, read live before it is written (Plan's `confirm`). */
  confirm?: ObjectRef[];
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
export function decisionPlan(
  raw: unknown,
  d: ModuleDecision,
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
  const problemsIn = (list: readonly Condition[], state: unknown): string[] => {
    const types: string[] = [];
    for (const c of list) {
      if (
        c.status === "False" || (c.type === DEPLOYMENT_FAILURE && c.status === "True") ||
        (state === "Warning" && c.type === d.row.type)
      ) types.push(c.type);
    }
    return types;
  };
  return {
    apply: d.apply ?? [],
    delete: d.delete ?? [],
    status: { served: d.served ? "True" : "False", state: d.row.state, conditions, ...fields },
    ...(d.finalizer ? { finalizer: d.finalizer } : {}),
    ...(d.requeueAfterMs !== undefined ? { requeueAfterMs: d.requeueAfterMs } : {}),
    ...(d.confirm?.length ? { confirm: d.confirm } : {}),
    events: conditionEvents(before, conditions, {
      now: problemsIn(conditions, d.row.state),
      before: problemsIn(before, old.state),
    }),
  };
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
): ModuleDecision {
  return {
    row,
    message,
    served: false,
    keepOnly: [],
    fields: {},
    ...releaseFinalizer(meta, finalizer),
  };
}
