/** Condition bookkeeping shared by the reconcilers, and the shape of a SPEC.md state-table row. */
import type { Condition, ConditionStatus } from "../api/common.ts";

/** One row of a SPEC.md state table: the CR state and the condition that explains it. */
export interface StateRow {
  no: number;
  state: string;
  type: string;
  status: ConditionStatus;
  reason: string;
  meaning: string;
}

/** A condition to set; time and generation are added by `setCondition`. */
export interface ConditionInput {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
}

/**
 * Returns `conditions` with `next` set. `lastTransitionTime` is kept unless the status changes, so
 * a reconcile that finds nothing new writes nothing new.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  next: ConditionInput,
  now: string,
  generation: number | undefined,
): Condition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === next.type);
  const prev = i >= 0 ? list[i] : undefined;
  const cond: Condition = {
    type: next.type,
    status: next.status,
    reason: next.reason,
    message: next.message,
    lastTransitionTime: prev && prev.status === next.status ? prev.lastTransitionTime : now,
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
  };
  if (i >= 0) list[i] = cond;
  else list.push(cond);
  return list;
}

/** Returns `conditions` without the condition of `type`. */
export function removeCondition(conditions: readonly Condition[] | undefined, type: string): Condition[] {
  return (conditions ?? []).filter((c) => c.type !== type);
}

/** The row of `table` with `reason` (reasons are unique within a table). Throws for an unknown reason: a bug. */
export function rowFor(table: readonly StateRow[], reason: string): StateRow {
  const row = table.find((r) => r.reason === reason);
  if (!row) throw new Error(`no state-table row with reason ${reason}`);
  return row;
}

/**
 * The row a status shows: its state, and a condition with that row's type, status and reason.
 * Undefined when the status is not a row of the table (an invariant violation).
 */
export function rowOfStatus(
  table: readonly StateRow[],
  status: { state?: string; conditions?: readonly Condition[] } | undefined,
): StateRow | undefined {
  if (!status?.state) return undefined;
  return table.find((r) =>
    r.state === status.state &&
    (status.conditions ?? []).some((c) => c.type === r.type && c.status === r.status && c.reason === r.reason)
  );
}
