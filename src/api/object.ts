/**
 * The object vocabulary every layer shares: what a Kubernetes object is (KubeObject and its
 * metadata), what names a resource type, and an object's key. It lives at the bottom so that the
 * pure reducers, the runtime and the adapters all speak it without importing each other.
 */

/** Object metadata fields the operator reads or writes. */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  managedFields?: unknown[];
  [key: string]: unknown;
}

/** An owner reference (metadata.ownerReferences[]). */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** Any Kubernetes object. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

/** A resource type: enough to build its API path. */
export interface ResourceType {
  group: string; // "" for the core group
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

/** One `metadata.managedFields` entry, as far as the operator reads it. */
export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  subresource?: string;
  fieldsV1?: unknown;
}

/**
 * The managedFields entry of `manager`'s server-side apply of the object itself (not of a
 * subresource), if the object shows one: what says that manager wrote it, whatever its labels say.
 */
export function applyEntryOf(obj: KubeObject, manager: string): ManagedFieldsEntry | undefined {
  const entries = obj.metadata.managedFields as ManagedFieldsEntry[] | undefined;
  return entries?.find((e) => e.manager === manager && e.operation === "Apply" && !e.subresource);
}

/** The `namespace/name` key of an object (just `name` for cluster-scoped ones). */
export function objectKey(obj: { metadata: { namespace?: string; name: string } }): string {
  return obj.metadata.namespace
    ? `${obj.metadata.namespace}/${obj.metadata.name}`
    : obj.metadata.name;
}

/**
 * The namespace and name of a key `objectKey` made: `namespace/name`, or `name` for a
 * cluster-scoped object (a name never holds a slash).
 */
export function splitKey(key: string): { namespace: string | undefined; name: string } {
  const slash = key.indexOf("/");
  return slash < 0
    ? { namespace: undefined, name: key }
    : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** A stable id of a resource type (group/version/plural). */
export function typeId(type: ResourceType): string {
  let id = typeIds.get(type);
  if (id === undefined) typeIds.set(type, id = `${type.group}/${type.version}/${type.plural}`);
  return id;
}

/** Ids by type object: reconciles ask for the same few types millions of times. */
const typeIds = new WeakMap<ResourceType, string>();

/** A readable name of a type, as in `kubectl get <plural>.<group>`. */
export function typeName(type: ResourceType): string {
  return type.group ? `${type.plural}.${type.group}` : type.plural;
}

/** A JSON Patch operation (RFC 6902); `test` gives optimistic concurrency. */
export type JsonPatchOp =
  | { op: "add" | "replace" | "test"; path: string; value: unknown }
  | { op: "remove"; path: string };

/**
 * What a reader keeps of each object: a watch's cache (the runtime's `WatchSpec.project`) holds
 * `keep(obj)` instead of the object. With `digestSpec`, a digest of the whole `spec` is kept beside
 * it, which is what the runner compares a desired spec with before it writes.
 */
export interface Projection {
  /** Names the projection in errors (two controllers may not project one watch differently). */
  name: string;
  /** A new object with the fields to keep; must not throw, and must keep `metadata` whole enough
   * for the cache: name, namespace, resourceVersion, labels, deletionTimestamp, finalizers. */
  keep(obj: KubeObject): KubeObject;
  /** Keep a digest of `spec` (see src/reconcile/hash.ts `specDigest`) beside the projected object. */
  digestSpec?: boolean;
  /**
   * `keep` reads nothing but `metadata`: the watch asks the API server for metadata only
   * (`PartialObjectMetadata`), so the rest never crosses the wire or is parsed. `keep` then gets
   * an object whose `apiVersion` and `kind` are `meta.k8s.io/v1` `PartialObjectMetadata`.
   */
  metadataOnly?: boolean;
}

/** The metadata fields a cache reads of every projected object (see {@link Projection}). */
export const CACHE_META_FIELDS = [
  "name",
  "namespace",
  "resourceVersion",
  "deletionTimestamp",
  "finalizers",
  "labels",
] as const;

/** A new metadata with only the {@link CACHE_META_FIELDS} `obj` has: what a projection starts from. */
export function cacheMeta(obj: KubeObject): ObjectMeta {
  const from = obj.metadata as unknown as Record<string, unknown>;
  const meta: Record<string, unknown> = {};
  for (const k of CACHE_META_FIELDS) if (from[k] !== undefined) meta[k] = from[k];
  return meta as unknown as ObjectMeta;
}

/** `ratelimits.gateway.platform-project.io`, as kubectl and the API server
 * name a resource (`pods` in the core group); `sub` a subresource (`pods/status`). */
export function resourceName(type: ResourceType, sub?: string): string {
  const base = type.group ? `${type.plural}.${type.group}` : type.plural;
  return sub ? `${base}/${sub}` : base;
}

/**
 * A resourceVersion as a number, when it is one. Kubernetes documents them as opaque, but every
 * API server (etcd revisions) and the simulator issue increasing integers; anything else is not
 * compared, and then, say, a write is not cached ahead of the watch.
 */
export function parseResourceVersion(rv: string | undefined): bigint | undefined {
  return rv !== undefined && /^[0-9]{1,30}$/.test(rv) ? BigInt(rv) : undefined;
}
