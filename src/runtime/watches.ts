/**
 * The watches of a manager: one Watcher and Store per (type, label selector) its controllers read,
 * whether they have synced, and the kick that wakes a watch that is not live when its type's CRD
 * appears.
 */
import { type Cache, type CacheChange, type Store, typeName } from "./cache.ts";
import type { Clock, Random } from "./clock.ts";
import type { Cluster, KubeObject, ResourceType } from "./cluster.ts";
import type { ControllerSpec } from "./controller_spec.ts";
import type { Logger } from "./log.ts";
import type { Metrics } from "./metrics.ts";
import { planWatches } from "./controller_loop.ts";
import type { WatcherEvent } from "./store.ts";
import { Watcher } from "./watcher.ts";

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

/** Every watch of one manager. */
export class WatchSet {
  readonly #watches: { watcher: Watcher; store: Store; required: boolean }[] = [];
  /** Stores whose watch has not listed since the last `relist()`. */
  readonly #stale = new Set<Store>();

  constructor(readonly opts: WatchSetOptions) {
    // A watch is required if any controller requires it.
    for (const w of planWatches(opts.controllers)) {
      const { type, selector, required, ownNamespace } = w;
      const store = opts.cache.store(type, selector, w.project);
      const watcher = new Watcher({
        cluster: opts.cluster,
        clock: opts.clock,
        random: opts.random,
        log: opts.log,
        metrics: opts.metrics,
        type,
        labelSelector: selector,
        ...(ownNamespace ? { namespace: opts.namespace } : {}),
        optional: !required,
        pageSize: opts.pageSize,
        timeoutSeconds: opts.timeoutSeconds,
        idleMs: opts.idleMs,
      }, (ev) => this.#handle(type, store, ev));
      this.#watches.push({ watcher, store, required });
    }
  }

  #handle(type: ResourceType, store: Store, ev: WatcherEvent): void {
    const wasLive = store.live;
    for (const change of store.handle(ev)) {
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
   * Lists every watch again; `fresh` is false until all have. A watch can stall unnoticed for up to
   * its idle timeout, so a standby's caches may lack what the old leader wrote, and a new leader
   * that took that absence for real would remove a finalizer while the objects remain.
   */
  relist(): void {
    for (const w of this.#watches) if (w.watcher.relist()) this.#stale.add(w.store);
  }

  /** True when every watch has listed since the last `relist()` was asked for. */
  get fresh(): boolean {
    return this.#stale.size === 0;
  }

  /** Runs every watch until `signal` aborts; one promise a watch. */
  run(signal: AbortSignal): Promise<void>[] {
    return this.#watches.map((w) => w.watcher.run(signal));
  }

  /** True when every required watch has completed its first list. */
  get synced(): boolean {
    return this.#watches.every((w) => !w.required || w.store.synced);
  }

  /**
   * A CRD was applied or changed (say, it became Established): a watch of its type that is not
   * live retries at once instead of after its backoff, so that user objects of a CRD the operator
   * just installed are seen promptly.
   */
  kickWatchesOf(crd: KubeObject): void {
    for (const w of this.#watches) {
      if (!w.store.live && typeName(w.store.type) === crd.metadata.name) w.watcher.kick();
    }
  }
}
