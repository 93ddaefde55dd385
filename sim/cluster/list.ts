/**
 * List with label selectors and paging. A first page freezes a snapshot of the result at the
 * list's resourceVersion; `continue` serves the next page of that snapshot, like etcd reading at a
 * fixed revision, and gives 410 once that revision is older than the type's retained history.
 */
import type { ListOptions, ListPage } from "../../src/runtime/mod.ts";
import type { KubeObject, ResourceType } from "../../src/api/object.ts";
import { badRequest, gone } from "./errors.ts";
import { selectorOf } from "./selector.ts";
import type { Store } from "./store.ts";
import { typeKey } from "./types.ts";

interface Snapshot {
  typeKey: string;
  rv: number;
  items: KubeObject[];
}

/** Serves lists from a store. */
export class Lister {
  #snapshots = new Map<string, Snapshot>();
  #next = 0;

  constructor(readonly store: Store) {}

  /** One page of a list. */
  list(type: ResourceType, opts: ListOptions = {}): ListPage {
    const t = this.store.types.resolve(type);
    let snap: Snapshot;
    let offset = 0;
    if (opts.continue) {
      const [id, at] = opts.continue.split(":");
      const found = this.#snapshots.get(id);
      if (!found || found.typeKey !== typeKey(t)) {
        throw badRequest(`invalid continue token ${JSON.stringify(opts.continue)}`);
      }
      if (!this.store.history(t).retains(found.rv)) {
        this.#snapshots.delete(id);
        throw gone(found.rv, this.store.history(t).compacted + 1);
      }
      snap = found;
      offset = Number(at);
    } else {
      const select = selectorOf(opts.labelSelector);
      const items = this.store.objects(t, t.namespaced ? opts.namespace : undefined).filter((o) =>
        select(o.metadata.labels)
      );
      snap = { typeKey: typeKey(t), rv: this.store.rv, items };
    }
    const limit = opts.limit && opts.limit > 0 ? opts.limit : Infinity;
    const items = snap.items.slice(offset, offset + limit);
    const end = offset + items.length;
    let token: string | undefined;
    const id = opts.continue?.split(":")[0];
    if (end < snap.items.length) {
      const key = id ?? String(this.#next++);
      this.#snapshots.set(key, snap);
      token = `${key}:${end}`;
    } else if (id) this.#snapshots.delete(id);
    return { items, resourceVersion: String(snap.rv), ...(token ? { continue: token } : {}) };
  }
}
