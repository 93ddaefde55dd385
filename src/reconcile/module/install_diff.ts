/**
 * What a module install writes: what to apply and prune given the rendered and the observed
 * objects, how a diff reads in a message, and whether the last apply's failure still matters.
 */
import type { KubeObject } from "../../api/object.ts";
import { type ApplyOutcome, describeRef, type ObjectRef, refOf } from "../plan.ts";
import { isObserved } from "../observed.ts";

/** The identity of an object: API group, kind, namespace and name (versions of a group are one object). */
export function identity(
  ref: { apiVersion: string; kind: string; namespace?: string; name: string },
): string {
  const slash = ref.apiVersion.indexOf("/");
  const group = slash >= 0 ? ref.apiVersion.slice(0, slash) : "";
  return `${group}|${ref.kind}|${ref.namespace ?? ""}|${ref.name}`;
}

/** True when the object has a deletionTimestamp. */
export function isDeleting(obj: KubeObject): boolean {
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
  // Each object's identity once (it was taken twice a reconcile, for every rendered object).
  const installedIds = installed.map((o) => identity(refOf(o)));
  const renderedIds = rendered.map((o) => identity(refOf(o)));
  const observed = new Map(installed.map((o, i) => [installedIds[i], o]));
  const wanted = new Set(renderedIds);
  const apply = rendered.filter((o, i) => {
    const seen = observed.get(renderedIds[i]);
    return !seen || isDeleting(seen) || !isObserved(o, seen);
  });
  const prune = installed
    .filter((o, i) => !isDeleting(o) && !wanted.has(installedIds[i]))
    .map(refOf);
  return { apply, prune };
}

/** True when the diff has nothing to write. */
export function isInSync(diff: InstallDiff): boolean {
  return diff.apply.length === 0 && diff.prune.length === 0;
}

/** Short names of objects for a message: `Deployment ns/name, ConfigMap ns/name`, at most five. */
export function describeRefs(refs: readonly ObjectRef[]): string {
  const names = refs.map(describeRef);
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
