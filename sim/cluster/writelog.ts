/** Every write request the simulated API server received, with who sent it and what came of it. */
import type { WriteVerb } from "./history.ts";

/** One write request. */
export interface WriteRecord {
  seq: number;
  /** Virtual epoch ms when the server handled it. */
  at: number;
  /** `operator/<identity>`, `user`, `kube-controller-manager`, ... */
  actor: string;
  verb: WriteVerb;
  kind: string;
  namespace?: string;
  name: string;
  /** `changed`, `unchanged` (a no-op write), or the error code (0 = timeout). */
  outcome: "changed" | "unchanged" | number;
  /** resourceVersion after the write, when it changed something. */
  rv?: string;
}

/** True for actors that are operator replicas. */
export function isOperator(actor: string): boolean {
  return actor.startsWith("operator/");
}

/** The log. */
export class WriteLog {
  readonly records: WriteRecord[] = [];
  /** Read requests (get, list, watch) by actor. */
  readonly reads = new Map<string, number>();
  #listeners = new Set<(r: WriteRecord) => void>();

  /** Appends a record and tells subscribers. */
  add(record: Omit<WriteRecord, "seq">): WriteRecord {
    const r = { seq: this.records.length, ...record };
    this.records.push(r);
    for (const fn of this.#listeners) fn(r);
    return r;
  }

  /** Counts a read. */
  read(actor: string): void {
    this.reads.set(actor, (this.reads.get(actor) ?? 0) + 1);
  }

  /** Subscribes to new records; returns the unsubscribe function. */
  subscribe(fn: (r: WriteRecord) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /** Records since index `from` matching `pred`. */
  since(from: number, pred: (r: WriteRecord) => boolean = () => true): WriteRecord[] {
    return this.records.slice(from).filter(pred);
  }

  /** Successful operator writes since `from`, leases excluded (renewing a lease is not a change). */
  operatorWritesSince(from: number): WriteRecord[] {
    return this.since(
      from,
      (r) => isOperator(r.actor) && typeof r.outcome === "string" && r.kind !== "Lease",
    );
  }
}
