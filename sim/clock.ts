/**
 * Virtual time. `SimClock` implements the runtime's `Clock` with a timer heap and never waits for
 * real: `sleep` only records a deadline; the `Driver` (driver.ts) moves time. A `ClockView` is one
 * process's view of it, frozen when the process crashes.
 */
import type { Clock } from "../src/runtime/mod.ts";

/** Virtual epoch of every run: 2026-01-01T00:00:00Z. */
export const SIM_EPOCH = Date.UTC(2026, 0, 1);

/** A handle to cancel a scheduled callback. */
export interface TimerHandle {
  cancel(): void;
}

/** One scheduled callback; it is its own handle (no closure a timer). */
class Timer implements TimerHandle {
  cancelled = false;
  constructor(
    readonly clock: SimClock,
    readonly at: number,
    readonly seq: number,
    readonly fire: () => void,
    readonly view: ClockView | undefined,
  ) {}

  cancel(): void {
    this.clock.cancelTimer(this);
  }
}

function before(a: Timer, b: Timer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/** A Clock on virtual time. Timers with equal deadlines fire in the order they were set. */
export class SimClock implements Clock {
  #now: number;
  #heap: Timer[] = [];
  #seq = 0;
  #cancelled = 0;
  /** The jumps so far: from virtual time `at`, by `ms`. */
  #jumps: { at: number; ms: number }[] = [];

  constructor(startMs = SIM_EPOCH) {
    this.#now = startMs;
  }

  /** Virtual epoch milliseconds. */
  now(): number {
    return this.#now;
  }

  /** Resolves when virtual time reaches now + ms; rejects with the signal's reason on abort. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.sleepFor(undefined, ms, signal);
  }

  /** `sleep` owned by a view (killed with it). */
  sleepFor(view: ClockView | undefined, ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const at = this.#now + Math.max(0, ms);
    // Without a signal, firing only resolves (half of all sleeps: request latencies).
    if (!signal) return new Promise<void>((resolve) => this.#add(at, resolve, view));
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        handle.cancel();
        reject(signal?.reason);
      };
      const handle = this.#add(at, () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, view);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Runs `fn` (synchronously, from the driver) when virtual time reaches now + ms. */
  schedule(ms: number, fn: () => void): TimerHandle {
    return this.scheduleFor(undefined, ms, fn);
  }

  /** `schedule` owned by a view (cancelled when it is killed). */
  scheduleFor(view: ClockView | undefined, ms: number, fn: () => void): TimerHandle {
    return this.#add(this.#now + Math.max(0, ms), fn, view);
  }

  /** A Clock whose pending and future timers never fire once it is killed (a crashed process). */
  view(): ClockView {
    return new ClockView(this);
  }

  /** Moves virtual time forward by `ms` at once (an NTP step, a paused VM); due timers fire next. */
  jump(ms: number): void {
    if (ms <= 0) return;
    this.#jumps.push({ at: this.#now, ms });
    this.#now += ms;
  }

  /** Total milliseconds the clock jumped so far (time that passed without any timer firing). */
  get jumped(): number {
    return this.jumpedSince(-Infinity);
  }

  /** Milliseconds of virtual time since `t` that the clock jumped over (no timer fired in them). */
  jumpedSince(t: number): number {
    let sum = 0;
    for (const j of this.#jumps) sum += Math.max(0, j.at + j.ms - Math.max(j.at, t));
    return sum;
  }

  /**
   * The latest virtual time from which `ms` of running time leads to now: a window of `ms` that
   * time the clock jumped over does not shorten (`now - ranFrom(ms) - jumpedSince(ranFrom(ms))`
   * is `ms`).
   */
  ranFrom(ms: number): number {
    let t = this.#now;
    let left = ms;
    for (let i = this.#jumps.length - 1; i >= 0; i--) {
      const j = this.#jumps[i];
      const ran = t - (j.at + j.ms);
      if (ran >= left) return t - left;
      left -= ran;
      t = j.at;
    }
    return t - left;
  }

  /** Timers waiting to fire (cancelled ones excluded). */
  get pending(): number {
    return this.#heap.length - this.#cancelled;
  }

  /** The deadline of the earliest live timer, if any. */
  nextAt(): number | undefined {
    this.#dropCancelledTop();
    return this.#heap[0]?.at;
  }

  /**
   * Removes the earliest live timer due at or before `limit`, moves time to its deadline (never
   * backwards) and returns its callback; undefined when none is due.
   */
  popDue(limit: number): (() => void) | undefined {
    this.#dropCancelledTop();
    const top = this.#heap[0];
    if (!top || top.at > limit) return undefined;
    this.#pop();
    if (top.at > this.#now) this.#now = top.at;
    return top.fire;
  }

  /** Moves time forward to `t` (no-op when t is not later). */
  advanceTo(t: number): void {
    if (t > this.#now) this.#now = t;
  }

  /** @internal cancels every pending timer of a killed view. */
  cancelView(view: ClockView): void {
    // Collected first: cancelling may compact the heap.
    for (const t of this.#heap.filter((t) => t.view === view)) this.cancelTimer(t);
  }

  /** @internal cancels one timer (its handle's `cancel`). */
  cancelTimer(timer: Timer): void {
    if (timer.cancelled) return;
    timer.cancelled = true;
    this.#cancelled++;
    // Lazy deletion keeps cancel O(1); compact when dead timers dominate the heap.
    if (this.#cancelled > 64 && this.#cancelled * 2 > this.#heap.length) this.#compact();
  }

  #add(at: number, fire: () => void, view: ClockView | undefined): Timer {
    const timer = new Timer(this, at, this.#seq++, fire, view);
    this.#push(timer);
    return timer;
  }

  #compact(): void {
    const live = this.#heap.filter((t) => !t.cancelled);
    this.#heap = [];
    this.#cancelled = 0;
    for (const t of live) this.#push(t);
  }

  #dropCancelledTop(): void {
    while (this.#heap.length > 0 && this.#heap[0].cancelled) {
      this.#pop();
      this.#cancelled--;
    }
  }

  // The heap moves a hole instead of swapping; any valid heap pops in the same (at, seq) order.
  #push(timer: Timer): void {
    const h = this.#heap;
    let i = h.length;
    h.push(timer);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(timer, h[parent])) break;
      h[i] = h[parent];
      i = parent;
    }
    h[i] = timer;
  }

  #pop(): Timer | undefined {
    const h = this.#heap;
    const top = h[0];
    const last = h.pop();
    const n = h.length;
    if (n > 0 && last) {
      let i = 0;
      for (;;) {
        let child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && before(h[child + 1], h[child])) child++;
        if (!before(h[child], last)) break;
        h[i] = h[child];
        i = child;
      }
      h[i] = last;
    }
    return top;
  }
}

/** One process's view of the SimClock: killing it freezes every sleep of that process forever. */
export class ClockView implements Clock {
  #dead = false;

  constructor(readonly clock: SimClock) {}

  /** Virtual epoch milliseconds. */
  now(): number {
    return this.clock.now();
  }

  /** As SimClock.sleep; after `kill` it never settles. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (this.#dead) return new Promise(() => {});
    return this.clock.sleepFor(this, ms, signal);
  }

  /**
   * Runs `fn` from the driver when `ms` of virtual time passed: what `sleep(ms).then(fn)` runs, but
   * at the timer instead of in the microtask right after it, where nothing else would run first
   * (the program is quiescent when a timer fires). Cancellable; after `kill`, nothing (undefined).
   */
  after(ms: number, fn: () => void): TimerHandle | undefined {
    return this.#dead ? undefined : this.clock.scheduleFor(this, ms, fn);
  }

  /** True once killed. */
  get dead(): boolean {
    return this.#dead;
  }

  /** Drops every pending timer; later sleeps never settle. */
  kill(): void {
    this.#dead = true;
    this.clock.cancelView(this);
  }
}
