/** A failed write of a Plan, and what the work queue does with its key next. */
import type { ObjectRef } from "../reconcile/plan.ts";
import { ApiError } from "./cluster.ts";
import type { ErrorClass } from "./errors.ts";
import type { WorkResult } from "./queue.ts";

/** A failed write: the object and the error. */
export class WriteFailed extends Error {
  constructor(readonly ref: ObjectRef, override readonly cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause));
  }
}

/**
 * What the queue does after a failed write of class `kind` (not "not-leader"): a conflict is tried
 * again `soon()`, a throttled write after the server's Retry-After (else soon), a terminal error
 * waits for the next change, anything else backs off.
 */
export function retryWork(kind: ErrorClass, cause: unknown, soon: () => number): WorkResult {
  switch (kind) {
    case "conflict":
      return { type: "retrySoon", afterMs: soon() };
    case "throttled": {
      const after = cause instanceof ApiError && cause.retryAfterSeconds
        ? cause.retryAfterSeconds * 1000
        : soon();
      return { type: "retrySoon", afterMs: after };
    }
    case "terminal":
      return { type: "terminal" };
    default:
      return { type: "retry" };
  }
}
