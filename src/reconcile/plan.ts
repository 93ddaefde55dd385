/**
 * A Plan is what a reconciler wants done, as data (JOSDK's UpdateControl, kube-rs's Action). The
 * runtime carries it out, skipping any write whose result is already observed.
 */
import type { KubeObject } from "../api/object.ts";

/** A reference to an object to delete. */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
}

/** A Kubernetes Event the reconciler wants recorded about the reconciled object. */
export interface EventSpec {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
}

/** The outcome of one reconcile. */
export interface Plan {
  /**
   * Objects to create only if absent (POST), before anything else: a 409 AlreadyExists fails the
   * Plan. For claims, where "whoever creates it first" is the point.
   */
  create?: KubeObject[];
  /** Objects to server-side apply (whole desired state of the fields this operator owns). */
  apply: KubeObject[];
  /** Objects to delete (background propagation). Applied after `apply`. */
  delete: ObjectRef[];
  /** The whole new status of the reconciled object; undefined leaves status alone. */
  status?: Record<string, unknown>;
  /** Finalizer to add before any apply, or to remove after everything else succeeded. */
  finalizer?: { add?: string; remove?: string };
  /**
   * Kinds (with a label selector) of which the API server must list nothing right before the
   * finalizer is removed. A cache can be behind (a watch that stalled unnoticed), and removing a
   * module's finalizer on a stale "nothing left" would orphan what it installed; a live list is
   * the one read that cannot be behind. With `appliedBy`, only objects that field manager's
   * server-side apply wrote count (a user's object that carries the labels is not the module's).
   */
  noneLeft?: { apiVersion: string; kind: string; labelSelector: string; appliedBy?: string }[];
  /**
   * Kinds of which the API server must list no object (cluster-wide) right before the Plan deletes
   * anything or removes its finalizer: the user's objects that block a module's deletion. The
   * cache can be behind by the objects created a moment before the deletion, and deleting the
   * module's CRDs on that stale "none" would take the user's objects with them.
   */
  blockers?: { apiVersion: string; kind: string }[];
  /**
   * Objects the new status rests on (a module's `Ready` on its Deployments' rollout and, for the
   * Scaler, on the aggregator's verdict in KEDA's APIService), read from the API server right
   * before the status is written. One that is not at the resourceVersion the reconcile read (or
   * that it read absent and exists now, or the reverse) fails the Plan as a conflict (retried soon)
   * after its live copy is handed to the cache, so the status is judged again from it: a watch
   * that stalled unnoticed keeps the cache behind for up to its idle timeout, and a claim made
   * from such a cache would be a guess. The reconcile's version counts, not the cache's at the
   * time of the write: a watch that catches up meanwhile does not make the claim any less stale.
   */
  confirm?: ObjectRef[];
  /** Reconcile this object again after this many milliseconds even if nothing changes. */
  requeueAfterMs?: number;
  /** Events to record. */
  events: EventSpec[];
}

/** What happened to the last Plan's writes; the runtime feeds it back into the next reconcile. */
export interface ApplyOutcome {
  ok: boolean;
  /** The object whose apply or delete failed. */
  failed?: ObjectRef;
  /** The API's message. */
  error?: string;
  /** The generation of the reconciled object the Plan was made for. */
  generation?: number;
}

/** An empty Plan: nothing to write. */
export function emptyPlan(): Plan {
  return { apply: [], delete: [], events: [] };
}

/** The reference of an object. */
export function refOf(obj: KubeObject): ObjectRef {
  const { apiVersion, kind } = obj;
  const { namespace, name } = obj.metadata;
  return namespace ? { apiVersion, kind, namespace, name } : { apiVersion, kind, name };
}

/** True when two references name the same object. */
export function sameRef(a: ObjectRef, b: ObjectRef): boolean {
  return a.apiVersion === b.apiVersion && a.kind === b.kind && a.name === b.name &&
    (a.namespace ?? "") === (b.namespace ?? "");
}

/** An object's reference for a message: `Deployment ns/name`, `ClusterRole name`. */
export function describeRef(ref: ObjectRef): string {
  return `${ref.kind} ${ref.namespace ? `${ref.namespace}/` : ""}${ref.name}`;
}
