/**
 * Virtual time. `SimClock` implements the runtime's `Clock` with a timer heap and never waits for
 * real: `sleep` only records a deadline. The `Driver` moves time: it lets the program run until it
 * is quiescent (every microtask drained), then jumps to the earliest timer, fires it, and repeats.
 *
 * Why quiescence is exact here: everything the simulated program waits on is either a promise
 * (a microtask) or a SimClock timer; nothing does real I/O. A macrotask (`setImmediate`) runs only
 * once the microtask queue is empty, so one `setImmediate` hop after firing a timer lets every
 * consequence of that timer run to completion, in V8's deterministic microtask order, before the
 * next timer fires. One hop costs about 3 µs (measured), so time compresses by orders of magnitude.
 */
import { setImmediate } from "node:timers";
import type { Clock } from "../src/runtime/clock.ts";

/** Virtual epoch of every run: 2026-01-01T00:00:00Z. */
export const SIM_EPOCH = Date.UTC(2026, 0, 1);

interface Timer {
  at: number;
  seq: number;
  fire: () => void;
  cancelled: boolean;
  view?: ClockView;
}

/** A handle to cancel a scheduled callback. */
export interface TimerHandle {
  cancel(): void;
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
  #jumped = 0;

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
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        handle.cancel();
        reject(signal?.reason);
      };
      const handle = this.#add(this.#now + Math.max(0, ms), () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, view);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Runs `fn` (synchronously, from the driver) when virtual time reaches now + ms. */
  schedule(ms: number, fn: () => void): TimerHandle {
    return this.#add(this.#now + Math.max(0, ms), fn, undefined);
  }

  /** A Clock whose pending and future timers never fire once it is killed (a crashed process). */
  view(): ClockView {
    return new ClockView(this);
  }

  /** Moves virtual time forward by `ms` at once (an NTP step, a paused VM); due timers fire next. */
  jump(ms: number): void {
    this.#now += Math.max(0, ms);
    this.#jumped += Math.max(0, ms);
  }

  /** Total milliseconds the clock jumped so far (time that passed without any timer firing). */
  get jumped(): number {
    return this.#jumped;
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
    top.view?.timers.delete(top);
    if (top.at > this.#now) this.#now = top.at;
    return top.fire;
  }

  /** Moves time forward to `t` (no-op when t is not later). */
  advanceTo(t: number): void {
    if (t > this.#now) this.#now = t;
  }

  /** @internal cancels every timer of a killed view. */
  cancelAll(timers: Set<Timer>): void {
    for (const t of timers) this.#cancel(t);
    timers.clear();
  }

  #add(at: number, fire: () => void, view: ClockView | undefined): TimerHandle {
    const timer: Timer = { at, seq: this.#seq++, fire, cancelled: false, view };
    view?.timers.add(timer);
    this.#push(timer);
    return {
      cancel: () => {
        view?.timers.delete(timer);
        this.#cancel(timer);
      },
    };
  }

  #cancel(timer: Timer): void {
    if (timer.cancelled) return;
    timer.cancelled = true;
    this.#cancelled++;
    // Lazy deletion keeps cancel O(1); compact when dead timers dominate the heap.
    if (this.#cancelled > 64 && this.#cancelled * 2 > this.#heap.length) this.#compact();
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

  #push(timer: Timer): void {
    const h = this.#heap;
    h.push(timer);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(h[i], h[parent])) break;
      [h[i], h[parent]] = [h[parent], h[i]];
      i = parent;
    }
  }

  #pop(): Timer | undefined {
    const h = this.#heap;
    const top = h[0];
    const last = h.pop();
    if (h.length > 0 && last) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && before(h[l], h[m])) m = l;
        if (r < h.length && before(h[r], h[m])) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m], h[i]];
        i = m;
      }
    }
    return top;
  }
}

/** One process's view of the SimClock: killing it freezes every sleep of that process forever. */
export class ClockView implements Clock {
  /** @internal live timers of this view. */
  readonly timers = new Set<Timer>();
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

  /** True once killed. */
  get dead(): boolean {
    return this.#dead;
  }

  /** Drops every pending timer; later sleeps never settle. */
  kill(): void {
    this.#dead = true;
    this.clock.cancelAll(this.timers);
  }
}

/** Resolves once every microtask queued so far, and every one those queue, has run. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Options of a Driver. */
export interface DriverOptions {
  /** Called after each event once the program is quiescent again (invariant checks). */
  onStep?: () => void;
  /** Events allowed at one virtual instant before the run is declared livelocked. */
  maxStepsPerInstant?: number;
}

/** Thrown when the program keeps scheduling zero-delay timers and virtual time cannot advance. */
export class LivelockError extends Error {
  constructor(readonly at: number, steps: number) {
    super(
      `livelock: ${steps} events at virtual time ${
        new Date(at).toISOString()
      } without time advancing`,
    );
    this.name = "LivelockError";
  }
}

/** Advances a SimClock event by event, letting the program quiesce between events. */
export class Driver {
  /** Events fired so far. */
  steps = 0;
  #instant = Number.NaN;
  #atInstant = 0;
  readonly #max: number;

  constructor(readonly clock: SimClock, readonly opts: DriverOptions = {}) {
    this.#max = opts.maxStepsPerInstant ?? 100_000;
  }

  /** Fires, in order, every timer due up to virtual time `t`, then sets the clock to `t`. */
  async runUntil(t: number): Promise<void> {
    await settle();
    for (;;) {
      const fire = this.clock.popDue(t);
      if (!fire) break;
      await this.#fire(fire);
    }
    this.clock.advanceTo(t);
  }

  /** Runs for `ms` of virtual time. */
  runFor(ms: number): Promise<void> {
    return this.runUntil(this.clock.now() + ms);
  }

  /**
   * Fires timers until `done()` holds after an event, or virtual time would pass `limit`. Resolves
   * to whether `done()` held. Clock jumps while waiting move the limit by as much: a jump is time
   * no timer saw pass, so it must not eat the wait's budget (three jumps of 80 s inside a 120 s
   * wait once ended a run with every timer still pending).
   */
  async runUntilTrue(done: () => boolean, limit: number): Promise<boolean> {
    await settle();
    if (done()) return true;
    const jumpedAtStart = this.clock.jumped;
    const deadline = () => limit + (this.clock.jumped - jumpedAtStart);
    for (;;) {
      const fire = this.clock.popDue(deadline());
      if (!fire) break;
      await this.#fire(fire);
      if (done()) return true;
    }
    this.clock.advanceTo(deadline());
    return done();
  }

  async #fire(fire: () => void): Promise<void> {
    const now = this.clock.now();
    if (now === this.#instant) {
      if (++this.#atInstant > this.#max) throw new LivelockError(now, this.#atInstant);
    } else {
      this.#instant = now;
      this.#atInstant = 1;
    }
    fire();
    await settle();
    this.steps++;
    this.opts.onStep?.();
  }
}
