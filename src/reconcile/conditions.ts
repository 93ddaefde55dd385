/** Condition bookkeeping shared by the reconcilers, and the shape of a docs/design.md state-table row. */
import { type Condition, type ConditionStatus, parseCondition } from "../api/common.ts";
import { fitText } from "../api/message.ts";
import type { EventSpec } from "./plan.ts";

/** One row of a docs/design.md state table: the CR state and the condition that explains it. */
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
 * a reconcile that finds nothing new writes nothing new. A message over the CRDs' limit is cut
 * (counting what was left out): the API server would refuse the whole status otherwise.
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
    message: fitText(next.message),
    lastTransitionTime: prev && prev.status === next.status ? prev.lastTransitionTime : now,
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
  };
  if (i >= 0) list[i] = cond;
  else list.push(cond);
  return list;
}

/** Returns `conditions` without the condition of `type`. */
export function removeCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition[] {
  return (conditions ?? []).filter((c) => c.type !== type);
}

/**
 * The row of `table` with `reason`, and with `state` when given (a reason shared by two rows, such
 * as Scaler's `Verified` for Ready and Warning, needs it). Throws for an unknown row: a bug.
 */
export function rowFor(table: readonly StateRow[], reason: string, state?: string): StateRow {
  const row = table.find((r) => r.reason === reason && (state === undefined || r.state === state));
  if (!row) {
    throw new Error(`no state-table row with reason ${reason}${state ? ` in state ${state}` : ""}`);
  }
  return row;
}

/** The condition a row sets, with its message. */
export function rowCondition(row: StateRow, message: string): ConditionInput {
  return { type: row.type, status: row.status, reason: row.reason, message };
}

/**
 * The well-formed conditions of a status read from the cluster. A status may be anything (users
 * can write it); entries that are not Conditions, and repeated types after the first, are dropped.
 */
export function conditionsOf(status: unknown): Condition[] {
  if (status === null || typeof status !== "object") return [];
  const raw = (status as { conditions?: unknown }).conditions;
  if (!Array.isArray(raw)) return [];
  const out: Condition[] = [];
  for (const item of raw) {
    const parsed = parseCondition(item);
    if (parsed.ok && !out.some((c) => c.type === parsed.value.type)) out.push(parsed.value);
  }
  return out;
}

/**
 * Which conditions report a problem, by type: those of the conditions after a reconcile (`now`)
 * and those of the conditions before it (`before`). The caller decides by its own rule; a list
 * has one condition of each type.
 */
export interface ProblemTypes {
  now: readonly string[];
  before: readonly string[];
}

/**
 * The Events a change of conditions is worth, by Kubernetes convention: one for each condition of
 * `after` that is new or changed its status or reason, which is what a user acts on. A new message
 * alone (progress such as "1 replica(s) unavailable") stays in the status and makes no Event,
 * unless the condition reports a problem now or did before (`problems`): another error, or a
 * problem cleared without a new reason (Scaler's Warning back to Ready), is news. The Event's
 * reason is the condition's; it is a Warning when the condition reports a problem now. The
 * recorder counts a reason and message that comes back on the Event written before (events.ts).
 */
export function conditionEvents(
  before: readonly Condition[],
  after: readonly Condition[],
  problems: ProblemTypes,
): EventSpec[] {
  const events: EventSpec[] = [];
  for (const c of after) {
    const prev = before.find((p) => p.type === c.type);
    const isWarning = problems.now.includes(c.type);
    const news = !prev || prev.status !== c.status || prev.reason !== c.reason ||
      (prev.message !== c.message && (isWarning || problems.before.includes(prev.type)));
    if (news) {
      events.push({ type: isWarning ? "Warning" : "Normal", reason: c.reason, message: c.message });
    }
  }
  return events;
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
    (status.conditions ?? []).some((c) =>
      c.type === r.type && c.status === r.status && c.reason === r.reason
    )
  );
}

/** How a reconcile changes the conditions of a status. */
export interface ConditionUpdate {
  /** Conditions to set, in order (the row's condition among them). */
  set: readonly ConditionInput[];
  /** Condition types to remove first. */
  drop?: readonly string[];
  /** When given, every condition type not listed here nor set is removed first. */
  keepOnly?: readonly string[];
}

/** Applies an update to the previous conditions with `setCondition`'s rules for time and generation. */
export function updateConditions(
  prev: readonly Condition[],
  update: ConditionUpdate,
  now: string,
  generation: number | undefined,
): Condition[] {
  const keep = update.keepOnly;
  const setting = (type: string) => update.set.some((s) => s.type === type);
  let list = prev.filter((c) =>
    setting(c.type) ||
    (!(update.drop ?? []).includes(c.type) && (keep === undefined || keep.includes(c.type)))
  );
  for (const next of update.set) list = setCondition(list, next, now, generation);
  return list;
}
