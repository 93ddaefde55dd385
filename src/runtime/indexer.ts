/**
 * Secondary indexes of one watch cache (client-go's Indexer): each index files every cached object
 * under the values its `keys` function gives, and is kept in step as the cache changes, so a
 * lookup by value costs the objects found rather than a scan of the type.
 */
import type { KubeObject } from "./cluster.ts";

/** One index: objects filed under the values `keys` gives them. */
interface Index {
  keys: (obj: KubeObject) => string[];
  /** value → object key → object. */
  entries: Map<string, Map<string, KubeObject>>;
  /** value → its objects in key order, made on first read and dropped when the value changes. */
  sorted: Map<string, readonly KubeObject[]>;
}

/** The indexes of one store. */
export class Indexer {
  readonly #indexes = new Map<string, Index>();

  /** Adds index `name` and files `objects` (key → object) in it; throws when `name` is taken. */
  add(
    name: string,
    keys: (obj: KubeObject) => string[],
    objects: ReadonlyMap<string, KubeObject>,
  ): void {
    if (this.#indexes.has(name)) throw new Error(`index ${name} exists already`);
    const index: Index = { keys, entries: new Map(), sorted: new Map() };
    this.#indexes.set(name, index);
    for (const [key, obj] of objects) fileUnder(index, key, obj);
  }

  /** Files `obj` (cached under `key`) in every index. */
  put(key: string, obj: KubeObject): void {
    for (const index of this.#indexes.values()) fileUnder(index, key, obj);
  }

  /** Takes `obj` (as it was filed under `key`) out of every index. */
  remove(key: string, obj: KubeObject): void {
    for (const index of this.#indexes.values()) {
      for (const value of new Set(index.keys(obj))) {
        const filed = index.entries.get(value);
        if (!filed?.delete(key)) continue;
        if (filed.size === 0) index.entries.delete(value);
        index.sorted.delete(value);
      }
    }
  }

  /** Files `objects` afresh in every index (after a relist replaced them all). */
  rebuild(objects: ReadonlyMap<string, KubeObject>): void {
    for (const index of this.#indexes.values()) {
      index.entries.clear();
      index.sorted.clear();
      for (const [key, obj] of objects) fileUnder(index, key, obj);
    }
  }

  /** The objects index `name` files under `value`, in key order; undefined for no such index. */
  byIndex(name: string, value: string): readonly KubeObject[] | undefined {
    const index = this.#indexes.get(name);
    if (!index) return undefined;
    let list = index.sorted.get(value);
    if (list === undefined) {
      const filed = index.entries.get(value);
      list = Object.freeze(
        filed ? [...filed].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, o]) => o) : [],
      );
      index.sorted.set(value, list);
    }
    return list;
  }
}

function fileUnder(index: Index, key: string, obj: KubeObject): void {
  for (const value of new Set(index.keys(obj))) {
    let filed = index.entries.get(value);
    if (!filed) index.entries.set(value, filed = new Map());
    filed.set(key, obj);
    index.sorted.delete(value);
  }
}
