/**
 * The work of one leadership term: one work queue a controller, every primary of a controller
 * queued when it begins in the term and again every resync period, and the keys each cache change
 * concerns. Each controller begins once the watches it reads are ready, so a watch that cannot list
 * holds back only the controllers that read its type. A term ends when the lease is lost or the
 * manager stops: its queues take no more work and in-flight reconciles finish. `Terms` begins one
 * whenever the replica leads, never while the previous one is still draining.
 */

import type { Clock, Random } from "./clock.ts";
import { type ResourceType, typeId } from "../api/object.ts";
import type { Logger } from "./log.ts";
import type { Metrics } from "./metrics.ts";
import { WorkQueue, type WorkResult } from "./queue.ts";
import { type CacheChange, DEFAULT_CONCURRENCY } from "./controller_spec.ts";

/**
 * A controller as a term drives it (a TermController is one): its keys, and one reconcile of a key.
 * Named by shape here so that the term, which only queues, does not depend on how one reconciles.
 */
export interface TermController {
  readonly name: string;
  /** Its own limit on reconciles at once, if any. */
  readonly concurrency?: number;
  /** Reconciles `key`; `signal` aborts when the lease is lost. */
  reconcile(key: string, signal: AbortSignal): Promise<WorkResult>;
  /** Keys a cache change to an object of `type` concerns. */
  keysFor(type: ResourceType, change: CacheChange): string[];
  /**
   * For a running `key`: whether `change` is its run's own write (asked once the run has ended);
   * undefined when it cannot be (see `ControllerSpec.settlesInOnePass`).
   */
  echoOf?(key: string, type: ResourceType, change: CacheChange): (() => boolean) | undefined;
  /** True when it reads objects of `type`. */
  reads(type: ResourceType): boolean;
  /** Its primary type. */
  readonly primary: ResourceType;
  /** Keys of every cached primary. */
  allKeys(): string[];
}

/** What a term needs besides its controllers. */
export interface TermOptions {
  clock: Clock;
  random: Random;
  metrics: Metrics;
  /** Reconciles of a controller at once unless it sets its own; default DEFAULT_CONCURRENCY. */
  concurrency?: number;
  /** Every primary is queued again after this long, jittered by up to 10%; default 600 000. */
  resyncPeriodMs?: number;
  /** Told when a controller's queue has run empty (no key running or waiting). */
  onIdle?: () => void;
}

/** One leadership term's queues. */
export class Term {
  readonly #queues = new Map<string, WorkQueue>();
  readonly #controllers: readonly TermController[];
  readonly #o: TermOptions;
  /** Names of the controllers begun in this term: only their queues take keys. */
  readonly #begun = new Set<string>();
  #active = true;

  /** Queues for `controllers`; reconciles stop writing once `signal` (the lease) aborts. */
  constructor(
    readonly signal: AbortSignal,
    controllers: readonly TermController[],
    opts: TermOptions,
  ) {
    this.#controllers = controllers;
    this.#o = opts;
    for (const ctl of controllers) {
      const name = ctl.name;
      this.#queues.set(
        name,
        new WorkQueue({
          clock: opts.clock,
          random: opts.random,
          concurrency: ctl.concurrency ?? opts.concurrency ?? DEFAULT_CONCURRENCY,
          onDepth: opts.metrics.queueDepth.setter({ controller: name }),
          ...(opts.onIdle ? { onIdle: opts.onIdle } : {}),
        }, (key) => ctl.reconcile(key, signal)),
      );
    }
  }

  /**
   * Begins each controller not begun yet for which `ready` holds: every primary of it queued, and
   * again every resync period while the term lasts. Returns the names of those begun now.
   */
  beginReady(ready: (ctl: TermController) => boolean): string[] {
    if (!this.#active) return [];
    const first = this.#begun.size === 0;
    const begun: string[] = [];
    for (const ctl of this.#controllers) {
      if (this.#begun.has(ctl.name) || !ready(ctl)) continue;
      this.#begun.add(ctl.name);
      this.#enqueue(ctl);
      begun.push(ctl.name);
    }
    if (first && begun.length > 0) void this.#resync();
    return begun;
  }

  /** True when `name` has begun in this term. */
  begun(name: string): boolean {
    return this.#begun.has(name);
  }

  /** Keys waiting, over every queue. */
  get queued(): number {
    let n = 0;
    for (const q of this.#queues.values()) n += q.depth;
    return n;
  }

  /** Reconciles running, over every queue. */
  get inFlight(): number {
    let n = 0;
    for (const q of this.#queues.values()) n += q.active;
    return n;
  }

  /** Queues the keys a cache change concerns. */
  dispatch(type: ResourceType, change: CacheChange): void {
    for (const ctl of this.#controllers) {
      if (!this.#begun.has(ctl.name)) continue;
      const q = this.#queues.get(ctl.name)!;
      for (const key of ctl.keysFor(type, change)) q.add(key, ctl.echoOf?.(key, type, change));
    }
  }

  /**
   * Queues every primary of each controller that reads `type`: its watch became live or stopped
   * being live, so what the controller decided from "not known" may change, and an empty list
   * brings no change events.
   */
  requeueReaders(type: ResourceType): void {
    for (const ctl of this.#controllers) {
      if (!ctl.reads(type) || !this.#begun.has(ctl.name)) continue;
      const q = this.#queues.get(ctl.name)!;
      for (const key of ctl.allKeys()) q.add(key);
    }
  }

  /** Queues `keys` of each controller whose primary is `primary` (their scoped watches listed). */
  requeueKeys(primary: ResourceType, keys: readonly string[]): void {
    for (const ctl of this.#controllers) {
      if (typeId(ctl.primary) !== typeId(primary) || !this.#begun.has(ctl.name)) continue;
      const q = this.#queues.get(ctl.name)!;
      for (const key of keys) q.add(key);
    }
  }

  /** Ends the term: the queues take no more work; resolves once in-flight reconciles finished. */
  end(): Promise<unknown> {
    this.#active = false;
    return Promise.all([...this.#queues.values()].map((q) => q.shutdown()));
  }

  #enqueue(ctl: TermController): void {
    const q = this.#queues.get(ctl.name)!;
    for (const key of ctl.allKeys()) q.add(key);
  }

  /** The safety net: every primary again every resync period, jittered by up to 10%. */
  async #resync(): Promise<void> {
    const period = this.#o.resyncPeriodMs ?? 600_000;
    while (this.#active) {
      try {
        await this.#o.clock.sleep(period * (1 + 0.1 * this.#o.random.next()), this.signal);
      } catch {
        return;
      }
      if (!this.#active) return;
      for (const ctl of this.#controllers) if (this.#begun.has(ctl.name)) this.#enqueue(ctl);
    }
  }
}

/** The manager's succession of terms: at most one at a time, each begun once it may be. */
export class Terms {
  readonly #controllers: readonly TermController[];
  readonly #o: TermOptions;
  readonly #log: Logger;
  readonly #ready: () => boolean;
  readonly #controllerReady: (ctl: TermController) => boolean;
  #leadSignal: AbortSignal | undefined;
  #term: Term | undefined;
  #draining: Promise<void> | undefined;

  /**
   * `ready`: the manager runs (checked at each attempt); `controllerReady`: the watches a
   * controller reads are synced and fresh, so that it may begin (checked for each not begun yet).
   */
  constructor(
    controllers: readonly TermController[],
    opts: TermOptions,
    log: Logger,
    ready: () => boolean,
    controllerReady: (ctl: TermController) => boolean,
  ) {
    this.#controllers = controllers;
    this.#o = opts;
    this.#log = log;
    this.#ready = ready;
    this.#controllerReady = controllerReady;
  }

  /** The running term, if any. */
  get current(): Term | undefined {
    return this.#term;
  }

  /** Leadership began (`signal` aborts when it is lost): begin a term as soon as one may. */
  lead(signal: AbortSignal): void {
    this.#leadSignal = signal;
    this.maybeBegin();
  }

  /**
   * Once leading and ready, after the previous term has drained: begins a term if none runs, and
   * in it each controller whose watches are ready. Called again whenever a watch lists.
   */
  maybeBegin(): void {
    const signal = this.#leadSignal;
    if (!signal || signal.aborted || !this.#ready()) return;
    const created = !this.#term;
    if (!this.#term) {
      if (this.#draining) {
        this.#draining.then(() => this.maybeBegin());
        return;
      }
      this.#term = new Term(signal, this.#controllers, this.#o);
    }
    const term = this.#term;
    const begun = term.beginReady(this.#controllerReady);
    // Called on every list a watch finishes: the gauges change only with a new term or a begin.
    if (!created && begun.length === 0) return;
    for (const c of this.#controllers) {
      this.#o.metrics.controllerWaiting.set({ controller: c.name }, term.begun(c.name) ? 0 : 1);
    }
    if (begun.length === 0) return;
    const waiting = this.#controllers.filter((c) => !term.begun(c.name)).map((c) => c.name);
    this.#log.info("caches synced and leading: reconciling", {
      controllers: begun,
      ...(waiting.length > 0 ? { waiting } : {}),
    });
  }

  /** Leadership ended: drain the current term, if any. */
  unlead(): void {
    const term = this.#term;
    this.#leadSignal = undefined;
    if (!term) return;
    void this.drain();
  }

  /** Ends the current term: queues stop taking work and in-flight reconciles finish. */
  drain(): Promise<void> {
    const term = this.#term;
    if (!term) return this.#draining ?? Promise.resolve();
    this.#term = undefined;
    this.#noneWaiting();
    const draining = term.end().then(() => {
      if (this.#draining === draining) this.#draining = undefined;
      for (const ctl of this.#controllers) {
        this.#o.metrics.queueDepth.set({ controller: ctl.name }, 0);
      }
    });
    this.#draining = draining;
    return draining;
  }

  /** Stops at once (a crash): the current term ends without waiting for it. */
  abandon(): void {
    const term = this.#term;
    this.#term = undefined;
    this.#noneWaiting();
    void term?.end();
  }

  /** No term, so no controller waits to begin in one. */
  #noneWaiting(): void {
    for (const c of this.#controllers) {
      this.#o.metrics.controllerWaiting.set({ controller: c.name }, 0);
    }
  }
}
