/**
 * How an object becomes a cache entry: frozen, without `metadata.managedFields` (about two thirds
 * of a typical object's memory), and, for a watch that declares a projection, only what its
 * controllers read, with a digest of the spec it dropped. Also the operator's own applied
 * `fieldsV1`, kept beside the entry, and resourceVersions as numbers.
 */
import { FIELD_MANAGER } from "../../reconcile/labels.ts";
import type { KubeObject } from "../../api/object.ts";
import { deepEqual, deepFreeze } from "../../api/json.ts";

/**
 * What a controller reads of each object of a watch (see `WatchSpec.project`): the cache holds
 * `keep(obj)` instead of the object. With `digestSpec`, a digest of the whole `spec` is kept beside
 * it, which is what the runner compares a desired spec with before it writes.
 */
export interface Projection {
  /** Names the projection in errors (two controllers may not project one watch differently). */
  name: string;
  /** A new object with the fields to keep; must not throw, and must keep `metadata` whole enough
   * for the cache: name, namespace, resourceVersion, labels, deletionTimestamp, finalizers. */
  keep(obj: KubeObject): KubeObject;
  /** Keep a digest of `spec` (see `specDigest`) beside the projected object. */
  digestSpec?: boolean;
}

/**
 * The map keys (`f:`) of the `fieldsV1` of the operator's own server-side apply of the main
 * resource, if the object carries managedFields: the runner needs them to see fields a new desired
 * state dropped (`ownedFieldMissing`, which follows map keys only). List items (`k:`, `v:`, `i:`)
 * and `.` are dropped, and equal trees are shared: a `k:{"uid":...}` key made every EnvoyFilter's
 * tree, and its hidden class, unique (about 8 MB at 10,000 RateLimits); without them every filter
 * of a shape has the same tree.
 */
export function ownedFieldsOf(obj: KubeObject, manager = FIELD_MANAGER): unknown {
  const entries = obj.metadata.managedFields as
    | { manager?: string; operation?: string; subresource?: string; fieldsV1?: unknown }[]
    | undefined;
  const own = entries?.find((e) =>
    e.manager === manager && e.operation === "Apply" && !e.subresource
  );
  if (own?.fieldsV1 === undefined) return undefined;
  const keys = mapKeys(own.fieldsV1);
  const text = JSON.stringify(keys);
  let tree = ownedTrees.get(text);
  if (tree === undefined) {
    // Bounded: a few shapes a type in practice; past the bound, the table starts over.
    if (ownedTrees.size >= OWNED_TREES_MAX) ownedTrees.clear();
    ownedTrees.set(text, tree = deepFreeze(keys));
  }
  return tree;
}

const OWNED_TREES_MAX = 4096;
const ownedTrees = new Map<string, unknown>();

/** The `f:` keys of a fieldsV1 tree, recursively, in their order. */
function mapKeys(fields: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (fields === null || typeof fields !== "object" || Array.isArray(fields)) return out;
  for (const [k, sub] of Object.entries(fields)) {
    if (k.startsWith("f:")) out[k] = mapKeys(sub);
  }
  return out;
}

/**
 * `obj` as the cache keeps it: without `metadata.managedFields`, and frozen. The cache takes the
 * object over: everything below its top level and metadata is frozen in place, not copied (an
 * object comes from a JSON parse or a simulator copy that no one else holds, and copying a CRD's
 * 300 KB schema on every watch event was the simulator's largest cost). Callers must not change
 * an object after handing it to the cache; the freeze makes any attempt throw.
 */
export function prepareForCache(obj: KubeObject): KubeObject {
  if (Object.isFrozen(obj) && !obj.metadata.managedFields) return obj;
  const { managedFields: _dropped, ...metadata } = obj.metadata;
  return deepFreeze(withSharedStrings({ ...obj, metadata }));
}

/**
 * `obj` (a fresh copy, not frozen yet) with the short strings every cached object repeats taken
 * from one table (`shared`): apiVersion, kind, namespace, label values, owner kinds.
 */
function withSharedStrings(obj: KubeObject): KubeObject {
  const metadata = { ...obj.metadata };
  if (metadata.namespace !== undefined) metadata.namespace = shared(metadata.namespace) as string;
  if (metadata.labels) metadata.labels = sharedValues(metadata.labels);
  if (metadata.ownerReferences) {
    metadata.ownerReferences = metadata.ownerReferences.map((o) => ({
      ...o,
      apiVersion: shared(o.apiVersion) as string,
      kind: shared(o.kind) as string,
    }));
  }
  return {
    ...obj,
    apiVersion: shared(obj.apiVersion) as string,
    kind: shared(obj.kind) as string,
    metadata,
  };
}

const strings = new Map<string, string>();
const SHARED_MAX = 10_000;

/**
 * One copy of a short string that many cached objects repeat (apiVersion, kind, namespace, label
 * values): JSON parsing makes a new string for every value, about 50 bytes each. Bounded: past
 * the bound, new strings are simply not shared. Anything else is returned as it is.
 */
function shared(value: unknown): unknown {
  if (typeof value !== "string" || value.length > 64) return value;
  const hit = strings.get(value);
  if (hit !== undefined) return hit;
  if (strings.size < SHARED_MAX) strings.set(value, value);
  return value;
}

/** A map of strings with each value `shared`. */
function sharedValues(map: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(map)) out[k] = shared(v) as string;
  return out;
}

/** What a store keeps of one object: the entry, and beside it what the runner compares. */
export interface Prepared {
  object: KubeObject;
  /** The operator's own applied fields (see `ownedFieldsOf`). */
  owned: unknown;
  /** The digest of the object's spec, when its projection dropped the spec. */
  digest?: string;
}

/** The cache entry of `obj`, projected when `projection` is given. */
export function prepare(obj: KubeObject, projection: Projection | undefined): Prepared {
  const owned = ownedFieldsOf(obj);
  if (!projection) return { object: prepareForCache(obj), owned };
  const { managedFields: _dropped, ...metadata } = obj.metadata;
  const object = deepFreeze(withSharedStrings(projection.keep({ ...obj, metadata })));
  return projection.digestSpec
    ? { object, owned, digest: specDigest(obj.spec) }
    : { object, owned };
}

/** True when two cached objects differ at most in their resourceVersion. */
export function sameButVersion(a: KubeObject, b: KubeObject): boolean {
  const bare = (o: KubeObject) => ({
    ...o,
    metadata: { ...o.metadata, resourceVersion: undefined },
  });
  return deepEqual(bare(a), bare(b));
}

/** What a store keeps beside an entry, when there is anything. */
export interface Aside {
  owned?: unknown;
  digest?: string;
}

/** The aside of a prepared object; undefined when there is nothing to keep. */
export function asideOf(p: Prepared): Aside | undefined {
  if (p.owned === undefined && p.digest === undefined) return undefined;
  return p.digest === undefined ? { owned: p.owned } : { owned: p.owned, digest: p.digest };
}

/**
 * `value` in a canonical form: object keys sorted, and null, undefined, empty objects and empty
 * lists dropped from objects (the API server omits them, and the runner's `isObserved` counts them
 * as absent); list items keep their places.
 */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const v = canonical((value as Record<string, unknown>)[key]);
    if (v === null || v === undefined) continue;
    if (typeof v === "object" && Object.keys(v).length === 0) continue;
    out[key] = v;
  }
  return out;
}

const digests = new WeakMap<object, string>();

/**
 * A digest of a spec: equal for specs equal up to key order and omitted empty fields. 53 bits of
 * two 32-bit multiplicative hashes of the canonical JSON (a chance of about 1 in 10^16 that two
 * different specs collide). A frozen spec's digest is remembered for its life.
 */
export function specDigest(spec: unknown): string {
  const memo = spec !== null && typeof spec === "object" && Object.isFrozen(spec);
  if (memo) {
    const hit = digests.get(spec);
    if (hit !== undefined) return hit;
  }
  const text = JSON.stringify(canonical(spec)) ?? "undefined";
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  const digest = (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(16).padStart(14, "0");
  if (memo) digests.set(spec, digest);
  return digest;
}
