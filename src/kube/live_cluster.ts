/** The live `Cluster`: the runtime's port implemented on a real API server. */
import { apiVersionOf } from "../api/resources.ts";
import {
  type ApplyOptions,
  type Cluster,
  type DeleteOptions,
  isApiError,
  type ListOptions,
  type ListPage,
  PARTIAL_METADATA,
  type WatchEvent,
  type WatchOptions,
  type WriteOptions,
} from "../runtime/mod.ts";
import type { JsonPatchOp, KubeObject, ResourceType } from "../api/object.ts";
import { type Connection, type ConnectionOptions, loadConnection } from "./config.ts";
import { collectionPath, objectPath, timeoutParam, withQuery, withTimeout } from "./paths.ts";
import { HttpTransport, type TransportOptions } from "./transport.ts";
import { decodeWatch } from "./watch.ts";

/** Content type of a server-side apply; the body is JSON, which is valid YAML. */
export const APPLY_PATCH = "application/apply-patch+yaml";
/** Content type of an RFC 6902 JSON Patch. */
export const JSON_PATCH = "application/json-patch+json";

/** Settings of the live cluster. */
export interface LiveClusterOptions extends TransportOptions {
  /**
   * A watch that sends nothing (not even a bookmark) for its `timeoutSeconds` plus this long is
   * treated as stalled and fails with ApiError(0, "Timeout"). Default 30 s.
   */
  watchGraceMs?: number;
  /** Idle limit of a watch without `timeoutSeconds`. Default 5 min plus the grace. */
  watchDefaultTimeoutSeconds?: number;
}

/**
 * Fills what list items lack. managedFields pass through on purpose: the runtime's cache strips
 * them (they are about half of the metadata) after keeping the operator's own applied field set,
 * which the runner needs to notice a field the desired state no longer sets.
 */
function asObject(value: unknown, type: ResourceType): KubeObject {
  const obj = value as KubeObject;
  // List items of built-in types come without apiVersion and kind.
  obj.apiVersion ??= apiVersionOf(type);
  obj.kind ??= type.kind;
  obj.metadata ??= { name: "" };
  return obj;
}

/**
 * A metadata-only list's or watch's object. The API server gives a list's items no kind; a watch's
 * objects say `PartialObjectMetadata`.
 */
function asPartial(value: unknown): KubeObject {
  const obj = value as KubeObject;
  obj.apiVersion ??= PARTIAL_METADATA.apiVersion;
  obj.kind ??= PARTIAL_METADATA.kind;
  obj.metadata ??= { name: "" };
  return obj;
}

/**
 * Accept headers of metadata-only reads (client-go's metadata client sends the same): JSON
 * PartialObjectMetadata, or plain JSON from a server that cannot (it would send whole objects,
 * which the projection then trims).
 */
const METADATA_LIST_ACCEPT =
  "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
const METADATA_ACCEPT =
  "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

/** The body of an apply: managedFields must not be sent. */
function applyBody(obj: KubeObject): KubeObject {
  if (!obj.metadata || !("managedFields" in obj.metadata)) return obj;
  const { managedFields: _dropped, ...metadata } = obj.metadata;
  return { ...obj, metadata: { ...metadata } };
}

/** A Cluster on a real API server. Every method throws ApiError on failure. */
export class LiveCluster implements Cluster {
  readonly #http: HttpTransport;
  readonly #graceMs: number;
  readonly #defaultTimeoutSeconds: number;

  /** Talks to the API server of `conn`. */
  constructor(readonly connection: Connection, opts: LiveClusterOptions = {}) {
    this.#http = new HttpTransport(connection, opts);
    this.#graceMs = opts.watchGraceMs ?? 30_000;
    this.#defaultTimeoutSeconds = opts.watchDefaultTimeoutSeconds ?? 300;
  }

  /** Loads the configuration (kubeconfig or in-cluster) and connects. Throws ConfigError. */
  static connect(opts: ConnectionOptions & LiveClusterOptions = {}): LiveCluster {
    return new LiveCluster(loadConnection(opts), opts);
  }

  /** Closes idle connections. */
  close(): void {
    this.#http.close();
  }

  /** Lists one page. */
  async list(type: ResourceType, opts: ListOptions = {}): Promise<ListPage> {
    const path = withQuery(collectionPath(type, opts.namespace), {
      labelSelector: opts.labelSelector,
      limit: opts.limit,
      continue: opts.continue,
    });
    const body = await this.#http.json(
      "GET",
      path,
      opts.metadataOnly ? { accept: METADATA_LIST_ACCEPT } : {},
    ) as {
      items?: unknown[] | null;
      metadata?: { resourceVersion?: string; continue?: string };
    };
    return {
      items: (body.items ?? []).map((item) =>
        opts.metadataOnly ? asPartial(item) : asObject(item, type)
      ),
      resourceVersion: body.metadata?.resourceVersion ?? "",
      ...(body.metadata?.continue ? { continue: body.metadata.continue } : {}),
    };
  }

  /** Watches from a resourceVersion; see Cluster.watch. */
  async *watch(
    type: ResourceType,
    opts: WatchOptions,
    signal: AbortSignal,
  ): AsyncIterable<WatchEvent> {
    const path = withQuery(collectionPath(type, opts.namespace), {
      watch: "true",
      resourceVersion: opts.resourceVersion,
      allowWatchBookmarks: opts.allowWatchBookmarks ? "true" : undefined,
      timeoutSeconds: opts.timeoutSeconds,
      labelSelector: opts.labelSelector,
    });
    let stream;
    try {
      stream = await this.#http.stream("GET", path, {
        signal,
        ...(opts.metadataOnly ? { accept: METADATA_ACCEPT } : {}),
      });
    } catch (err) {
      if (signal.aborted && !isApiError(err, 410)) return;
      throw err;
    }
    const idleMs = (opts.timeoutSeconds ?? this.#defaultTimeoutSeconds) * 1000 + this.#graceMs;
    for await (const event of decodeWatch(stream, idleMs, signal)) {
      if (event.type === "ADDED" || event.type === "MODIFIED" || event.type === "DELETED") {
        if (opts.metadataOnly) asPartial(event.object);
        else asObject(event.object, type);
      }
      yield event;
    }
  }

  /** Gets one object; undefined on 404. */
  async get(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
  ): Promise<KubeObject | undefined> {
    try {
      return asObject(await this.#http.json("GET", objectPath(type, namespace, name)), type);
    } catch (err) {
      if (isApiError(err, 404)) return undefined;
      throw err;
    }
  }

  /** Creates an object (POST to its collection). */
  async create(type: ResourceType, obj: KubeObject, opts?: WriteOptions): Promise<KubeObject> {
    const path = withTimeout(collectionPath(type, obj.metadata.namespace), opts);
    if (type.namespaced && !obj.metadata.namespace) {
      throw new Error(
        `${type.kind} ${obj.metadata.name} is namespaced: metadata.namespace is required`,
      );
    }
    return asObject(await this.#http.json("POST", path, { body: obj }), type);
  }

  /** Replaces an object (PUT); 409 when its resourceVersion is stale. */
  async update(type: ResourceType, obj: KubeObject, opts?: WriteOptions): Promise<KubeObject> {
    const path = withTimeout(objectPath(type, obj.metadata.namespace, obj.metadata.name), opts);
    return asObject(await this.#http.json("PUT", path, { body: obj }), type);
  }

  /** Server-side apply (PATCH application/apply-patch+yaml with fieldManager and force). */
  apply(type: ResourceType, obj: KubeObject, opts: ApplyOptions): Promise<KubeObject> {
    return this.#apply(type, obj, opts);
  }

  /** Server-side apply to the /status subresource. */
  applyStatus(type: ResourceType, obj: KubeObject, opts: ApplyOptions): Promise<KubeObject> {
    return this.#apply(type, obj, opts, "status");
  }

  /** JSON Patch of the main resource. */
  async patch(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    ops: JsonPatchOp[],
    opts?: WriteOptions,
  ): Promise<KubeObject> {
    const path = withTimeout(objectPath(type, namespace, name), opts);
    return asObject(
      await this.#http.json("PATCH", path, { body: ops, contentType: JSON_PATCH }),
      type,
    );
  }

  /** Deletes with background propagation (unless told otherwise); false when already gone. */
  async delete(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    opts: DeleteOptions = {},
  ): Promise<boolean> {
    const body = {
      apiVersion: "v1",
      kind: "DeleteOptions",
      propagationPolicy: opts.propagationPolicy ?? "Background",
      ...(opts.preconditions ? { preconditions: opts.preconditions } : {}),
    };
    try {
      await this.#http.json("DELETE", withTimeout(objectPath(type, namespace, name), opts), {
        body,
      });
      return true;
    } catch (err) {
      if (isApiError(err, 404)) return false;
      throw err;
    }
  }

  async #apply(
    type: ResourceType,
    obj: KubeObject,
    opts: ApplyOptions,
    subresource?: string,
  ): Promise<KubeObject> {
    const path = withQuery(
      objectPath(type, obj.metadata.namespace, obj.metadata.name, subresource),
      {
        fieldManager: opts.fieldManager,
        force: opts.force === false ? undefined : "true",
        timeout: timeoutParam(opts),
      },
    );
    const body = applyBody(obj);
    return asObject(await this.#http.json("PATCH", path, { body, contentType: APPLY_PATCH }), type);
  }
}
