/**
 * How an object becomes a cache entry: frozen, without `metadata.managedFields` (about two thirds
 * of a typical object's memory), and, for a watch that declares a projection, only what its
 * controllers read, with a digest of the spec it dropped. Also the operator's own applied
 * `fieldsV1`, kept beside the entry, and resourceVersions as numbers.
 */
import { FIELD_MANAGER } from "../../reconcile/labels.ts";
import { applyEntryOf, type KubeObject, type Projection } from "../../api/object.ts";
import { specDigest } from "../../reconcile/hash.ts";
import { deepEqual, deepFreeze } from "../../api/json.ts";

/**
 * The map keys (`f:`) of the `fieldsV1` of the operator's own server-side apply of the main
 * resource, if the object carries managedFields: the runner needs them to see fields a new desired
 * state dropped (`ownedFieldMissing`, which follows map keys only). List items (`k:`, `v:`, `i:`)
 * and `.` are dropped, and equal trees are shared: a `k:{"uid":...}` key made every EnvoyFilter's
 * tree, and its hidden class, unique (about 8 MB at 10,000 RateLimits); without them every filter
 * of a shape has the same tree.
 */
export function ownedFieldsOf(obj: KubeObject, manager = FIELD_MANAGER): unknown {
  const own = applyEntryOf(obj, manager);
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

/**
 * What `prepare` made of each frozen object, by projection: an object that cannot change is
 * prepared once, though every watch of its type and every replica's cache receives it (and a
 * replica's own write, again, from its watch).
 */
const preparedFrozen = new WeakMap<object, Map<Projection | undefined, Prepared>>();

/** The cache entry of `obj`, projected when `projection` is given. Do not change the result. */
export function prepare(obj: KubeObject, projection: Projection | undefined): Prepared {
  if (!Object.isFrozen(obj) || !Object.isFrozen(obj.metadata)) return prepareNew(obj, projection);
  let byProjection = preparedFrozen.get(obj);
  if (!byProjection) preparedFrozen.set(obj, byProjection = new Map());
  let p = byProjection.get(projection);
  if (!p) byProjection.set(projection, p = prepareNew(obj, projection));
  return p;
}

function prepareNew(obj: KubeObject, projection: Projection | undefined): Prepared {
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
