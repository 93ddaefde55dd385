/**
 * One controller inside the manager: which keys a cache change concerns, and one reconcile of a
 * key (the pure `reconcile`, then the runner), with its metrics, logs and the remembered outcome
 * that the next reconcile of the key receives as `ctx.lastOutcome`.
 */
import { type ApplyOutcome, describeRef, type Plan } from "../reconcile/plan.ts";
import { objectKey, type ResourceType, splitKey, typeId, typeName } from "../api/object.ts";
import type { Clock } from "./clock.ts";
import {
  type CacheChange,
  type ControllerCache,
  type ControllerSpec,
  type RunnerCache,
  triggersOf,
} from "./controller_spec.ts";
import { classifyError, errorMessage } from "./cluster.ts";
import type { Logger } from "./log.ts";
import type { Metrics } from "./metrics.ts";
import type { WorkResult } from "./queue.ts";
import type { Runner } from "./runner.ts";
import type { ModuleImages } from "../api/images.ts";

/** How soon a key that arrived before the caches synced is tried again. */
const NOT_SYNCED_RETRY_MS = 1_000;

/** What a ControllerLoop needs. */
export interface ControllerLoopOptions {
  spec: ControllerSpec;
  cache: ControllerCache;
  runner: Runner;
  clock: Clock;
  log: Logger;
  metrics: Metrics;
  images: ModuleImages;
  /** The operator's namespace (ReconcileContext.namespace). */
  namespace: string;
  /**
   * Whether the scoped watches a key names have listed (see `WatchSpec.scopes`); when not, the
   * key is handed back once they have. Default: always.
   */
  scopesReady?: (key: string) => boolean;
}

/**
 * `cache` as the controller of `spec` reads it: only the types it declares (its primary and its
 * watches). A term begins a controller once the watches of those types have listed, so a read of
 * another type could see a cache that no list has brought up to date: it throws instead.
 */
function declaredReads(cache: ControllerCache, spec: ControllerSpec): ControllerCache {
  const declared = declaredBy(spec);
  const check = (type: ResourceType): void => {
    if (!declared(type)) {
      throw new Error(
        `${typeName(type)} is read by controller ${spec.name} but not among its watches: add it ` +
          `to them, so that the controller waits for its lists`,
      );
    }
  };
  const view: ControllerCache = {
    list(type, namespace) {
      check(type);
      return cache.list(type, namespace);
    },
    get(type, namespace, name) {
      check(type);
      return cache.get(type, namespace, name);
    },
    isSynced(type, labelSelector) {
      check(type);
      return cache.isSynced(type, labelSelector);
    },
  };
  const { isLive, byIndex, ownedFields } = cache;
  if (ownedFields) {
    view.ownedFields = (type, namespace, name) => {
      check(type);
      return ownedFields.call(cache, type, namespace, name);
    };
  }
  if (isLive) {
    view.isLive = (type) => {
      check(type);
      return isLive.call(cache, type);
    };
  }
  if (byIndex) {
    view.byIndex = (type, index, value) => {
      check(type);
      return byIndex.call(cache, type, index, value);
    };
  }
  return view;
}

/** Whether a type is the primary of `spec` or among its watches (by type id, remembered by object). */
function declaredBy(spec: ControllerSpec): (type: ResourceType) => boolean {
  const ids = new Set([typeId(spec.primary), ...spec.watches.map((w) => typeId(w.type))]);
  const seen = new Set<ResourceType>();
  return (type) => {
    if (seen.has(type)) return true;
    if (!ids.has(typeId(type))) return false;
    seen.add(type);
    return true;
  };
}

/**
 * `cache` as the runner of `spec`'s controller compares writes with it: a type outside the
 * controller's watches counts as not watched (written every time, with the runner's warning), even
 * when another controller caches it, whose watch may not have listed since this controller's term
 * began. What a write gets back still goes into the shared cache.
 */
export function declaredWrites(cache: RunnerCache, spec: ControllerSpec): RunnerCache {
  const declared = declaredBy(spec);
  const { caches, ownedFields, specDigest, written } = cache;
  const view: RunnerCache = {
    list: (type, namespace) => declared(type) ? cache.list(type, namespace) : [],
    get: (type, namespace, name) => declared(type) ? cache.get(type, namespace, name) : undefined,
    has: (type) => declared(type) && cache.has(type),
  };
  if (caches) view.caches = (type) => declared(type) && caches.call(cache, type);
  if (ownedFields) {
    view.ownedFields = (type, namespace, name) =>
      declared(type) ? ownedFields.call(cache, type, namespace, name) : undefined;
  }
  if (specDigest) {
    view.specDigest = (type, namespace, name) =>
      declared(type) ? specDigest.call(cache, type, namespace, name) : undefined;
  }
  if (written) view.written = (type, obj) => written.call(cache, type, obj);
  return view;
}

/** One controller's keys and reconciles. */
export class ControllerLoop {
  readonly #o: ControllerLoopOptions;
  readonly #reads: (type: ResourceType) => boolean;
  readonly #primaryId: string;
  readonly #triggers: ReturnType<typeof triggersOf>;
  /** Outcome of the last Plan per key. */
  readonly #outcomes = new Map<string, ApplyOutcome>();
  /** The watches that must have listed before any reconcile: the primary and every required one. */
  readonly #required: { type: ResourceType; selector?: string }[];
  /** True once the spec's preload has resolved (at once for a spec without one). */
  #preloaded: boolean;
  /** Reconciles postponed for scoped watches since one last went on (logged once a run). */
  #postponed = 0;
  #preloading: Promise<void> | undefined;

  constructor(opts: ControllerLoopOptions) {
    this.#o = { ...opts, cache: declaredReads(opts.cache, opts.spec) };
    this.#preloaded = opts.spec.preload === undefined;
    this.#primaryId = typeId(opts.spec.primary);
    this.#triggers = triggersOf(opts.spec, (err, obj) => {
      opts.log.error("triggers failed", { error: err, object: objectKey(obj), kind: obj.kind });
    });
    this.#reads = declaredBy(opts.spec);
    this.#required = [
      { type: opts.spec.primary },
      ...opts.spec.watches.filter((w) => !w.optional && !w.scopes).map((w) => ({
        type: w.type,
        selector: w.labelSelector,
      })),
    ];
  }

  /** True when the primary's and every required watch's first list has completed. */
  get synced(): boolean {
    return this.#required.every((w) => this.#o.cache.isSynced(w.type, w.selector));
  }

  /** The controller's primary type. */
  get primary(): ResourceType {
    return this.#o.spec.primary;
  }

  /** The controller's name. */
  get name(): string {
    return this.#o.spec.name;
  }

  /** The controller's own limit on reconciles at once, if it has one. */
  get concurrency(): number | undefined {
    return this.#o.spec.concurrency;
  }

  /** True when the controller reads objects of `type` (its primary or one of its watches). */
  reads(type: ResourceType): boolean {
    return this.#reads(type);
  }

  /** Keys of every cached primary (initial work and resyncs). */
  allKeys(): string[] {
    return this.#o.cache.list(this.#o.spec.primary).map(objectKey);
  }

  /**
   * Keys to reconcile after `change` to an object of `type` (see `triggersOf`), for the object and
   * for its previous state, so a label moved away from one owner still reaches that owner.
   */
  keysFor(type: ResourceType, change: CacheChange): string[] {
    if (!this.#reads(type)) return [];
    const keys: string[] = [];
    const objects = change.type === "apply" && change.old
      ? [change.object, change.old]
      : [change.object];
    for (const obj of objects) keys.push(...this.#triggers(type, obj, this.#o.cache));
    return keys;
  }

  /**
   * For a running `key` of a controller whose Plans settle in one pass: whether `change` is what
   * its run wrote (asked once the run has ended). Undefined for other controllers and changes.
   */
  echoOf(key: string, type: ResourceType, change: CacheChange): (() => boolean) | undefined {
    if (!this.#o.spec.settlesInOnePass || change.type !== "apply") return undefined;
    return this.#o.runner.echoOf(key, type, change.object);
  }

  /** Reconciles `key` and carries out its Plan; `signal` aborts when the lease is lost. */
  async reconcile(key: string, signal: AbortSignal): Promise<WorkResult> {
    if (signal.aborted) return { type: "terminal" };
    const { spec, cache, clock, log } = this.#o;
    // An unsynced cache would show "nothing" for what is merely not listed yet: a reducer could
    // take it for absent and delete or recreate. The manager starts work only once synced; this
    // holds for every other way a key may arrive.
    if (!this.synced) {
      log.debug("caches not synced yet; reconcile postponed", { key });
      return { type: "retrySoon", afterMs: NOT_SYNCED_RETRY_MS };
    }
    // Not a reconcile: its scoped watches hand the key back once they have listed.
    if (this.#o.scopesReady && !this.#o.scopesReady(key)) {
      // Said once for a run of them: at start-up every key of a namespace waits for its Pods, and
      // a debug line each (2,000 for 1,000 RateLimits) cost the start-up a fifth of a second.
      if (this.#postponed++ === 0) {
        log.debug("scoped watches not listed yet; reconciles postponed until they have", { key });
      }
      return { type: "done" };
    }
    if (this.#postponed > 0) {
      log.debug("scoped watches listed: postponed reconciles go on", {
        postponed: this.#postponed,
      });
      this.#postponed = 0;
    }
    if (!this.#preloaded) {
      const failed = await this.#preload();
      if (failed) return failed;
    }
    const started = clock.now();
    const { namespace, name } = splitKey(key);
    const observed = cache.get(spec.primary, spec.primary.namespaced ? namespace : undefined, name);
    const lastOutcome = this.#outcomes.get(key);
    let plan: Plan | undefined;
    try {
      plan = spec.reconcile(key, cache, {
        now: clock.now(),
        lastOutcome,
        images: this.#o.images,
        namespace: this.#o.namespace,
      });
    } catch (err) {
      const terminal = classifyError(err) === "terminal";
      log.error("reconcile failed", { key, error: errorMessage(err), retry: !terminal });
      return this.#count(
        started,
        "error",
        true,
        terminal ? { type: "terminal" } : { type: "retry" },
      );
    }
    if (!observed) {
      this.#outcomes.delete(key); // the primary is gone: forget it
      if (plan && plan.delete.length > 0) {
        const r = await this.#o.runner.deleteOrphans(plan.delete, signal);
        const failed = r.work.type !== "done";
        if (r.writes > 0) {
          log.info("deleted what a deleted primary owned", {
            key,
            deleted: plan.delete.map(describeRef).join(", "),
            writes: r.writes,
          });
        }
        return this.#count(started, failed ? "error" : "success", failed, r.work);
      }
      return this.#count(started, "success", false, { type: "done" });
    }
    if (!plan) return this.#count(started, "success", false, { type: "done" });
    const r = await this.#o.runner.run(spec.primary, observed, plan, lastOutcome, signal);
    if (r.outcome) this.#outcomes.set(key, r.outcome);
    const failed = r.outcome?.ok === false;
    const result = r.work.type === "done"
      ? r.work.requeueAfterMs !== undefined ? "requeue_after" : "success"
      : failed || r.work.type === "retry"
      ? "error"
      : "requeue";
    const fields = { key, writes: r.writes, result, ms: clock.now() - started };
    if (r.writes > 0) log.info("reconciled", fields);
    else log.debug("reconciled", fields);
    return this.#count(started, result, failed, r.work);
  }

  /** Runs the spec's preload once (a shared promise: reconciles may run at once); a failure is retried. */
  async #preload(): Promise<WorkResult | undefined> {
    const { spec, log } = this.#o;
    try {
      await (this.#preloading ??= spec.preload?.());
      this.#preloaded = true;
      return undefined;
    } catch (err) {
      this.#preloading = undefined;
      log.error("preload failed", { controller: this.name, error: errorMessage(err), retry: true });
      return { type: "retry" };
    }
  }

  #count(started: number, result: string, failed: boolean, work: WorkResult): WorkResult {
    const { metrics, clock } = this.#o;
    const controller = this.name;
    metrics.reconcileTotal.inc({ controller, result });
    if (failed) metrics.reconcileErrors.inc({ controller });
    metrics.reconcileDuration.observe({ controller }, (clock.now() - started) / 1000);
    return work;
  }
}
