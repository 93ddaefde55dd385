/**
 * How a module is deleted: wait for the user's objects of the module's kinds, delete every
 * installed object, and say when nothing is left (src/reconcile/finalizer.ts then removes the
 * finalizer); the rows DeletionErr, Deletion
 * and Deleted, which both module tables share.
 */
import type { KubeObject } from "../../api/object.ts";
import { rowFor, type StateRow } from "../conditions.ts";
import { type ObjectRef, refOf } from "../plan.ts";
import { DEPLOYMENT_FAILURE, type ModuleDecision } from "./decision.ts";
import { isDeleting } from "./install_diff.ts";
import { REQUEUE_MS } from "./requeue.ts";

/** Where deletion of a module stands. */
export type DeletionPhase =
  /** User objects of the module still exist: nothing is deleted. */
  | { phase: "blocked"; message: string }
  /** Installed objects remain: delete those not yet being deleted. */
  | { phase: "deleting"; delete: ObjectRef[]; remaining: number }
  /** Nothing installed is left: the finalizer may go. */
  | { phase: "deleted" };

function plural(n: number, kind: string): string {
  return `${n} ${kind}${n === 1 ? "" : "s"}`;
}

/** How many blocking objects of one kind a message names; the rest are counted. */
export const NAMED_BLOCKING_OBJECTS = 3;

/** `2 ScaledObjects (a/x, b/y)`: the count and the first few names, so a user knows which. */
function blockingKind(kind: string, names: readonly string[]): string {
  const shown = names.slice(0, NAMED_BLOCKING_OBJECTS);
  const more = names.length - shown.length;
  return `${plural(names.length, kind)} (${shown.join(", ")}${
    more > 0 ? ` and ${more} more` : ""
  })`;
}

/**
 * The next step of deleting a module, given its installed objects and the user objects per kind
 * (each as `namespace/name`, sorted).
 */
export function deletionPhase(
  installed: readonly KubeObject[],
  userObjects: Readonly<Record<string, readonly string[]>>,
): DeletionPhase {
  const blocking = Object.entries(userObjects).filter(([, names]) => names.length > 0);
  if (blocking.length > 0) {
    const list = blocking.map(([kind, names]) => blockingKind(kind, names));
    const text = list.length > 1
      ? `${list.slice(0, -1).join(", ")} and ${list[list.length - 1]}`
      : list[0];
    const verb = blocking.length === 1 && blocking[0][1].length === 1 ? "exists" : "exist";
    return {
      phase: "blocked",
      message:
        `Deletion is blocked: ${text} still ${verb}. Delete them to finish removing the module.`,
    };
  }
  if (installed.length === 0) return { phase: "deleted" };
  return {
    phase: "deleting",
    delete: installed.filter((o) => !isDeleting(o)).map(refOf),
    remaining: installed.length,
  };
}

/** How a module's deletion messages name it, and what its status keeps meanwhile. */
export interface DeletionWords {
  /** What is deleted: `KEDA's objects`. */
  objects: string;
  /** The module: `KEDA` (`KEDA module deleted.`). */
  module: string;
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
  words: DeletionWords,
): ModuleDecision {
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
      };
  }
}
