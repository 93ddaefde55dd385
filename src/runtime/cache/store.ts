/**
 * The cache of one watch (kube-rs's reflector store), filled by a watcher's events and by this
 * replica's own writes (JOSDK's read-after-write cache): an object a write got back is cached at
 * once when it is newer than anything the watch has shown, and the watch's older events for it are
 * then ignored until the watch catches up. Cached objects are frozen and carry no
 * `metadata.managedFields` (about two thirds of a cached object's memory), or only what a
 * projection keeps (prepare.ts); the operator's own applied `fieldsV1`, and the digest of a
 * projected spec, are kept beside them.
 */
import {
  type KubeObject,
  objectKey,
  parseResourceVersion,
  type Projection,
  type ResourceType,
} from "../../api/object.ts";
import { Indexer } from "./indexer.ts";
import { type Aside, asideOf, prepare, type Prepared, sameButVersion } from "./prepare.ts";
import { type LabelMatcher, parseSelector } from "../../api/selector.ts";
import { WriteFence } from "./write_fence.ts";
import type { WatcherEvent } from "./watcher_event.ts";
import type { CacheChange } from "../controller_spec.ts";

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

/** The cache of one watch. */
export class CacheStore {
  #objects = new Map<string, KubeObject>();
  /** What is kept beside each entry that has any: owned fields, spec digest. */
  #aside = new Map<string, Aside>();
  #buffer: Map<string, KubeObject> | undefined;
  #bufferAside: Map<string, Aside> | undefined;
  #sorted: KubeObject[] | undefined;
  /** Each namespace's slice of `#sorted`, made on first use and dropped with it. */
  readonly #byNamespace = new Map<string, readonly KubeObject[]>();
  #synced = false;
  #live = false;
  readonly #fence = new WriteFence();
  readonly #matches: LabelMatcher | undefined;
  readonly #indexer = new Indexer();
  /**
   * Entries cached from this replica's write whose answer carried managedFields: their aside is
   * whole, so the watch's copy of the same version adds nothing (`handle`, "apply").
   */
  readonly #writtenWhole = new WeakSet<KubeObject>();

  constructor(
    readonly type: ResourceType,
    readonly labelSelector?: string,
    /** What the store keeps of each object; undefined: all of it but managedFields. */
    readonly projection?: Projection,
    /** The one namespace its watch covers; undefined: every namespace. */
    readonly namespace?: string,
  ) {
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
        this.#bufferAside = new Map();
        return [];
      case "init-apply": {
        const p = this.#prepare(ev.object);
        const key = objectKey(p.object);
        (this.#buffer ??= new Map()).set(key, p.object);
        setOrDelete(this.#bufferAside ??= new Map(), key, asideOf(p));
        return [];
      }
      case "init-done": {
        this.#live = true;
        const next = this.#buffer ?? new Map();
        const aside = this.#bufferAside ?? new Map();
        this.#keepWritten(next, aside, parseResourceVersion(ev.resourceVersion));
        return this.#swap(next, aside);
      }
      case "missing":
        this.#live = false;
        this.#fence.clear();
        return this.#swap(new Map(), new Map());
      case "apply": {
        if (this.#behindWrite(ev.object)) return [];
        const key = objectKey(ev.object);
        const old = this.#objects.get(key);
        if (old && old.metadata.resourceVersion === ev.object.metadata.resourceVersion) {
          // Already cached from this replica's write, which may have come back without
          // managedFields: take the operator's owned fields from the watch's copy. When it came
          // with them, the same version's are the same: nothing to prepare again.
          if (ev.object.metadata.managedFields && !this.#writtenWhole.has(old)) {
            setOrDelete(this.#aside, key, asideOf(this.#prepare(ev.object)));
          }
          return [];
        }
        const p = this.#prepare(ev.object);
        // Nothing a projection keeps changed (a Pod's status, say): no reader can tell.
        const unseen = this.projection !== undefined && old !== undefined &&
          this.#aside.get(key)?.digest === p.digest && sameButVersion(old, p.object);
        const change = this.#put(key, p, old);
        return unseen ? [] : [change];
      }
      case "delete": {
        if (this.#behindWrite(ev.object)) return [];
        return this.#remove(objectKey(ev.object), this.#prepare(ev.object).object);
      }
    }
  }

  /**
   * Read-your-writes (write_fence.ts): caches `obj`, as a write of this replica got it back from the API, when it is
   * newer than what the watch has shown, so the next reconcile sees its own write. A write that
   * left the object gone (its last finalizer removed while deleting) or outside this watch's label
   * selector removes it. Never replaces a newer cached object. Returns the changes made.
   */
  written(obj: KubeObject): CacheChange[] {
    const rv = parseResourceVersion(obj.metadata.resourceVersion);
    if (!this.#live || !this.#matches || rv === undefined) return [];
    // Not this watch's namespace: no event of it would ever come to update or remove it.
    if (this.namespace !== undefined && obj.metadata.namespace !== this.namespace) return [];
    if (this.#fence.shown(rv)) return []; // the watch has shown it already
    const key = objectKey(obj);
    const old = this.#objects.get(key);
    const oldRv = parseResourceVersion(old?.metadata.resourceVersion);
    if (old && (oldRv === undefined || oldRv >= rv)) return [];
    const deleted = obj.metadata.deletionTimestamp !== undefined &&
      !(obj.metadata.finalizers?.length);
    const gone = deleted || !this.#matches(obj.metadata.labels ?? {});
    this.#fence.wrote(key, rv, gone);
    if (gone) return old ? this.#remove(key, old) : [];
    const p = this.#prepare(obj);
    if (obj.metadata.managedFields) this.#writtenWhole.add(p.object);
    return [this.#put(key, p, old)];
  }

  /** True when a watch event for `obj` is older than this replica's cached write of it. */
  #behindWrite(obj: KubeObject): boolean {
    return this.#fence.behind(objectKey(obj), obj);
  }

  /** A relist replaces the cache, except for writes newer than the list. */
  #keepWritten(
    next: Map<string, KubeObject>,
    aside: Map<string, Aside>,
    listRv: bigint | undefined,
  ): void {
    const listed = (key: string) => parseResourceVersion(next.get(key)?.metadata.resourceVersion);
    for (const { key, gone } of this.#fence.newerThanList(listRv, listed)) {
      const mine = this.#objects.get(key);
      if (gone || !mine) {
        next.delete(key);
        aside.delete(key);
      } else {
        next.set(key, mine);
        setOrDelete(aside, key, this.#aside.get(key));
      }
    }
  }

  #prepare(obj: KubeObject): Prepared {
    return prepare(obj, this.projection);
  }

  #put(key: string, p: Prepared, old: KubeObject | undefined): CacheChange {
    const obj = p.object;
    const stored = this.#objects.get(key);
    if (stored) this.#indexer.remove(key, stored);
    this.#objects.set(key, obj);
    this.#indexer.put(key, obj);
    setOrDelete(this.#aside, key, asideOf(p));
    this.#listsChanged();
    return old ? { type: "apply", object: obj, old } : { type: "apply", object: obj };
  }

  #remove(key: string, object: KubeObject): CacheChange[] {
    const stored = this.#objects.get(key);
    if (!stored) return [];
    this.#indexer.remove(key, stored);
    this.#objects.delete(key);
    this.#aside.delete(key);
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

  #swap(next: Map<string, KubeObject>, aside: Map<string, Aside>): CacheChange[] {
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
    this.#aside = aside;
    this.#indexer.rebuild(next);
    this.#buffer = undefined;
    this.#bufferAside = undefined;
    this.#listsChanged();
    this.#synced = true;
    return changes;
  }

  /**
   * The watch was closed because nothing reads it now: forget every object (the changes are
   * their deletes). Not synced and not live until a list completes again.
   */
  forget(): CacheChange[] {
    const changes = this.#swap(new Map(), new Map());
    this.#synced = false;
    this.#live = false;
    this.#fence.clear();
    return changes;
  }

  /** One cached object. */
  get(namespace: string | undefined, name: string): KubeObject | undefined {
    return this.#objects.get(namespace ? `${namespace}/${name}` : name);
  }

  /** The operator's own applied fields (`fieldsV1`) of one object, when its managedFields said. */
  ownedFields(namespace: string | undefined, name: string): unknown {
    return this.#aside.get(namespace ? `${namespace}/${name}` : name)?.owned;
  }

  /** The digest of one object's spec, when this store's projection keeps one (see `specDigest`). */
  specDigest(namespace: string | undefined, name: string): string | undefined {
    return this.#aside.get(namespace ? `${namespace}/${name}` : name)?.digest;
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
