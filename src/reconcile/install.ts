/**
 * The installation lifecycle both module kinds share: what to apply and prune given the rendered
 * and the observed objects, how deletion proceeds, and how the last apply's outcome is judged.
 */
import type { KubeObject } from "../api/object.ts";
import { type ApplyOutcome, type ObjectRef, refOf } from "./plan.ts";
import { isObserved } from "./verify.ts";

/** Namespace for a module's objects when its module object has none (in a cluster it always has one). */
export const DEFAULT_MODULE_NAMESPACE = "platform-system";

/** Requeue intervals (ms) while a module waits for something no watch may report. */
export const REQUEUE_MS = {
  /** After claiming: the next pass installs. */
  claim: 1_000,
  /** While objects are applied or Deployments roll out. */
  verifying: 5_000,
  /** While installed objects are being deleted. */
  deleting: 2_000,
  /** After a failed write or a replica failure. */
  failure: 10_000,
  /** While deletion waits for the user to delete their objects. */
  blocked: 30_000,
} as const;

/** The identity of an object: API group, kind, namespace and name (versions of a group are one object). */
export function identity(
  ref: { apiVersion: string; kind: string; namespace?: string; name: string },
): string {
  const group = ref.apiVersion.includes("/") ? ref.apiVersion.split("/")[0] : "";
  return `${group}|${ref.kind}|${ref.namespace ?? ""}|${ref.name}`;
}

function isDeleting(obj: KubeObject): boolean {
  return typeof obj.metadata.deletionTimestamp === "string";
}

/** Writes that bring the observed objects to the rendered ones. */
export interface InstallDiff {
  /** Rendered objects not observed as rendered (missing, different, or being deleted). */
  apply: KubeObject[];
  /** Observed installed objects that are no longer rendered and not already being deleted. */
  prune: ObjectRef[];
}

/** Compares rendered objects with the observed installed ones (all carrying the module's labels). */
export function diffInstalled(
  rendered: readonly KubeObject[],
  installed: readonly KubeObject[],
): InstallDiff {
  const observed = new Map(installed.map((o) => [identity(refOf(o)), o]));
  const wanted = new Set(rendered.map((o) => identity(refOf(o))));
  const apply = rendered.filter((o) => {
    const seen = observed.get(identity(refOf(o)));
    return !seen || isDeleting(seen) || !isObserved(o, seen);
  });
  const prune = installed
    .filter((o) => !isDeleting(o) && !wanted.has(identity(refOf(o))))
    .map(refOf);
  return { apply, prune };
}

/** True when the diff has nothing to write. */
export function isInSync(diff: InstallDiff): boolean {
  return diff.apply.length === 0 && diff.prune.length === 0;
}

/** Short names of objects for a message: `Deployment ns/name, ConfigMap ns/name`, at most five. */
export function describeRefs(refs: readonly ObjectRef[]): string {
  const names = refs.map((r) => `${r.kind} ${r.namespace ? `${r.namespace}/` : ""}${r.name}`);
  return names.length > 5
    ? `${names.slice(0, 5).join(", ")} and ${names.length - 5} more`
    : names.join(", ");
}

/** What a diff writes, for a message: `applying Deployment ns/a, ...; removing ConfigMap ns/b`. */
export function describeDiff(diff: InstallDiff): string {
  return [
    ...(diff.apply.length ? [`applying ${describeRefs(diff.apply.map(refOf))}`] : []),
    ...(diff.prune.length ? [`removing ${describeRefs(diff.prune)}`] : []),
  ].join("; ");
}

/**
 * The failure of the last apply when it still matters: made for this generation, and the write that
 * failed is still pending (any pending write when the outcome names no object). A failure of some
 * other write (the object's own status, say) is the runtime's to retry, not the module's to report.
 */
export function pendingFailure(
  outcome: ApplyOutcome | undefined,
  generation: number | undefined,
  diff: InstallDiff,
): { failed?: ObjectRef; message: string } | undefined {
  if (!outcome || outcome.ok || isInSync(diff)) return undefined;
  if (
    outcome.generation !== undefined && generation !== undefined &&
    outcome.generation !== generation
  ) {
    return undefined;
  }
  if (outcome.failed) {
    const pending = new Set([...diff.apply.map(refOf), ...diff.prune].map(identity));
    if (!pending.has(identity(outcome.failed))) return undefined;
  }
  const what = outcome.failed ? describeRefs([outcome.failed]) : "an object";
  return {
    failed: outcome.failed,
    message: `Applying ${what} failed: ${outcome.error ?? "unknown error"}`,
  };
}

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

/** The next step of deleting a module, given its installed objects and the user objects per kind. */
export function deletionPhase(
  installed: readonly KubeObject[],
  userObjects: Readonly<Record<string, number>>,
): DeletionPhase {
  const blocking = Object.entries(userObjects).filter(([, n]) => n > 0);
  if (blocking.length > 0) {
    const list = blocking.map(([kind, n]) => plural(n, kind));
    const text = list.length > 1
      ? `${list.slice(0, -1).join(", ")} and ${list[list.length - 1]}`
      : list[0];
    const verb = blocking.length === 1 && blocking[0][1] === 1 ? "exists" : "exist";
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
