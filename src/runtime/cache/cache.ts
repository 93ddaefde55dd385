/**
 * Watch caches: one CacheStore per watched (type, label selector) (see store.ts), read by reconcilers
 * through `CacheReader`; lists come in a stable order (namespace/name).
 */
import {
  type KubeObject,
  objectKey,
  type Projection,
  type ResourceType,
  typeId,
  typeName,
} from "../../api/object.ts";
import type { CacheChange, ControllerCache, RunnerCache } from "../controller_spec.ts";
import { byKey, CacheStore } from "./store.ts";

/** Every store of the manager, readable per type. */
export class Cache implements ControllerCache, RunnerCache {
  /**
   * The stores of each type, those that keep objects whole (no projection) first: where two
   * watches of a type hold one object (a CRD a module installed, in its module's labelled watch
   * and, as metadata only, in the RateLimit controller's), `get`, `list` and `byIndex` give the
   * whole object.
   */
  readonly #stores = new Map<string, CacheStore[]>();
  /** Indexes by type id: every store of the type, now or later, keeps them. */
  readonly #indexes = new Map<string, Map<string, (obj: KubeObject) => string[]>>();

  /**
   * The store of (type, selector), made on first use with `projection` (see `Projection`); throws
   * when it exists with another projection.
   */
  store(
    type: ResourceType,
    labelSelector?: string,
    projection?: Projection,
    namespace?: string,
  ): CacheStore {
    const id = typeId(type);
    const stores = this.#stores.get(id) ?? [];
    let store = stores.find((s) => s.labelSelector === labelSelector && s.namespace === namespace);
    if (store && store.projection !== projection) {
      const names = [store.projection, projection].map((p) => p?.name ?? "none").join(" and ");
      throw new Error(`${typeName(type)} is cached with two projections: ${names}`);
    }
    if (!store) {
      store = new CacheStore(type, labelSelector, projection, namespace);
      for (const [name, keys] of this.#indexes.get(id) ?? []) store.addIndex(name, keys);
      stores.push(store);
      // Stable: whole stores first, each group in creation order.
      stores.sort((a, b) =>
        Number(a.projection !== undefined) - Number(b.projection !== undefined)
      );
      this.#stores.set(id, stores);
    }
    return store;
  }

  /**
   * Declares a type whose stores come and go (a scoped watch's): until one exists, it reads as
   * watched and empty rather than as a type nobody watches.
   */
  declare(type: ResourceType): void {
    if (!this.#stores.has(typeId(type))) this.#stores.set(typeId(type), []);
  }

  /** Removes a store (a scoped watch closed: its objects were forgotten first). */
  drop(store: CacheStore): void {
    const stores = this.#stores.get(typeId(store.type));
    if (stores) this.#stores.set(typeId(store.type), stores.filter((s) => s !== store));
  }

  /**
   * True when some store that has listed holds every object of `type` in `namespace` (undefined:
   * every namespace) that `labelSelector` selects (undefined: all): one of the whole type, of the
   * namespace, or of exactly that selector.
   */
  covers(type: ResourceType, namespace?: string, labelSelector?: string): boolean {
    return (this.#stores.get(typeId(type)) ?? []).some((s) =>
      s.synced && (s.namespace === undefined || s.namespace === namespace) &&
      (s.labelSelector === undefined || s.labelSelector === labelSelector)
    );
  }

  /** Adds a secondary index to every store of `type` (see `CacheStore.addIndex`); throws when taken. */
  addIndex(type: ResourceType, name: string, keys: (obj: KubeObject) => string[]): void {
    const id = typeId(type);
    const indexes = this.#indexes.get(id) ?? new Map<string, (obj: KubeObject) => string[]>();
    if (indexes.has(name)) throw new Error(`index ${name} of ${typeName(type)} exists already`);
    indexes.set(name, keys);
    this.#indexes.set(id, indexes);
    for (const s of this.#stores.get(id) ?? []) s.addIndex(name, keys);
  }

  /** The objects of `type` an index files under `value`, in namespace/name order. */
  byIndex(type: ResourceType, index: string, value: string): readonly KubeObject[] {
    const stores = this.#of(type);
    if (stores.length === 1) return stores[0].byIndex(index, value);
    // Scoped stores hold one namespace each: most values are filed in one store at most.
    const found = stores.map((s) => s.byIndex(index, value)).filter((l) => l.length > 0);
    if (found.length <= 1) return found[0] ?? [];
    return merge(found);
  }

  /** Every store, in creation order. */
  stores(): CacheStore[] {
    return [...this.#stores.values()].flat();
  }

  /** True when the watch of (type, selector) exists and has completed its first list. */
  isSynced(type: ResourceType, labelSelector?: string): boolean {
    const stores = this.#stores.get(typeId(type)) ?? [];
    return stores.some((s) =>
      s.labelSelector === labelSelector && s.namespace === undefined && s.synced
    );
  }

  /** True when every watch of `type` is live (see `CacheStore.live`); throws for a type nobody watches. */
  isLive(type: ResourceType): boolean {
    return this.#of(type).every((s) => s.live);
  }

  /** True when some watch caches this type. */
  has(type: ResourceType): boolean {
    return this.#stores.has(typeId(type));
  }

  /**
   * True when some watch caches this type and every watch of it has listed: then what `get`
   * answers is what was listed. False for a watch opened on demand while it is closed (its
   * store forgot everything) or still listing: ask the API server instead.
   */
  caches(type: ResourceType): boolean {
    const stores = this.#stores.get(typeId(type));
    return stores !== undefined && stores.length > 0 && stores.every((s) => s.synced);
  }

  #of(type: ResourceType): CacheStore[] {
    const stores = this.#stores.get(typeId(type));
    if (!stores) {
      throw new Error(`${typeName(type)} is not watched: add it to the controller's watches`);
    }
    return stores;
  }

  /** All cached objects of a type in namespace/name order; throws for a type nobody watches. */
  list(type: ResourceType, namespace?: string): readonly KubeObject[] {
    const stores = this.#of(type);
    if (stores.length === 1) return stores[0].list(namespace);
    if (stores.length === 0) return [];
    return merge(stores.map((s) => s.list(namespace)));
  }

  /**
   * Read-your-writes: offers an object a write got back to every store of its type (see
   * `CacheStore.written`); returns the changes made. A type nobody watches is left alone.
   */
  written(type: ResourceType, obj: KubeObject): CacheChange[] {
    return (this.#stores.get(typeId(type)) ?? []).flatMap((s) => s.written(obj));
  }

  /** The operator's own applied fields of one object (see `CacheStore.ownedFields`). */
  ownedFields(type: ResourceType, namespace: string | undefined, name: string): unknown {
    for (const s of this.#of(type)) {
      const f = s.ownedFields(namespace, name);
      if (f !== undefined) return f;
    }
    return undefined;
  }

  /** The digest of one object's spec, when its store's projection keeps one. */
  specDigest(type: ResourceType, namespace: string | undefined, name: string): string | undefined {
    for (const s of this.#stores.get(typeId(type)) ?? []) {
      const d = s.specDigest(namespace, name);
      if (d !== undefined) return d;
    }
    return undefined;
  }

  /**
   * One cached object; throws for a type nobody watches. Held by more than one store, it is the
   * whole object's copy where one is whole (see `#stores`).
   */
  get(type: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    for (const s of this.#of(type)) {
      const o = s.get(namespace, name);
      if (o) return o;
    }
    return undefined;
  }
}

/** Lists merged in namespace/name order; of an object in more than one, the earliest list's copy. */
function merge(lists: readonly (readonly KubeObject[])[]): KubeObject[] {
  const merged = new Map<string, KubeObject>();
  for (const l of lists) {
    for (const o of l) {
      const key = objectKey(o);
      if (!merged.has(key)) merged.set(key, o);
    }
  }
  return [...merged.values()].sort(byKey);
}
