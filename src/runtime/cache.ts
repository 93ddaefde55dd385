/**
 * Watch caches (kube-rs's reflector store): one Store per watched (type, label selector), filled
 * by a watcher's events, read by reconcilers through `CacheReader`. Cached objects are frozen and
 * carry no `metadata.managedFields` (about two thirds of a cached object's memory); lists come in
 * a stable order (namespace/name).
 */
import { FIELD_MANAGER } from "../reconcile/labels.ts";
import { type KubeObject, objectKey, type ResourceType } from "./cluster.ts";
import type { CacheReader } from "./controller.ts";

/** What a watcher tells its store (kube-rs `watcher::Event`). */
export type WatcherEvent =
  /** A (re)list starts; the following init-apply events are its whole result. */
  | { type: "init" }
  | { type: "init-apply"; object: KubeObject }
  /** The (re)list is complete: the store now holds exactly what it listed. */
  | { type: "init-done" }
  /** The type is not served (its CRD is missing): the store is empty and synced, but not live. */
  | { type: "missing" }
  | { type: "apply"; object: KubeObject }
  | { type: "delete"; object: KubeObject };

/** A change a store made: what the manager turns into queue keys. */
export type CacheChange =
  | { type: "apply"; object: KubeObject; old?: KubeObject }
  | { type: "delete"; object: KubeObject };

/** A stable id of a resource type (group/version/plural). */
export function typeId(type: ResourceType): string {
  return `${type.group}/${type.version}/${type.plural}`;
}

/** A readable name of a type, as in `kubectl get <plural>.<group>`. */
export function typeName(type: ResourceType): string {
  return type.group ? `${type.plural}.${type.group}` : type.plural;
}

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
  return own?.fieldsV1 === undefined ? undefined : deepFreeze(structuredClone(own.fieldsV1));
}

/** A frozen copy of `obj` without `metadata.managedFields` (the input is not changed). */
export function prepareForCache(obj: KubeObject): KubeObject {
  if (Object.isFrozen(obj) && !obj.metadata.managedFields) return obj;
  const { managedFields: _dropped, ...metadata } = obj.metadata;
  return deepFreeze(structuredClone({ ...obj, metadata }));
}

function setOrDelete<V>(m: Map<string, V>, key: string, value: V | undefined): void {
  if (value === undefined) m.delete(key);
  else m.set(key, value);
}

function byKey(a: KubeObject, b: KubeObject): number {
  const ka = objectKey(a);
  const kb = objectKey(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/** The cache of one watch. */
export class Store {
  #objects = new Map<string, KubeObject>();
  #owned = new Map<string, unknown>();
  #buffer: Map<string, KubeObject> | undefined;
  #bufferOwned: Map<string, unknown> | undefined;
  #sorted: KubeObject[] | undefined;
  #synced = false;
  #live = false;

  constructor(readonly type: ResourceType, readonly labelSelector?: string) {}

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
      case "init-done":
        this.#live = true;
        return this.#swap(this.#buffer ?? new Map(), this.#bufferOwned ?? new Map());
      case "missing":
        this.#live = false;
        return this.#swap(new Map(), new Map());
      case "apply": {
        const obj = prepareForCache(ev.object);
        const key = objectKey(obj);
        const old = this.#objects.get(key);
        if (old && old.metadata.resourceVersion === obj.metadata.resourceVersion) return [];
        this.#objects.set(key, obj);
        setOrDelete(this.#owned, key, ownedFieldsOf(ev.object));
        this.#sorted = undefined;
        return [old ? { type: "apply", object: obj, old } : { type: "apply", object: obj }];
      }
      case "delete": {
        const key = objectKey(ev.object);
        if (!this.#objects.delete(key)) return [];
        this.#owned.delete(key);
        this.#sorted = undefined;
        return [{ type: "delete", object: prepareForCache(ev.object) }];
      }
    }
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
    this.#buffer = undefined;
    this.#bufferOwned = undefined;
    this.#sorted = undefined;
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

  /** Cached objects in namespace/name order, optionally of one namespace. */
  list(namespace?: string): readonly KubeObject[] {
    this.#sorted ??= Object.freeze([...this.#objects.values()].sort(byKey)) as KubeObject[];
    return namespace === undefined
      ? this.#sorted
      : this.#sorted.filter((o) => o.metadata.namespace === namespace);
  }
}

/** Every store of the manager, readable per type. */
export class Cache implements CacheReader {
  readonly #stores = new Map<string, Store[]>();

  /** The store of (type, selector), made on first use. */
  store(type: ResourceType, labelSelector?: string): Store {
    const id = typeId(type);
    const stores = this.#stores.get(id) ?? [];
    let store = stores.find((s) => s.labelSelector === labelSelector);
    if (!store) {
      store = new Store(type, labelSelector);
      stores.push(store);
      this.#stores.set(id, stores);
    }
    return store;
  }

  /** Every store, in creation order. */
  stores(): Store[] {
    return [...this.#stores.values()].flat();
  }

  /** True when every watch of `type` is live (see `Store.live`); throws for a type nobody watches. */
  isLive(type: ResourceType): boolean {
    return this.#of(type).every((s) => s.live);
  }

  /** True when some watch caches this type. */
  has(type: ResourceType): boolean {
    return this.#stores.has(typeId(type));
  }

  #of(type: ResourceType): Store[] {
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
    const merged = new Map<string, KubeObject>();
    for (const s of stores) for (const o of s.list(namespace)) merged.set(objectKey(o), o);
    return [...merged.values()].sort(byKey);
  }

  /** The operator's own applied fields of one object (see `Store.ownedFields`). */
  ownedFields(type: ResourceType, namespace: string | undefined, name: string): unknown {
    for (const s of this.#of(type)) {
      const f = s.ownedFields(namespace, name);
      if (f !== undefined) return f;
    }
    return undefined;
  }

  /** One cached object; throws for a type nobody watches. */
  get(type: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    for (const s of this.#of(type)) {
      const o = s.get(namespace, name);
      if (o) return o;
    }
    return undefined;
  }
}
