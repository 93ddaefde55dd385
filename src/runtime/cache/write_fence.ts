/**
 * A store's read-your-writes bookkeeping (JOSDK's read-after-write cache): the objects this
 * replica wrote that the watch has not shown yet, and the newest resourceVersion the watch or a
 * list has shown. While a write is ahead of the watch, the watch's older events for the object are
 * ignored; once the watch reaches it, the watch is trusted again.
 */
import { type KubeObject, parseResourceVersion } from "../../api/object.ts";

/** An object this replica wrote that the watch has not shown yet: cached (or removed) ahead of it. */
interface Written {
  rv: bigint;
  /** The write left the object gone from the store (deleted, or no longer matching the selector). */
  gone: boolean;
}

/** What a relist keeps of the store's own writes: the entry, or that it is gone. */
export interface FencedEntry {
  key: string;
  gone: boolean;
}

/** The writes of one store that are ahead of its watch. */
export class WriteFence {
  /** The newest resourceVersion the watch or a list has shown. */
  #seen: bigint | undefined;
  readonly #written = new Map<string, Written>();

  /** True when the watch has already shown version `rv` or a newer one. */
  shown(rv: bigint): boolean {
    return this.#seen !== undefined && rv <= this.#seen;
  }

  /** Records a write of `key` at `rv` that the store applied ahead of the watch. */
  wrote(key: string, rv: bigint, gone: boolean): void {
    this.#written.set(key, { rv, gone });
  }

  /**
   * True when a watch event for `obj` (at `key`) is older than this replica's cached write of it
   * (or shows a version the write already removed); once the watch reaches the write, the fence
   * for it is lifted.
   */
  behind(key: string, obj: KubeObject): boolean {
    const rv = parseResourceVersion(obj.metadata.resourceVersion);
    if (rv !== undefined && (this.#seen === undefined || rv > this.#seen)) this.#seen = rv;
    const w = this.#written.get(key);
    if (!w || rv === undefined) return false;
    if (rv < w.rv || (w.gone && rv === w.rv)) return true;
    this.#written.delete(key);
    return false;
  }

  /**
   * After a relist at `listRv` that found `listedRv(key)`: the writes still newer than the list,
   * each with whether it left its object gone. Writes the list caught up with are forgotten.
   */
  newerThanList(
    listRv: bigint | undefined,
    listedRv: (key: string) => bigint | undefined,
  ): FencedEntry[] {
    if (listRv !== undefined && (this.#seen === undefined || listRv > this.#seen)) {
      this.#seen = listRv;
    }
    const kept: FencedEntry[] = [];
    for (const [key, w] of this.#written) {
      const listed = listedRv(key);
      if ((listRv !== undefined && listRv >= w.rv) || (listed !== undefined && listed >= w.rv)) {
        this.#written.delete(key);
      } else kept.push({ key, gone: w.gone });
    }
    return kept;
  }

  /** Forgets every write (the type is no longer served). */
  clear(): void {
    this.#written.clear();
  }
}
