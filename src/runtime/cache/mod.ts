/**
 * The watch cache, and its front: a manager's watches (`WatchSet`), one Watcher feeding one
 * CacheStore per (type, label selector) its controllers read, whether they have synced, and the kick
 * that wakes a watch that is not live when its type's CRD appears; the `Cache` its controllers read.
 * Everything else in this folder is private to it.
 *
 * store.ts (one watch's objects), cache.ts (every store, read by type), watcher.ts (list and watch
 * as a state machine, with watcher_state.ts and watcher_report.ts), watcher_event.ts (what a
 * watcher tells its store), prepare.ts (an object as cached), indexer.ts, write_fence.ts.
 */
import {
  type KubeObject,
  type Projection,
  type ResourceType,
  typeId,
  typeName,
} from "../../api/object.ts";
import type { Clock, Random } from "../clock.ts";
import type { Cluster } from "../cluster.ts";
import {
  type CacheChange,
  type ControllerSpec,
  type PlannedWatch,
  planWatches,
} from "../controller_spec.ts";
import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics.ts";
import type { Cache } from "./cache.ts";
import type { CacheStore } from "./store.ts";
import { Watcher } from "./watcher.ts";
import type { WatcherEvent } from "./watcher_event.ts";
import { ScopedWatch } from "./scoped.ts";

export { Cache } from "./cache.ts";
export { CacheStore } from "./store.ts";
export { ownedFieldsOf, prepare } from "./prepare.ts";
export { DEFAULT_WATCH_IDLE_MS, Watcher } from "./watcher.ts";
export type { WatcherOptions, WatcherState } from "./watcher_state.ts";
export { DEFAULT_PAGE_SIZE } from "./watcher_state.ts";
export type { WatcherEvent } from "./watcher_event.ts";

/** What the watches need, and whom they tell. */
export interface WatchSetOptions {
  cluster: Cluster;
  clock: Clock;
  random: Random;
  log: Logger;
  metrics: Metrics;
  cache: Cache;
  controllers: readonly ControllerSpec[];
  /** The operator's namespace, for watches of `ownNamespace` objects. */
  namespace: string;
  pageSize?: number;
  timeoutSeconds?: number;
  idleMs?: number;
  /** While true, watch failures log at debug (see WatcherOptions.quiet). */
  quiet?: () => boolean;
  /** A store changed (after the CRD kick, if any). */
  onChange: (type: ResourceType, change: CacheChange) => void;
  /** A store became live or stopped being live. */
  onLiveness: (type: ResourceType) => void;
  /** A store finished a (re)list, or found its type missing. */
  onListed: () => void;
  /**
   * Keys of `primary` that waited for their scoped watches (see `WatchSpec.scopes`) may be
   * reconciled now.
   */
  onScopesReady?: (primary: ResourceType, keys: string[]) => void;
}

/** True for apiextensions.k8s.io CustomResourceDefinitions. */
export function isCrdType(type: ResourceType): boolean {
  return type.group === "apiextensions.k8s.io" && type.kind === "CustomResourceDefinition";
}

/** One planned watch: its store, and its watcher while open. */
interface Slot {
  store: CacheStore;
  required: boolean;
  /** Stores of the primaries whose objects keep the watch open; undefined: always open. */
  wakers?: CacheStore[];
  make(): Watcher;
  open?: { watcher: Watcher; stop: AbortController; task: Promise<void> };
}

/** Every watch of one manager. */
export class WatchSet {
  readonly #slots: Slot[] = [];
  /** Stores whose watch has not listed since the last `relist()`. */
  readonly #stale = new Set<CacheStore>();
  /** The signal `run` was given; undefined before `run`. */
  #signal: AbortSignal | undefined;
  /** The primaries' stores that open and close on-demand watches. */
  readonly #wakers = new Set<CacheStore>();
  /** Scoped watches, with the store of their primary. */
  readonly #scoped: { watch: ScopedWatch; primary: CacheStore }[] = [];

  constructor(readonly opts: WatchSetOptions) {
    for (const w of planWatches(opts.controllers)) {
      if (w.scoped) {
        const watch = this.#scopedWatch({ ...w, scoped: w.scoped });
        this.#scoped.push({ watch, primary: opts.cache.store(w.scoped.primary) });
        continue;
      }
      const { type, selector, required, ownNamespace, local } = w;
      const store = opts.cache.store(type, selector, w.project);
      const namespace = w.namespace ?? (ownNamespace ? opts.namespace : undefined);
      const make = () =>
        this.#watcher(
          { type, required, selector, namespace, project: w.project, local },
          (ev) => this.#handle(type, store, ev),
        );
      const wakers = w.wakers?.map((t) => opts.cache.store(t));
      for (const waker of wakers ?? []) this.#wakers.add(waker);
      this.#slots.push({ store, required, make, ...(wakers ? { wakers } : {}) });
    }
  }

  /** A Watcher of one (type, selector, namespace) with the set's settings, feeding `sink`. */
  #watcher(
    w: {
      type: ResourceType;
      required: boolean;
      selector?: string;
      namespace?: string;
      project?: Projection;
      local?: boolean;
    },
    sink: (ev: WatcherEvent) => void,
  ): Watcher {
    const o = this.opts;
    return new Watcher({
      cluster: o.cluster,
      clock: o.clock,
      random: o.random,
      log: o.log,
      metrics: o.metrics,
      type: w.type,
      labelSelector: w.selector,
      ...(w.namespace ? { namespace: w.namespace } : {}),
      ...(w.project?.metadataOnly ? { metadataOnly: true } : {}),
      // In-process: no connection to lose silently, and quiet for as long as nothing changes.
      ...(w.local ? { watchdog: false } : {}),
      optional: !w.required,
      pageSize: o.pageSize,
      timeoutSeconds: o.timeoutSeconds,
      idleMs: o.idleMs,
      quiet: o.quiet,
    }, sink);
  }

  #scopedWatch(w: PlannedWatch & { scoped: NonNullable<PlannedWatch["scoped"]> }): ScopedWatch {
    const o = this.opts;
    return new ScopedWatch({
      planned: w,
      cache: o.cache,
      make: (scope, sink) =>
        this.#watcher({
          type: w.type,
          required: w.required,
          selector: scope.labelSelector,
          namespace: scope.namespace,
          project: w.project,
        }, sink),
      onChange: (type, change) => o.onChange(type, change),
      onReady: (primary, keys) => o.onScopesReady?.(primary, keys),
      onListed: (store) => {
        this.#stale.delete(store);
        o.onListed();
      },
    });
  }

  /**
   * A primary changed (its watch, or this replica's write): the scoped watches it names are
   * counted again (see `WatchSpec.scopes`).
   */
  written(type: ResourceType, changes: readonly CacheChange[]): void {
    for (const s of this.#scoped) {
      if (typeId(s.watch.primary) !== typeId(type)) continue;
      for (const change of changes) s.watch.primaryChanged(change, this.opts.cache);
    }
  }

  #primaryChanged(store: CacheStore, changes: readonly CacheChange[]): void {
    for (const s of this.#scoped) {
      if (s.primary !== store) continue;
      for (const change of changes) s.watch.primaryChanged(change, this.opts.cache);
    }
  }

  /** A primary came in a page of its list: the scopes it names open now (ScopedWatch.listing). */
  #primaryListing(store: CacheStore, object: KubeObject): void {
    for (const s of this.#scoped) {
      if (s.primary === store) s.watch.listing(object, this.opts.cache);
    }
  }

  /** A primary's list ended: scopes its pages opened stay only where its objects name them. */
  #primaryListed(store: CacheStore): void {
    for (const s of this.#scoped) if (s.primary === store) s.watch.listed();
  }

  /**
   * True when the scoped watches that `key` of `primary` names have listed (or none is scoped);
   * otherwise the key is handed to `onScopesReady` once they have.
   */
  scopesReady(primary: ResourceType, key: string): boolean {
    return this.#scoped.every((s) =>
      typeId(s.watch.primary) !== typeId(primary) || s.watch.ready(key, this.opts.cache)
    );
  }

  #handle(type: ResourceType, store: CacheStore, ev: WatcherEvent): void {
    const wasLive = store.live;
    if (ev.type === "init-apply" && this.#scoped.length > 0) this.#primaryListing(store, ev.object);
    const changes = store.handle(ev);
    if (changes.length > 0 && this.#scoped.length > 0) this.#primaryChanged(store, changes);
    if (this.#wakers.has(store)) this.reconsider();
    for (const change of changes) {
      if (isCrdType(type) && change.type === "apply") this.kickWatchesOf(change.object);
      this.opts.onChange(type, change);
    }
    if (store.live !== wasLive) this.opts.onLiveness(type);
    if (ev.type === "init-done" || ev.type === "missing") {
      // After the list's changes were counted: the scopes its pages opened ahead are let go.
      if (this.#scoped.length > 0) this.#primaryListed(store);
      this.#stale.delete(store);
      this.opts.onListed();
    }
  }

  /**
   * Opens the on-demand watches whose primaries now have objects and closes those whose have none
   * (forgetting what they cached). Called on every watch event, and by the manager after its own
   * writes, which may add or remove a primary before its watch reports it.
   */
  reconsider(): void {
    const signal = this.#signal;
    if (!signal || signal.aborted) return;
    for (const slot of this.#slots) {
      if (!slot.wakers) continue;
      const wanted = slot.wakers.some((s) => s.size > 0);
      if (wanted && !slot.open) this.#open(slot, signal);
      else if (!wanted && slot.open) this.#close(slot);
    }
  }

  #open(slot: Slot, signal: AbortSignal): void {
    const stop = new AbortController();
    const watcher = slot.make();
    const task = watcher.run(AbortSignal.any([signal, stop.signal]));
    slot.open = { watcher, stop, task };
  }

  #close(slot: Slot): void {
    slot.open?.stop.abort();
    slot.open = undefined;
    const wasStale = this.#stale.delete(slot.store);
    const wasLive = slot.store.live;
    const type = slot.store.type;
    for (const change of slot.store.forget()) this.opts.onChange(type, change);
    if (wasLive) this.opts.onLiveness(type);
    // A closed watch no longer has to list: it may have been the last one a new term waited for.
    if (wasStale) this.opts.onListed();
  }

  /**
   * True when a controller that reads the types `reads` names may begin a term: every required
   * watch of those types that is always open has completed its first list, and every watch of
   * those types has listed since the last `relist()`. A watch of another type that cannot list
   * holds back only the controllers that read it.
   */
  readyFor(reads: (type: ResourceType) => boolean): boolean {
    for (const s of this.#slots) {
      if (s.required && !s.wakers && !s.store.synced && reads(s.store.type)) return false;
    }
    for (const store of this.#stale) if (reads(store.type)) return false;
    return true;
  }

  /**
   * Lists every open watch again; `readyFor` is false for their readers until they have. A watch
   * can stall unnoticed for up to its idle timeout, so a standby's caches may lack what the old
   * leader wrote, and a new leader that took that absence for real would remove a finalizer while
   * the objects remain.
   */
  relist(): void {
    for (const s of this.#slots) if (s.open?.watcher.relist()) this.#stale.add(s.store);
    for (const s of this.#scoped) for (const store of s.watch.relist()) this.#stale.add(store);
  }

  /**
   * Runs the watches until `signal` aborts: those always open at once, the others while their
   * primaries have objects. One promise a watch always open, and one for all the others.
   */
  run(signal: AbortSignal): Promise<void>[] {
    this.#signal = signal;
    const always = this.#slots.filter((s) => !s.wakers);
    for (const s of always) this.#open(s, signal);
    this.reconsider();
    for (const s of this.#scoped) s.watch.run(signal);
    const onDemand = new Promise<void>((resolve) => {
      const done = () => {
        const tasks: Promise<void>[] = this.#slots.filter((s) => s.wakers && s.open).map((s) =>
          s.open!.task
        );
        tasks.push(...this.#scoped.map((s) => s.watch.done()));
        Promise.all(tasks).then(() => resolve());
      };
      if (signal.aborted) done();
      else signal.addEventListener("abort", done, { once: true });
    });
    return [...always.map((s) => s.open!.task), onDemand];
  }

  /**
   * True when every required watch that is always open has completed its first list. A watch
   * opened on demand is not waited for here: its controllers do not reconcile until it has
   * listed (ControllerLoop.synced), and the other controllers need not wait for it.
   */
  get synced(): boolean {
    return this.#slots.every((s) => !s.required || s.wakers !== undefined || s.store.synced);
  }

  /**
   * A CRD was applied or changed (say, it became Established): a watch of its type that is not
   * live retries at once instead of after its backoff, so that user objects of a CRD the operator
   * just installed are seen promptly.
   */
  kickWatchesOf(crd: KubeObject): void {
    for (const s of this.#slots) {
      if (s.open && !s.store.live && typeName(s.store.type) === crd.metadata.name) {
        s.open.watcher.kick();
      }
    }
  }
}
