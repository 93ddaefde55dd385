/**
 * What the API server remembers of each type's changes: one ordered ring of events a type (the
 * watch cache), bounded, so a watch from a resourceVersion older than the ring gives 410 Gone.
 */
import type { KubeObject, ResourceType } from "../../src/api/object.ts";

/** How an object changed. */
export type ChangeType = "ADDED" | "MODIFIED" | "DELETED";

/** The API verbs that write. */
export type WriteVerb =
  | "create"
  | "update"
  | "apply"
  | "applyStatus"
  | "updateStatus"
  | "patch"
  | "delete";

/** One committed change. `object` is the stored (frozen) object after the change. */
export interface Change {
  type: ChangeType;
  rtype: ResourceType;
  typeKey: string;
  object: KubeObject;
  /** The object before the change (undefined for ADDED). */
  old?: KubeObject;
  rv: number;
  /** Who made the request (`operator/<id>`, `user`, `kube-controller-manager`, ...). */
  actor: string;
  verb: WriteVerb;
}

/** The retained events of one type. */
export class TypeHistory {
  #events: Change[] = [];
  /** Highest resourceVersion no longer retained (0 while nothing was evicted). */
  compacted = 0;

  constructor(readonly capacity: number) {}

  /** Records a change, evicting the oldest beyond capacity. */
  push(change: Change): void {
    this.#events.push(change);
    if (this.#events.length > this.capacity * 2) {
      const drop = this.#events.length - this.capacity;
      this.compacted = this.#events[drop - 1].rv;
      this.#events = this.#events.slice(drop);
    }
  }

  /** Forgets everything up to now (a forced compaction): older watches get 410. */
  compactAll(rv: number): void {
    this.#events = [];
    this.compacted = rv;
  }

  /** True when a watch or list from `rv` can still be served. */
  retains(rv: number): boolean {
    return rv >= this.compacted;
  }

  /** Events after `rv`, in order. The caller checks `retains(rv)` first. */
  since(rv: number): Change[] {
    let lo = 0;
    let hi = this.#events.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.#events[mid].rv <= rv) lo = mid + 1;
      else hi = mid;
    }
    return this.#events.slice(lo);
  }
}
