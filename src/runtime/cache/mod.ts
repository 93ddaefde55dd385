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
import { type KubeObject, type ResourceType, typeName } from "../../api/object.ts";
import type { Clock, Random } from "../clock.ts";
import type { Cluster } from "../cluster.ts";
import { type CacheChange, type ControllerSpec, planWatches } from "../controller_spec.ts";
import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics.ts";
import type { Cache } from "./cache.ts";
import type { CacheStore } from "./store.ts";
import { Watcher } from "./watcher.ts";
import type { WatcherEvent } from "./watcher_event.ts";

export { Cache } from "./cache.ts";
export { CacheStore } from "./store.ts";
export { ownedFieldsOf, prepare } from "./prepare.ts";
export { Watcher } from "./watcher.ts";
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

  constructor(readonly opts: WatchSetOptions) {
    for (const w of planWatches(opts.controllers)) {
      const { type, selector, required, ownNamespace } = w;
      const store = opts.cache.store(type, selector, w.project);
      const make = () =>
        new Watcher({
          cluster: opts.cluster,
          clock: opts.clock,
          random: opts.random,
          log: opts.log,
          metrics: opts.metrics,
          type,
          labelSelector: selector,
          ...(w.namespace
            ? { namespace: w.namespace }
            : ownNamespace
            ? { namespace: opts.namespace }
            : {}),
          optional: !required,
          pageSize: opts.pageSize,
          timeoutSeconds: opts.timeoutSeconds,
          idleMs: opts.idleMs,
          quiet: opts.quiet,
        }, (ev) => this.#handle(type, store, ev));
      const wakers = w.wakers?.map((t) => opts.cache.store(t));
      for (const waker of wakers ?? []) this.#wakers.add(waker);
      this.#slots.push({ store, required, make, ...(wakers ? { wakers } : {}) });
    }
  }

  #handle(type: ResourceType, store: CacheStore, ev: WatcherEvent): void {
    const wasLive = store.live;
    const changes = store.handle(ev);
    if (this.#wakers.has(store)) this.reconsider();
    for (const change of changes) {
      if (isCrdType(type) && change.type === "apply") this.kickWatchesOf(change.object);
      this.opts.onChange(type, change);
    }
    if (store.live !== wasLive) this.opts.onLiveness(type);
    if (ev.type === "init-done" || ev.type === "missing") {
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
    this.#stale.delete(slot.store);
    const wasLive = slot.store.live;
    const type = slot.store.type;
    for (const change of slot.store.forget()) this.opts.onChange(type, change);
    if (wasLive) this.opts.onLiveness(type);
  }

  /**
   * Lists every open watch again; `fresh` is false until all have. A watch can stall unnoticed
   * for up to its idle timeout, so a standby's caches may lack what the old leader wrote, and a
   * new leader that took that absence for real would remove a finalizer while the objects remain.
   */
  relist(): void {
    for (const s of this.#slots) if (s.open?.watcher.relist()) this.#stale.add(s.store);
  }

  /** True when every watch has listed since the last `relist()` was asked for. */
  get fresh(): boolean {
    return this.#stale.size === 0;
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
    const onDemand = new Promise<void>((resolve) => {
      const done = () => {
        const tasks = this.#slots.filter((s) => s.wakers && s.open).map((s) => s.open!.task);
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
