/** The stored objects of every type, by `namespace/name` and by uid, with who created each. */
import type { KubeObject, ResourceType } from "../../src/api/object.ts";
import type { Managed } from "./managed.ts";
import { typeKey } from "./types.ts";

/** One stored object: the frozen object, its field ownership, and the actor that created it. */
export interface Entry {
  obj: KubeObject;
  managed: Managed;
  creator: string;
}

/** The `namespace/name` key of an object in its type. */
export function keyOf(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/** The n-th uid the server hands out (deterministic, UUID-shaped). */
export function uidOf(n: number): string {
  return `5e1a0000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;
}

/** A type's objects in namespace/name order, and each namespace's slice of them, made on demand. */
interface Listing {
  all: KubeObject[];
  byNamespace: Map<string, KubeObject[]>;
}

/** Every stored object. */
export class ObjectTable {
  #byType = new Map<string, Map<string, Entry>>();
  #byUid = new Map<string, { rtype: ResourceType; key: string }>();
  /**
   * Sorted listings by type, dropped on every write of the type: the invariant checker lists
   * several types after every step of a run, far more often than they change.
   */
  #listings = new Map<string, Listing>();

  /** The entry of an object; a namespaced type without a namespace means `default`. */
  get(type: ResourceType, namespace: string | undefined, name: string): Entry | undefined {
    const ns = type.namespaced ? namespace ?? "default" : undefined;
    return this.#byType.get(typeKey(type))?.get(keyOf(ns, name));
  }

  /** Stores (or replaces) an entry. */
  put(type: ResourceType, entry: Entry): void {
    const { namespace, name, uid } = entry.obj.metadata;
    const key = keyOf(namespace, name);
    let bucket = this.#byType.get(typeKey(type));
    if (!bucket) this.#byType.set(typeKey(type), bucket = new Map());
    bucket.set(key, entry);
    this.#byUid.set(uid!, { rtype: type, key });
    this.#listings.delete(typeKey(type));
  }

  /** Removes an object. */
  remove(type: ResourceType, obj: KubeObject): void {
    this.#byType.get(typeKey(type))?.delete(keyOf(obj.metadata.namespace, obj.metadata.name));
    this.#byUid.delete(obj.metadata.uid!);
    this.#listings.delete(typeKey(type));
  }

  /** The objects of a type, optionally in one namespace, ordered by namespace/name. */
  list(type: { group: string; plural: string }, namespace?: string): KubeObject[] {
    const key = typeKey(type);
    let listing = this.#listings.get(key);
    if (!listing) {
      const all = [...(this.#byType.get(key)?.entries() ?? [])];
      all.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      listing = { all: all.map(([, e]) => e.obj), byNamespace: new Map() };
      this.#listings.set(key, listing);
    }
    if (namespace === undefined) return listing.all.slice();
    let inNamespace = listing.byNamespace.get(namespace);
    if (!inNamespace) {
      inNamespace = listing.all.filter((o) => o.metadata.namespace === namespace);
      listing.byNamespace.set(namespace, inNamespace);
    }
    return inNamespace.slice();
  }

  /** The entry with a uid and its type. */
  byUid(uid: string): { rtype: ResourceType; entry: Entry } | undefined {
    const ref = this.#byUid.get(uid);
    const entry = ref && this.#byType.get(typeKey(ref.rtype))?.get(ref.key);
    return ref && entry ? { rtype: ref.rtype, entry } : undefined;
  }
}
