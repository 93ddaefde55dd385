/**
 * The cache of one watch (kube-rs's reflector store), filled by a watcher's events and by this
 * replica's own writes (JOSDK's read-after-write cache): an object a write got back is cached at
 * once when it is newer than anything the watch has shown, and the watch's older events for it are
 * then ignored until the watch catches up. Cached objects are frozen and carry no
 * `metadata.managedFields` (about two thirds of a cached object's memory); the operator's own
 * applied `fieldsV1` is kept beside them.
 */
import { FIELD_MANAGER } from "../reconcile/labels.ts";
import { type KubeObject, objectKey, type ResourceType } from "./cluster.ts";
import { Indexer } from "./indexer.ts";
import { type LabelMatcher, parseSelector } from "./selector.ts";

/** What a watcher tells its store (kube-rs `watcher::Event`). */
export type WatcherEvent =
  /** A (re)list starts; the following init-apply events are its whole result. */
  | { type: "init" }
  | { type: "init-apply"; object: KubeObject }
  /** The (re)list (at `resourceVersion`) is complete: the store now holds what it listed. */
  | { type: "init-done"; resourceVersion?: string }
  /** The type is not served (its CRD is missing): the store is empty and synced, but not live. */
  | { type: "missing" }
  | { type: "apply"; object: KubeObject }
  | { type: "delete"; object: KubeObject };

/** A change a store made: what the manager turns into queue keys. */
export type CacheChange =
  | { type: "apply"; object: KubeObject; old?: KubeObject }
  | { type: "delete"; object: KubeObject };

function deepFreeze<T>(value: T): T {
  if (value && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/**
 * The `fieldsV1` of the operator's own server-side apply of the main resource, if the object
 * carries managedFields. The runner needs it to see fields a new desired state dropped.
 */
export function ownedFieldsOf(obj: KubeObject, manager = FIELD_MANAGER): unknown {
  const entries = obj.metadata.managedFields as
    | { manager?: string; operation?: string; subresource?: string; fieldsV1?: unknown }[]
    | undefined;
  const own = entries?.find((e) =>
    e.manager === manager && e.operation === "Apply" && !e.subresource
  );
  if (own?.fieldsV1 === undefined) return undefined;
  // A frozen input (the simulator's) can be shared; a CRD's field set is as large as its schema.
  return Object.isFrozen(own.fieldsV1) ? own.fieldsV1 : deepFreeze(structuredClone(own.fieldsV1));
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
  return deepFreeze({ ...obj, metadata });
}

/**
 * A resourceVersion as a number, when it is one. Kubernetes documents them as opaque, but every
 * API server (etcd revisions) and the simulator issue increasing integers; anything else is not
 * compared, and then a write is simply not cached ahead of the watch.
 */
export function parseResourceVersion(rv: string | undefined): bigint | undefined {
  return rv !== undefined && /^[0-9]{1,30}$/.test(rv) ? BigInt(rv) : undefined;
}

function setOrDelete<V>(m: Map<string, V>, key: string, value: V | undefined): void {
  if (value === undefined) m.delete(key);
  else m.set(key, value);
}

/** Orders objects by namespace/name. */
export function byKey(a: KubeObject, b: KubeObject): number {
  const ka = objectKey(a);
  const kb = objectKey(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/** An object this replica wrote that the watch has not shown yet: cached (or removed) ahead of it. */
interface Written {
  rv: bigint;
  /** The write left the object gone from this store (deleted, or no longer matching the selector). */
  gone: boolean;
}

/** The cache of one watch. */
export class Store {
  #objects = new Map<string, KubeObject>();
  #owned = new Map<string, unknown>();
  #buffer: Map<string, KubeObject> | undefined;
  #bufferOwned: Map<string, unknown> | undefined;
  #sorted: KubeObject[] | undefined;
  /** Each namespace's slice of `#sorted`, made on first use and dropped with it. */
  readonly #byNamespace = new Map<string, readonly KubeObject[]>();
  #synced = false;
  #live = false;
  /** The newest resourceVersion the watch or a list has shown. */
  #seen: bigint | undefined;
  readonly #written = new Map<string, Written>();
  readonly #matches: LabelMatcher | undefined;
  readonly #indexer = new Indexer();

  constructor(readonly type: ResourceType, readonly labelSelector?: string) {
    this.#matches = parseSelector(labelSelector);
  }

  /** True once the first (re)list has completed. */
  get synced(): boolean {
    return this.#synced;
  }

  /**
   * True when the last (re)list found the type served and completed: what the store holds (even
   * nothing) is what the API server has. False before that and while the type is not served.
   */
  get live(): boolean {
    return this.#live;
  }

  /** Number of cached objects. */
  get size(): number {
    return this.#objects.size;
  }

  /**
   * Applies a watcher event and returns the changes it made. A relist reports only real changes:
   * objects whose resourceVersion differs, and deletes synthesised for objects that vanished.
   */
  handle(ev: WatcherEvent): CacheChange[] {
    switch (ev.type) {
      case "init":
        this.#buffer = new Map();
        this.#bufferOwned = new Map();
        return [];
      case "init-apply": {
        const obj = prepareForCache(ev.object);
        (this.#buffer ??= new Map()).set(objectKey(obj), obj);
        setOrDelete(this.#bufferOwned ??= new Map(), objectKey(obj), ownedFieldsOf(ev.object));
        return [];
      }
      case "init-done": {
        this.#live = true;
        const next = this.#buffer ?? new Map();
        const owned = this.#bufferOwned ?? new Map();
        this.#keepWritten(next, owned, parseResourceVersion(ev.resourceVersion));
        return this.#swap(next, owned);
      }
      case "missing":
        this.#live = false;
        this.#written.clear();
        return this.#swap(new Map(), new Map());
      case "apply": {
        if (this.#behindWrite(ev.object)) return [];
        const key = objectKey(ev.object);
        const old = this.#objects.get(key);
        if (old && old.metadata.resourceVersion === ev.object.metadata.resourceVersion) {
          // Already cached from this replica's write, which may have come back without
          // managedFields: take the operator's owned fields from the watch's copy.
          if (ev.object.metadata.managedFields) {
            setOrDelete(this.#owned, key, ownedFieldsOf(ev.object));
          }
          return [];
        }
        return [this.#put(key, prepareForCache(ev.object), ownedFieldsOf(ev.object), old)];
      }
      case "delete": {
        if (this.#behindWrite(ev.object)) return [];
        return this.#remove(objectKey(ev.object), prepareForCache(ev.object));
      }
    }
  }

  /**
   * Read-your-writes: caches `obj`, as a write of this replica got it back from the API, when it is
   * newer than what the watch has shown, so the next reconcile sees its own write. A write that
   * left the object gone (its last finalizer removed while deleting) or outside this watch's label
   * selector removes it. Never replaces a newer cached object. Returns the changes made.
   */
  written(obj: KubeObject): CacheChange[] {
    const rv = parseResourceVersion(obj.metadata.resourceVersion);
    if (!this.#live || !this.#matches || rv === undefined) return [];
    if (this.#seen !== undefined && rv <= this.#seen) return []; // the watch has shown it already
    const key = objectKey(obj);
    const old = this.#objects.get(key);
    const oldRv = parseResourceVersion(old?.metadata.resourceVersion);
    if (old && (oldRv === undefined || oldRv >= rv)) return [];
    const deleted = obj.metadata.deletionTimestamp !== undefined &&
      !(obj.metadata.finalizers?.length);
    const gone = deleted || !this.#matches(obj.metadata.labels ?? {});
    this.#written.set(key, { rv, gone });
    if (gone) return old ? this.#remove(key, old) : [];
    return [this.#put(key, prepareForCache(obj), ownedFieldsOf(obj), old)];
  }

  /**
   * True when a watch event for an object is older than this replica's cached write of it (or
   * shows a version the write already removed); once the watch reaches the write, it is trusted
   * again.
   */
  #behindWrite(obj: KubeObject): boolean {
    const rv = parseResourceVersion(obj.metadata.resourceVersion);
    if (rv !== undefined && (this.#seen === undefined || rv > this.#seen)) this.#seen = rv;
    const key = objectKey(obj);
    const w = this.#written.get(key);
    if (!w || rv === undefined) return false;
    if (rv < w.rv || (w.gone && rv === w.rv)) return true;
    this.#written.delete(key);
    return false;
  }

  /** A relist replaces the cache, except for writes newer than the list. */
  #keepWritten(
    next: Map<string, KubeObject>,
    owned: Map<string, unknown>,
    listRv: bigint | undefined,
  ): void {
    if (listRv !== undefined && (this.#seen === undefined || listRv > this.#seen)) {
      this.#seen = listRv;
    }
    for (const [key, w] of this.#written) {
      const listedRv = parseResourceVersion(next.get(key)?.metadata.resourceVersion);
      if (
        (listRv !== undefined && listRv >= w.rv) || (listedRv !== undefined && listedRv >= w.rv)
      ) {
        this.#written.delete(key);
        continue;
      }
      const mine = this.#objects.get(key);
      if (w.gone || !mine) {
        next.delete(key);
        owned.delete(key);
      } else {
        next.set(key, mine);
        setOrDelete(owned, key, this.#owned.get(key));
      }
    }
  }

  #put(key: string, obj: KubeObject, owned: unknown, old: KubeObject | undefined): CacheChange {
    const stored = this.#objects.get(key);
    if (stored) this.#indexer.remove(key, stored);
    this.#objects.set(key, obj);
    this.#indexer.put(key, obj);
    setOrDelete(this.#owned, key, owned);
    this.#listsChanged();
    return old ? { type: "apply", object: obj, old } : { type: "apply", object: obj };
  }

  #remove(key: string, object: KubeObject): CacheChange[] {
    const stored = this.#objects.get(key);
    if (!stored) return [];
    this.#indexer.remove(key, stored);
    this.#objects.delete(key);
    this.#owned.delete(key);
    this.#listsChanged();
    return [{ type: "delete", object }];
  }

  /**
   * Adds a secondary index: from now on every cached object is filed under the values `keys`
   * gives it (see `byIndex`). Throws when `name` is taken.
   */
  addIndex(name: string, keys: (obj: KubeObject) => string[]): void {
    this.#indexer.add(name, keys, this.#objects);
  }

  /** The objects index `name` files under `value`, in namespace/name order; throws for no such index. */
  byIndex(name: string, value: string): readonly KubeObject[] {
    const found = this.#indexer.byIndex(name, value);
    if (!found) throw new Error(`no index ${name} on ${this.type.plural}`);
    return found;
  }

  #swap(next: Map<string, KubeObject>, owned: Map<string, unknown>): CacheChange[] {
    const changes: CacheChange[] = [];
    for (const [key, old] of this.#objects) {
      if (!next.has(key)) changes.push({ type: "delete", object: old });
    }
    for (const [key, obj] of next) {
      const old = this.#objects.get(key);
      if (!old) changes.push({ type: "apply", object: obj });
      else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) {
        changes.push({ type: "apply", object: obj, old });
      }
    }
    this.#objects = next;
    this.#owned = owned;
    this.#indexer.rebuild(next);
    this.#buffer = undefined;
    this.#bufferOwned = undefined;
    this.#listsChanged();
    this.#synced = true;
    return changes;
  }

  /** One cached object. */
  get(namespace: string | undefined, name: string): KubeObject | undefined {
    return this.#objects.get(namespace ? `${namespace}/${name}` : name);
  }

  /** The operator's own applied fields (`fieldsV1`) of one object, when its managedFields said. */
  ownedFields(namespace: string | undefined, name: string): unknown {
    return this.#owned.get(namespace ? `${namespace}/${name}` : name);
  }

  /**
   * Cached objects in namespace/name order, optionally of one namespace; frozen, shared until the
   * store changes. A wave of reconciles reads the same lists thousands of times between changes,
   * so both the order and each namespace's slice are kept rather than made per call.
   */
  list(namespace?: string): readonly KubeObject[] {
    // The map's keys are the objects' namespace/name keys: sort by them without making any.
    this.#sorted ??= Object.freeze(
      [...this.#objects].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, o]) => o),
    ) as KubeObject[];
    if (namespace === undefined) return this.#sorted;
    let slice = this.#byNamespace.get(namespace);
    if (slice === undefined) {
      slice = Object.freeze(this.#sorted.filter((o) => o.metadata.namespace === namespace));
      this.#byNamespace.set(namespace, slice);
    }
    return slice;
  }

  #listsChanged(): void {
    this.#sorted = undefined;
    this.#byNamespace.clear();
  }
}
