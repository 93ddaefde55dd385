/**
 * Secondary indexes of one watch cache (client-go's Indexer): each index files every cached object
 * under the values its `keys` function gives, and is kept in step as the cache changes, so a
 * lookup by value costs the objects found rather than a scan of the type.
 *
 * Most values file one object (a RateLimit's selector pair, a Pod's own label), and an index holds
 * one entry per object and value: at ten thousand RateLimits a Map and a sorted list per value were
 * about 16 MB. A value with one object holds just that object; only lists longer than
 * `CACHED_LIST` are kept sorted between lookups.
 */
import { type KubeObject, objectKey } from "../../api/object.ts";

/** Lists up to this long are sorted on each lookup rather than kept. */
const CACHED_LIST = 16;

/** What a value files: one object, or several by key. */
type Filed = KubeObject | Map<string, KubeObject>;

/** One index: objects filed under the values `keys` gives them. */
interface Index {
  keys: (obj: KubeObject) => string[];
  entries: Map<string, Filed>;
  /** value → its objects in key order, for long lists: made on first read, dropped on change. */
  sorted: Map<string, readonly KubeObject[]>;
}

const byKeyOrder = ([a]: [string, KubeObject], [b]: [string, KubeObject]) =>
  a < b ? -1 : a > b ? 1 : 0;

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
        if (filed === undefined) continue;
        if (filed instanceof Map) {
          if (!filed.delete(key)) continue;
          if (filed.size === 1) index.entries.set(value, filed.values().next().value!);
        } else if (objectKey(filed) === key) index.entries.delete(value);
        else continue;
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
    const filed = index.entries.get(value);
    if (filed === undefined) return EMPTY;
    if (!(filed instanceof Map)) return [filed];
    if (filed.size <= CACHED_LIST) return [...filed].sort(byKeyOrder).map(([, o]) => o);
    let list = index.sorted.get(value);
    if (list === undefined) {
      list = Object.freeze([...filed].sort(byKeyOrder).map(([, o]) => o));
      index.sorted.set(value, list);
    }
    return list;
  }
}

const EMPTY: readonly KubeObject[] = Object.freeze([]);

function fileUnder(index: Index, key: string, obj: KubeObject): void {
  for (const value of new Set(index.keys(obj))) {
    const filed = index.entries.get(value);
    if (filed === undefined) index.entries.set(value, obj);
    else if (filed instanceof Map) filed.set(key, obj);
    else {
      const other = objectKey(filed);
      index.entries.set(value, other === key ? obj : new Map([[other, filed], [key, obj]]));
    }
    index.sorted.delete(value);
  }
}
