/** How the runtime tells errors apart: what is worth retrying, and how soon. */
import { typeName } from "../api/object.ts";
import { ApiError } from "./cluster.ts";
import { type ResourceType } from "../api/object.ts";

/**
 * An error that retrying cannot fix (controller-runtime's `reconcile.TerminalError`): it is
 * logged and recorded, and the key waits for the next change instead of backing off.
 */
export class TerminalError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "TerminalError";
  }
}

/** Thrown before a write when this replica no longer holds the lease; the write is not made. */
export class NotLeaderError extends Error {
  constructor() {
    super("not the leader: write skipped");
    this.name = "NotLeaderError";
  }
}

/** What to do after a failed write or reconcile. */
export type ErrorClass =
  /** 409: the cache is behind or someone else wrote; try again soon without growing the backoff. */
  | "conflict"
  /** 429: the server asks to slow down (Retry-After when given). */
  | "throttled"
  /** A TerminalError: do not retry until something changes. */
  | "terminal"
  /** Lost the lease: stop, the next leader takes over. */
  | "not-leader"
  /** Everything else (403, 404 of a child, 422, 5xx, no answer): back off and retry. */
  | "retry";

/** Classifies an error of a write or a reconcile. */
export function classifyError(err: unknown): ErrorClass {
  if (err instanceof NotLeaderError) return "not-leader";
  if (err instanceof TerminalError) return "terminal";
  if (err instanceof ApiError) {
    if (err.code === 409) return "conflict";
    if (err.code === 429) return "throttled";
  }
  return "retry";
}

/** A one-line description of an error for logs and outcomes. */
export function errorMessage(err: unknown): string {
  if (err instanceof ApiError) {
    return `${err.code} ${err.reason}: ${err.message}`.replace(/^0 : /, "");
  }
  return err instanceof Error ? err.message : String(err);
}

/** One line that says what failed and what to do about it. */
export function describeFailure(verb: string, type: ResourceType, err: unknown): string {
  const name = typeName(type);
  if (!(err instanceof ApiError)) return `${verb} ${name} failed: ${String(err)}; retrying`;
  switch (err.code) {
    case 0:
      return `${verb} ${name}: API server unreachable (${err.message}); check the kubeconfig or network; retrying`;
    case 401:
      return `${verb} ${name}: unauthorized (${err.message}); check the credentials; retrying`;
    case 403:
      return `${verb} ${name}: forbidden (${err.message}); grant list and watch on "${type.plural}" in API group "${type.group}" to the operator's ServiceAccount (deploy/ ClusterRole); retrying`;
    case 404:
      return `${verb} ${name}: not found; is its CRD installed? (kubectl apply -k deploy/); retrying`;
    default:
      return `${verb} ${name} failed (${err.code} ${err.reason}): ${err.message}; retrying`;
  }
}
