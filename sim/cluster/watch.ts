/**
 * Watch streams: replay of the type's history from the requested resourceVersion (410 Gone when it
 * is older than what is retained), then live changes in commit order, filtered by namespace and
 * label selector the way the API server filters (an object that stops matching is DELETED, one
 * that starts matching is ADDED), with periodic bookmarks and a server-side timeout. Delivery goes
 * through the watching process's clock, so a crashed process stops receiving.
 */
import { readCopy } from "./json.ts";
import { ApiError, type WatchEvent, type WatchOptions } from "../../src/runtime/mod.ts";
import type { KubeObject, ResourceType } from "../../src/api/object.ts";
import type { ClockView, TimerHandle } from "../clock.ts";
import { gone, statusObject } from "./errors.ts";
import type { Change } from "./history.ts";
import { selectorOf } from "./selector.ts";
import type { Store } from "./store.ts";

/** Bookmark period of the API server (about once a minute). */
export const BOOKMARK_PERIOD_MS = 60_000;

/** Knobs of one watch stream, decided by the caller (faults, latency). */
export interface StreamOptions {
  /** Delay between a commit and its delivery on this stream; fixed per stream keeps the order. */
  latencyMs: number;
  /** When the server ends the stream, ms from now. */
  timeoutMs: number;
  /** How a too-old resourceVersion is reported: an ERROR event (the API server's way) or a thrown 410. */
  goneAs: "event" | "throw";
}

/** One open watch. */
export class WatchStream {
  #queue: WatchEvent[] = [];
  #wake?: () => void;
  #ended = false;
  #stalled = false;
  #hung = false;
  #error?: ApiError;
  #unsubscribe?: () => void;
  /** Deliveries, bookmarks and the timeout waiting on the clock; cancelled when the stream ends. */
  readonly #timers = new Set<TimerHandle>();
  #finished = false;

  constructor(
    readonly store: Store,
    readonly type: ResourceType,
    readonly opts: WatchOptions,
    readonly clock: ClockView,
    readonly stream: StreamOptions,
  ) {}

  /** Events delivered so far (for the trace). */
  delivered = 0;

  /** Opens the stream: validates the version, queues the replay, subscribes to live changes. */
  open(): void {
    const select = selectorOf(this.opts.labelSelector);
    const ns = this.opts.namespace;
    const inScope = (o: KubeObject | undefined) =>
      !!o && (!ns || o.metadata.namespace === ns) && select(o.metadata.labels);
    const translate = (c: Change): WatchEvent | undefined => {
      const was = c.type !== "ADDED" && inScope(c.type === "DELETED" ? c.object : c.old);
      const is = c.type !== "DELETED" && inScope(c.object);
      if (c.type === "MODIFIED" && !was && is) return { type: "ADDED", object: c.object };
      if (c.type === "MODIFIED" && was && !is) return { type: "DELETED", object: c.object };
      if (was || is) return { type: c.type, object: c.object };
      return undefined;
    };
    const rv = this.opts.resourceVersion;
    const history = this.store.history(this.type);
    if (rv === "" || rv === "0") {
      for (const o of this.store.objects(this.type, ns)) {
        if (inScope(o)) this.#enqueue({ type: "ADDED", object: o });
      }
    } else {
      const n = Number(rv);
      if (!Number.isInteger(n) || n < 0) {
        throw new ApiError(400, "BadRequest", `invalid resource version ${JSON.stringify(rv)}`);
      }
      if (!history.retains(n)) {
        const err = gone(rv, history.compacted + 1);
        if (this.stream.goneAs === "throw") throw err;
        this.#enqueue({ type: "ERROR", object: statusObject(err) });
        this.#enqueueEnd();
        return;
      }
      for (const c of history.since(n)) {
        const ev = translate(c);
        if (ev) this.#enqueue(ev);
      }
    }
    const typeKey = `${this.type.group}/${this.type.plural}`;
    this.#unsubscribe = this.store.subscribe((c) => {
      const mine = c.typeKey === typeKey;
      const typeGone = !mine && c.type === "DELETED" &&
        c.rtype.kind === "CustomResourceDefinition" && !this.store.types.serves(this.type);
      if (!mine && !typeGone) return;
      if (this.#deaf()) {
        this.#unsubscribe?.();
        this.#unsubscribe = undefined;
        return;
      }
      if (mine) {
        const ev = translate(c);
        if (ev) this.#enqueue(ev);
      } else this.#enqueueEnd(); // the type is gone: the API server closes its watches
    });
    if (this.opts.allowWatchBookmarks) this.#scheduleBookmark();
    this.#at(this.stream.timeoutMs, () => this.end());
  }

  /** Ends the stream now (server timeout, dropped connection). */
  end(): void {
    this.#finish();
    this.#ended = true;
    this.#wake?.();
  }

  /** Ends the stream with an ERROR event carrying `err` (e.g. a forced 410). */
  failWith(err: ApiError): void {
    this.#finish();
    this.#queue.push({ type: "ERROR", object: statusObject(err) });
    this.#ended = true;
    this.#wake?.();
  }

  /** Ends the stream by throwing `err` from the iterator. */
  throwError(err: ApiError): void {
    this.#finish();
    this.#error = err;
    this.#ended = true;
    this.#wake?.();
  }

  /** Stops delivering anything, forever, while the connection stays open. */
  stall(): void {
    this.#stalled = true;
    this.#finish();
  }

  /**
   * Stops delivering and answers nothing more, not even an abort: the generator never returns
   * (the stall of client-node's watch on Deno, which the runtime's watchdog must survive).
   */
  hang(): void {
    this.#hung = true;
    this.stall();
    this.#wake?.();
  }

  /** Queues a BOOKMARK at the store's current resourceVersion (the periodic one, or a test's). */
  bookmark(): void {
    if (this.#ended || this.#stalled) return;
    const apiVersion = this.type.group
      ? `${this.type.group}/${this.type.version}`
      : this.type.version;
    this.#enqueue({
      type: "BOOKMARK",
      object: {
        apiVersion,
        kind: this.type.kind,
        metadata: { name: "", resourceVersion: String(this.store.rv) },
      },
    });
  }

  /** The events, until the stream ends or `signal` aborts. */
  async *events(signal: AbortSignal): AsyncGenerator<WatchEvent> {
    const onAbort = () => {
      this.#finish();
      this.#wake?.();
    };
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      for (;;) {
        if (this.#hung) await new Promise<never>(() => {});
        if (signal.aborted) return;
        const next = this.#stalled ? undefined : this.#queue.shift();
        if (next) {
          this.delivered++;
          yield readCopy(next);
          continue;
        }
        if (this.#ended && !this.#stalled) {
          if (this.#error) throw this.#error;
          return;
        }
        await new Promise<void>((resolve) => (this.#wake = resolve));
        this.#wake = undefined;
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
      this.#finish();
    }
  }

  #enqueue(ev: WatchEvent): void {
    this.#delivered(() => {
      if (this.#ended || this.#stalled) return;
      this.#queue.push(ev);
      this.#wake?.();
    });
  }

  #enqueueEnd(): void {
    this.#delivered(() => this.end());
  }

  /**
   * True when nothing sent on this stream can arrive any more: its process crashed (its clock is
   * dead), so every delivery would wait on that clock forever. Such a stream stops listening to
   * the store (a crashed process never closes its watches; a run collects hundreds of them).
   */
  #deaf(): boolean {
    return this.stream.latencyMs > 0 && this.clock.dead;
  }

  /** Runs `fn` once the stream's latency has passed; at once on a stream without latency. */
  #delivered(fn: () => void): void {
    if (this.stream.latencyMs > 0) this.#at(this.stream.latencyMs, fn);
    else fn();
  }

  #scheduleBookmark(): void {
    this.#at(BOOKMARK_PERIOD_MS, () => {
      if (this.#ended || this.#stalled) return;
      this.bookmark();
      this.#scheduleBookmark();
    });
  }

  /**
   * Runs `fn` after `ms` on the process's clock, unless the stream ends first. A timer of the clock
   * rather than a sleep cancelled by an AbortSignal: the same timers, fired and cancelled in the
   * same order, without a listener, a promise and a rejection each (a sleep's `.then(fn)` ran in
   * the microtask right after its timer, with nothing between: see ClockView.after).
   */
  #at(ms: number, fn: () => void): void {
    if (this.#finished) return;
    const timer = this.clock.after(ms, () => {
      this.#timers.delete(timer!);
      fn();
    });
    if (timer) this.#timers.add(timer);
  }

  #finish(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    if (this.#finished) return;
    this.#finished = true;
    for (const t of this.#timers) t.cancel();
    this.#timers.clear();
  }
}
