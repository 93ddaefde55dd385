/**
 * The work queue of one controller (client-go's workqueue, kube-rs's scheduler): keys are
 * deduplicated while they wait; one key is never processed twice at once (a key added while it
 * runs is processed once more afterwards); failures back off per key, jittered and exponential
 * (5 ms doubling to 5 min, reset on success); `requeueAfter` sets a timer; at most `concurrency`
 * keys run at once. Timers run on the injected Clock.
 */
import { backoffDelay, type BackoffOptions, type Clock, type Random } from "./clock.ts";

/** What processing a key came to. */
export type WorkResult =
  /** Success: forget the key's failures; look again after `requeueAfterMs` if given. */
  | { type: "done"; requeueAfterMs?: number }
  /** Failure worth retrying: process the key again after its backoff. */
  | { type: "retry" }
  /** Retry soon without growing the backoff (a 409 conflict: the cache is just behind). */
  | { type: "retrySoon"; afterMs: number }
  /** Failure that retrying cannot fix: wait for a change (controller-runtime's TerminalError). */
  | { type: "terminal" };

/** Processes one key; a thrown error counts as `retry`. */
export type WorkHandler = (key: string) => Promise<WorkResult>;

/** Options of a WorkQueue. */
export interface WorkQueueOptions {
  clock: Clock;
  random: Random;
  /** Keys processed at once; default 1. */
  concurrency?: number;
  /** Per-key retry delays; default 5 ms doubling to 300 000 ms, jittered. */
  backoff?: BackoffOptions;
  /** Told the number of waiting keys whenever it changes (the queue-depth gauge). */
  onDepth?: (depth: number) => void;
  /** Told when a run ends with no key running or waiting (timers aside). */
  onIdle?: () => void;
}

/** Per-key failure backoff of the queue by default. */
export const QUEUE_BACKOFF: BackoffOptions = { initialMs: 5, maxMs: 300_000 };

/** Milliseconds of work after which a queue lets timers and I/O run (live clocks only). */
export const TURN_EVERY_MS = 50;

/** A deduplicating, per-key-serial work queue. */
export class WorkQueue {
  readonly #o: WorkQueueOptions;
  readonly #handler: WorkHandler;
  readonly #waiting = new Set<string>(); // insertion order is FIFO order
  readonly #running = new Map<string, Promise<void>>();
  readonly #dirty = new Set<string>();
  /** Per running key: marks that may be its own run's writes coming back (see `add`). */
  readonly #echoes = new Map<string, (() => boolean)[]>();
  readonly #timers = new Map<string, { at: number; cancel: AbortController }>();
  readonly #failures = new Map<string, number>();
  #pumpScheduled = false;
  #closed = false;
  /** When timers and I/O last had a turn (see `#letOthersRun`). */
  #turnedAt = -Infinity;

  constructor(opts: WorkQueueOptions, handler: WorkHandler) {
    this.#o = opts;
    this.#handler = handler;
  }

  /** Keys waiting to run (not counting running keys or timers). */
  get depth(): number {
    return this.#waiting.size;
  }

  /** Keys running now. */
  get active(): number {
    return this.#running.size;
  }

  /** Keys with a pending timer (requeueAfter or backoff). */
  get delayed(): number {
    return this.#timers.size;
  }

  /** Failures of a key since its last success. */
  failures(key: string): number {
    return this.#failures.get(key) ?? 0;
  }

  /**
   * Queues `key` now (a no-op when it already waits; after the current run when it is running).
   * `echo`, for a key that is running, tells once the run has ended whether this change was the
   * run's own write coming back: if every mark of a run is an echo, the key does not run again.
   */
  add(key: string, echo?: () => boolean): void {
    if (this.#closed) return;
    if (this.#running.has(key)) {
      if (echo && !this.#dirty.has(key)) {
        const marks = this.#echoes.get(key);
        if (marks) marks.push(echo);
        else this.#echoes.set(key, [echo]);
      } else this.#dirty.add(key);
      return;
    }
    if (this.#waiting.has(key)) return;
    this.#waiting.add(key);
    this.#depthChanged();
    this.#schedulePump();
  }

  /** Queues `key` after `ms`; when a timer for it is already due sooner, that one stands. */
  addAfter(key: string, ms: number): void {
    if (this.#closed) return;
    if (ms <= 0) return this.add(key);
    const at = this.#o.clock.now() + ms;
    const existing = this.#timers.get(key);
    if (existing && existing.at <= at) return;
    existing?.cancel.abort();
    const cancel = new AbortController();
    this.#timers.set(key, { at, cancel });
    this.#o.clock.sleep(ms, cancel.signal).then(() => {
      if (this.#timers.get(key)?.cancel === cancel) this.#timers.delete(key);
      this.add(key);
    }, () => {});
  }

  /** Stops taking work, cancels timers, and resolves when running keys have finished. */
  async shutdown(): Promise<void> {
    this.#closed = true;
    for (const t of this.#timers.values()) t.cancel.abort();
    this.#timers.clear();
    this.#waiting.clear();
    this.#dirty.clear();
    this.#echoes.clear();
    this.#depthChanged();
    await Promise.all([...this.#running.values()]);
  }

  #depthChanged(): void {
    this.#o.onDepth?.(this.#waiting.size);
  }

  // Starting work on a later microtask lets one batch of events coalesce before anything runs.
  #schedulePump(): void {
    if (this.#pumpScheduled) return;
    this.#pumpScheduled = true;
    queueMicrotask(() => {
      this.#pumpScheduled = false;
      this.#pump();
    });
  }

  #pump(): void {
    const limit = Math.max(1, this.#o.concurrency ?? 1);
    while (!this.#closed && this.#running.size < limit && this.#waiting.size > 0) {
      const key = this.#waiting.values().next().value as string;
      this.#waiting.delete(key);
      this.#depthChanged();
      this.#running.set(key, this.#process(key));
    }
  }

  async #process(key: string): Promise<void> {
    let result: WorkResult;
    try {
      await this.#letOthersRun();
      result = this.#closed ? { type: "terminal" } : await this.#handler(key);
    } catch {
      result = { type: "retry" };
    }
    this.#running.delete(key);
    this.#settle(key, result);
    const echoes = this.#echoes.get(key);
    this.#echoes.delete(key);
    if (this.#dirty.delete(key) || echoes?.some((own) => !own())) this.add(key);
    if (this.#running.size === 0 && this.#waiting.size === 0) this.#o.onIdle?.();
    this.#schedulePump();
  }

  /**
   * A reconcile that writes nothing never waits on I/O, so without this a long run of them (a
   * resync, a new leadership term) would run as one task: lease renewals, watch events and probes
   * would wait until the whole queue drained. Every TURN_EVERY_MS of work, timers and I/O get a
   * turn. Virtual clocks have no `yield`: the simulator's runs are unchanged.
   */
  async #letOthersRun(): Promise<void> {
    const clock = this.#o.clock;
    if (!clock.yield || clock.now() - this.#turnedAt < TURN_EVERY_MS) return;
    await clock.yield();
    this.#turnedAt = clock.now();
  }

  #settle(key: string, result: WorkResult): void {
    switch (result.type) {
      case "done":
        this.#failures.delete(key);
        if (result.requeueAfterMs !== undefined) this.addAfter(key, result.requeueAfterMs);
        return;
      case "retry": {
        const n = this.#failures.get(key) ?? 0;
        this.#failures.set(key, n + 1);
        this.addAfter(key, backoffDelay(n, this.#o.backoff ?? QUEUE_BACKOFF, this.#o.random));
        return;
      }
      case "retrySoon":
        this.addAfter(key, result.afterMs);
        return;
      case "terminal":
        this.#failures.delete(key);
        return;
    }
  }
}
