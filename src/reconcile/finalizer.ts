/**
 * A finalizer handled in one place, after kube-rs's `finalizer` helper, as a pure function: a
 * reconcile says what to do for an object in use (Apply) and for one being deleted (Cleanup), and
 * `finalized` picks which and decides the finalizer. With the runner (src/runtime/runner.ts) it
 * guarantees:
 * - Apply only while the object is not being deleted. Its decision holds the finalizer by taking
 *   `hold`, which the runner adds before any other write, so Cleanup runs before the object goes.
 * - Cleanup whenever the object is being deleted, holding the finalizer or not: someone else's
 *   finalizer may keep the object, and what was installed for it still goes.
 * - The finalizer goes only when Cleanup reports nothing left, and last: the runner removes it after
 *   every other write of the Plan and after a live list finds none of the Plan's `noneLeft`.
 * - Never added to an object being deleted (Kubernetes then allows only removals): whatever
 *   finalizer change a Cleanup decision carries is replaced by the helper's.
 */
import type { Plan } from "./plan.ts";

/** A change of the primary's finalizers (the Plan's `finalizer`). */
export type FinalizerChange = NonNullable<Plan["finalizer"]>;

/** What the helper reads of the object. */
export interface FinalizerMeta {
  deletionTimestamp?: string;
  finalizers?: readonly string[];
}

/** What to do for an object in use, and for one being deleted. */
export interface FinalizerHandlers<D> {
  /** The object is in use; a decision that installs anything carries `hold`. */
  apply(hold: FinalizerChange): D;
  /** The object is being deleted; `done` once nothing it needs removed is left. */
  cleanup(): { decision: D; done: boolean };
}

/** The decision for an object with the finalizer `name` (see the guarantees above). */
export function finalized<D extends { finalizer?: FinalizerChange }>(
  meta: FinalizerMeta,
  name: string,
  on: FinalizerHandlers<D>,
): D {
  if (!meta.deletionTimestamp) return on.apply({ add: name });
  const { decision, done } = on.cleanup();
  const { finalizer: _, ...rest } = decision;
  return (done ? { ...rest, ...releaseFinalizer(meta, name) } : rest) as D;
}

/** Removes the finalizer `name` when the object has it: nothing when it has not. */
export function releaseFinalizer(
  meta: FinalizerMeta,
  name: string,
): { finalizer?: FinalizerChange } {
  return (meta.finalizers ?? []).includes(name) ? { finalizer: { remove: name } } : {};
}
