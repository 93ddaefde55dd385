/**
 * The `Cluster` port: the only way the runtime touches a Kubernetes API. Two adapters implement it:
 * `src/kube/` (the live API server) and `sim/` (an in-memory cluster on a fake clock). Both keep
 * Kubernetes semantics: resourceVersion, 409 conflicts, 404s, 410 Gone on stale watches. Here too:
 * how the runtime tells its errors apart (what is worth retrying, and how soon).
 */

import { type JsonPatchOp, type KubeObject, type ResourceType, typeName } from "../api/object.ts";

/** Options of a list call. */
export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  limit?: number;
  continue?: string;
  /** Only each object's metadata, as `meta.k8s.io/v1` `PartialObjectMetadata` (see {@link asPartialMetadata}). */
  metadataOnly?: boolean;
}

/** One page of a list. */
export interface ListPage {
  items: KubeObject[];
  resourceVersion: string;
  continue?: string;
}

/** Options of a watch call. */
export interface WatchOptions {
  namespace?: string;
  labelSelector?: string;
  resourceVersion: string;
  /** Server-side timeout: the server ends the watch after this many seconds. */
  timeoutSeconds?: number;
  allowWatchBookmarks?: boolean;
  /** Only each object's metadata, as `meta.k8s.io/v1` `PartialObjectMetadata` (see {@link asPartialMetadata}). */
  metadataOnly?: boolean;
}

/**
 * `obj` as a metadata-only list or watch answers it: `meta.k8s.io/v1` `PartialObjectMetadata`
 * with the object's whole `metadata` and nothing else. The simulator serves this; tests compare
 * with it.
 */
export function asPartialMetadata(obj: KubeObject): KubeObject {
  return {
    apiVersion: PARTIAL_METADATA.apiVersion,
    kind: PARTIAL_METADATA.kind,
    metadata: obj.metadata,
  };
}

/** The type of an object a metadata-only list or watch answers. */
export const PARTIAL_METADATA = {
  apiVersion: "meta.k8s.io/v1",
  kind: "PartialObjectMetadata",
} as const;

/** A watch event as the API server sends it. An ERROR event carries a Status (e.g. code 410). */
export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: KubeObject;
}

/**
 * A write's server-side bound (the API server's `timeout` parameter, counted from when it receives
 * the request): past it the server gives up and writes nothing. A leader bounds each write by the
 * end of its term, so a write slowed in the server cannot land after a standby has taken over.
 */
export interface WriteOptions {
  timeoutMs?: number;
}

/** Options of a server-side apply. */
export interface ApplyOptions extends WriteOptions {
  fieldManager: string;
  force?: boolean;
}

/** Options of a delete. */
export interface DeleteOptions extends WriteOptions {
  propagationPolicy?: "Background" | "Foreground" | "Orphan";
  preconditions?: { uid?: string; resourceVersion?: string };
}

/**
 * An error from the API, carrying the HTTP status code and the Status reason. `code` 0 means the
 * request never got an answer (timeout, connection refused).
 */
export class ApiError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly retryAfterSeconds?: number;

  constructor(code: number, reason: string, message: string, retryAfterSeconds?: number) {
    // No stack: the code and reason say where it came from, and capturing the frames was most of
    // its cost (a 404 or a conflict is an answer, made by the thousand in the simulator).
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.name = "ApiError";
    this.code = code;
    this.reason = reason;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** True when `err` is an ApiError with one of the given codes. */
export function isApiError(err: unknown, ...codes: number[]): err is ApiError {
  return err instanceof ApiError && (codes.length === 0 || codes.includes(err.code));
}

/** The Kubernetes API as the runtime uses it. Every method may throw ApiError. */
export interface Cluster {
  /** Lists one page of objects of a type. */
  list(type: ResourceType, opts?: ListOptions): Promise<ListPage>;
  /**
   * Watches a type from a resourceVersion. The iterator ends when the server closes the watch (its
   * timeout, a drop); it throws ApiError(410) or yields an ERROR event when the version is too old;
   * aborting `signal` ends it.
   */
  watch(type: ResourceType, opts: WatchOptions, signal: AbortSignal): AsyncIterable<WatchEvent>;
  /** Gets one object; undefined when it does not exist. */
  get(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
  ): Promise<KubeObject | undefined>;
  /** Creates an object; 409 AlreadyExists if it exists. */
  create(type: ResourceType, obj: KubeObject, opts?: WriteOptions): Promise<KubeObject>;
  /** Replaces an object; 409 Conflict when metadata.resourceVersion is stale. */
  update(type: ResourceType, obj: KubeObject, opts?: WriteOptions): Promise<KubeObject>;
  /** Server-side apply of the object's fields owned by `fieldManager`. */
  apply(type: ResourceType, obj: KubeObject, opts: ApplyOptions): Promise<KubeObject>;
  /** Server-side apply to the /status subresource; `obj` holds apiVersion, kind, metadata.name/namespace and status. */
  applyStatus(type: ResourceType, obj: KubeObject, opts: ApplyOptions): Promise<KubeObject>;
  /** JSON Patch of the main resource (used for finalizers, with a `test` op). */
  patch(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    ops: JsonPatchOp[],
    opts?: WriteOptions,
  ): Promise<KubeObject>;
  /** Deletes an object; resolves also when it is already gone (returns false then). */
  delete(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    opts?: DeleteOptions,
  ): Promise<boolean>;
}

/**
 * A Cluster whose every call goes to `cluster` unchanged: a wrapper spreads it and replaces only
 * the methods it changes.
 */
export function forwardingTo(cluster: Cluster): Cluster {
  return {
    list: (t, o) => cluster.list(t, o),
    watch: (t, o, signal) => cluster.watch(t, o, signal),
    get: (t, ns, n) => cluster.get(t, ns, n),
    create: (t, o, opts) => cluster.create(t, o, opts),
    update: (t, o, opts) => cluster.update(t, o, opts),
    apply: (t, o, opts) => cluster.apply(t, o, opts),
    applyStatus: (t, o, opts) => cluster.applyStatus(t, o, opts),
    patch: (t, ns, n, ops, opts) => cluster.patch(t, ns, n, ops, opts),
    delete: (t, ns, n, o) => cluster.delete(t, ns, n, o),
  };
}

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
    // A conflict is a version the cache was behind; an object that already exists may be another's
    // that no read will show (outside the operator's watch), so it backs off.
    if (err.code === 409) return err.reason === "AlreadyExists" ? "retry" : "conflict";
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
