/**
 * The `Cluster` port: the only way the runtime touches a Kubernetes API. Two adapters implement it:
 * `src/kube/` (the live API server) and `sim/` (an in-memory cluster on a fake clock). Both keep
 * Kubernetes semantics: resourceVersion, 409 conflicts, 404s, 410 Gone on stale watches.
 */

import type { KubeObject, ResourceType } from "../api/object.ts";

/** Options of a list call. */
export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  limit?: number;
  continue?: string;
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
}

/** A watch event as the API server sends it. An ERROR event carries a Status (e.g. code 410). */
export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";
  object: KubeObject;
}

/** Options of a server-side apply. */
export interface ApplyOptions {
  fieldManager: string;
  force?: boolean;
}

/** Options of a delete. */
export interface DeleteOptions {
  propagationPolicy?: "Background" | "Foreground" | "Orphan";
  preconditions?: { uid?: string; resourceVersion?: string };
}

/** A JSON Patch operation (RFC 6902); `test` gives optimistic concurrency. */
export type JsonPatchOp =
  | { op: "add" | "replace" | "test"; path: string; value: unknown }
  | { op: "remove"; path: string };

/**
 * An error from the API, carrying the HTTP status code and the Status reason. `code` 0 means the
 * request never got an answer (timeout, connection refused).
 */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = "ApiError";
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
  create(type: ResourceType, obj: KubeObject): Promise<KubeObject>;
  /** Replaces an object; 409 Conflict when metadata.resourceVersion is stale. */
  update(type: ResourceType, obj: KubeObject): Promise<KubeObject>;
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
  ): Promise<KubeObject>;
  /** Deletes an object; resolves also when it is already gone (returns false then). */
  delete(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    opts?: DeleteOptions,
  ): Promise<boolean>;
}
