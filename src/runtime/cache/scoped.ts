/**
 * A scoped watch (`WatchSpec.scopes`): instead of listing and watching a whole type (every Pod of
 * the cluster), one watch a distinct scope that some primary object names (the Pods of a
 * namespace holding a RateLimit), each with a store of its own, opened while some primary names
 * it and closed, forgetting what it cached, when none does. A primary is ready to reconcile once
 * every scope it names has listed; a key that was not is parked and handed back when they have.
 */
import {
  type KubeObject,
  objectKey,
  type Projection,
  type ResourceType,
  splitKey,
} from "../../api/object.ts";
import {
  type CacheChange,
  type CacheReader,
  type PlannedWatch,
  scopeId,
  type WatchScope,
} from "../controller_spec.ts";
import type { CacheStore } from "./store.ts";
import type { WatcherEvent } from "./watcher_event.ts";

/** What a scoped watch does with a scope's Watcher (watcher.ts). */
export interface ScopeWatcher {
  run(signal: AbortSignal): Promise<void>;
  relist(): boolean;
}

/** One scope's watch: its store, its watcher while open, and the keys waiting for its list. */
interface ScopeSlot {
  scope: WatchScope;
  store: CacheStore;
  /** Primary objects naming it. */
  count: number;
  /** Keys of primaries that asked to reconcile before it had listed. */
  waiting: Set<string>;
  open?: { watcher: ScopeWatcher; stop: AbortController; task: Promise<void> };
}

/** What a scoped watch does with the manager's Cache (cache.ts): its stores come and go. */
export interface ScopedCache {
  store(
    type: ResourceType,
    labelSelector?: string,
    projection?: Projection,
    namespace?: string,
  ): CacheStore;
  declare(type: ResourceType): void;
  drop(store: CacheStore): void;
}

/** What a scoped watch needs from its WatchSet. */
export interface ScopedWatchOptions {
  planned: PlannedWatch & { scoped: NonNullable<PlannedWatch["scoped"]> };
  cache: ScopedCache;
  /** A watcher of `scope` feeding `sink`. */
  make(scope: WatchScope, sink: (ev: WatcherEvent) => void): ScopeWatcher;
  /** A store of this watch changed (as WatchSet's onChange). */
  onChange(type: ResourceType, change: CacheChange): void;
  /** A scope listed: these parked keys of the primary may be ready now. */
  onReady(primary: ResourceType, keys: string[]): void;
  /** A scope finished a (re)list, or was closed: it is no longer waited for. */
  onListed(store: CacheStore): void;
}

/** The watches of one scoped (type, controller). */
export class ScopedWatch {
  readonly #o: ScopedWatchOptions;
  /** The scope ids each primary key names now. */
  readonly #demand = new Map<string, string[]>();
  readonly #slots = new Map<string, ScopeSlot>();
  #signal: AbortSignal | undefined;
  /** The watches opened and not ended yet. */
  readonly #tasks = new Set<Promise<void>>();
  /** Scopes opened before their primaries' list ended (`listing`), held once until `listed`. */
  readonly #ahead = new Set<string>();

  constructor(o: ScopedWatchOptions) {
    this.#o = o;
    o.cache.declare(o.planned.type);
  }

  /** The type its primaries are of. */
  get primary(): ResourceType {
    return this.#o.planned.scoped.primary;
  }

  /** Starts opening scopes: those named already at once, later ones as they are named. */
  run(signal: AbortSignal): void {
    this.#signal = signal;
    for (const slot of this.#slots.values()) this.#open(slot);
  }

  /** Settles when every watch opened has ended (after `run`'s signal aborted). */
  done(): Promise<void> {
    return Promise.all([...this.#tasks]).then(() => undefined);
  }

  /** A primary object changed: the scopes it names are counted again. */
  primaryChanged(change: CacheChange, cache: CacheReader): void {
    const key = objectKey(change.object);
    const before = this.#demand.get(key) ?? [];
    const scopes = change.type === "apply" ? this.#scopesOf(change, cache) : [];
    const ids = scopes.map(scopeId);
    if (ids.length === before.length && ids.every((id, i) => id === before[i])) return;
    if (ids.length > 0) this.#demand.set(key, ids);
    else this.#demand.delete(key);
    scopes.forEach((scope, i) => this.#take(ids[i], scope));
    for (const id of before) this.#release(id);
  }

  /**
   * A primary object arrived in a page of its type's list, which the cache takes in only once the
   * whole list has come: the scopes it names open now, so that their lists run beside the
   * primaries' later pages instead of after them (at start-up, a namespace's Pods were listed only
   * once every RateLimit had been). Each is held until `listed`, when what the list named has been
   * counted; a scope nothing names by then closes.
   */
  listing(object: KubeObject, cache: CacheReader): void {
    for (const scope of this.#scopesOf({ type: "apply", object }, cache)) {
      const id = scopeId(scope);
      if (this.#ahead.has(id)) continue;
      this.#ahead.add(id);
      this.#take(id, scope);
    }
  }

  /** The primaries' list has ended (its changes counted): scopes held by `listing` are let go. */
  listed(): void {
    if (this.#ahead.size === 0) return;
    const ahead = [...this.#ahead];
    this.#ahead.clear();
    for (const id of ahead) this.#release(id);
  }

  #scopesOf(change: CacheChange, cache: CacheReader): WatchScope[] {
    const seen = new Set<string>();
    return this.#o.planned.scoped.scopes(change.object, cache).filter((s) => {
      const id = scopeId(s);
      if (seen.has(id)) return false;
      seen.add(id);
      return true;
    });
  }

  /**
   * True when every scope `key` names, with `cache` as it is now, has listed (or it names none);
   * otherwise the key is parked and handed to `onReady` once they have.
   */
  ready(key: string, cache: CacheReader): boolean {
    // Counted again from what is cached now: the scopes may read other types (a RateLimit's
    // EnvoyFilter), which may have been listed after the primary's last change.
    const { namespace, name } = splitKey(key);
    const primary = cache.get(this.primary, this.primary.namespaced ? namespace : undefined, name);
    if (primary) this.primaryChanged({ type: "apply", object: primary }, cache);
    let ready = true;
    for (const id of this.#demand.get(key) ?? []) {
      const slot = this.#slots.get(id);
      if (!slot || slot.store.synced) continue;
      slot.waiting.add(key);
      ready = false;
    }
    return ready;
  }

  /** Lists every open scope again; returns the stores that will. */
  relist(): CacheStore[] {
    const stale: CacheStore[] = [];
    for (const slot of this.#slots.values()) {
      if (slot.open?.watcher.relist()) stale.push(slot.store);
    }
    return stale;
  }

  /** The scopes open now (for tests and logs). */
  get scopes(): WatchScope[] {
    return [...this.#slots.values()].map((s) => s.scope);
  }

  #take(id: string, scope: WatchScope): void {
    let slot = this.#slots.get(id);
    if (!slot) {
      const { type, project } = this.#o.planned;
      const store = this.#o.cache.store(type, scope.labelSelector, project, scope.namespace);
      slot = { scope, store, count: 0, waiting: new Set() };
      this.#slots.set(id, slot);
      this.#open(slot);
    }
    slot.count++;
  }

  #release(id: string): void {
    const slot = this.#slots.get(id);
    if (!slot || --slot.count > 0) return;
    this.#slots.delete(id);
    slot.open?.stop.abort();
    const type = slot.store.type;
    for (const change of slot.store.forget()) this.#o.onChange(type, change);
    this.#o.cache.drop(slot.store);
    this.#o.onListed(slot.store);
  }

  #open(slot: ScopeSlot): void {
    const signal = this.#signal;
    if (!signal || signal.aborted || slot.open) return;
    const stop = new AbortController();
    const watcher = this.#o.make(slot.scope, (ev) => this.#handle(slot, ev));
    const task = watcher.run(AbortSignal.any([signal, stop.signal]));
    this.#tasks.add(task);
    void task.finally(() => this.#tasks.delete(task));
    slot.open = { watcher, stop, task };
  }

  #handle(slot: ScopeSlot, ev: WatcherEvent): void {
    // A closed scope's watcher may still be stepping: what it says is no longer read.
    if (this.#slots.get(scopeId(slot.scope)) !== slot) return;
    const type = slot.store.type;
    for (const change of slot.store.handle(ev)) this.#o.onChange(type, change);
    if (ev.type === "init-done") {
      this.#o.onListed(slot.store);
      if (slot.waiting.size > 0) {
        const keys = [...slot.waiting];
        slot.waiting.clear();
        this.#o.onReady(this.primary, keys);
      }
    }
  }
}
