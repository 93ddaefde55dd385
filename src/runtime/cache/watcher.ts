/**
 * List and watch one (type, label selector) as an explicit state machine, after kube-rs's
 * `watcher`: `Empty → InitPage… → InitListed → Watching`, with `Backoff` on errors. A paged list
 * (continue tokens) fills the cache; the watch resumes from the last resourceVersion (bookmarks
 * move it); 410 Gone relists; a watchdog restarts a watch that is silent for `idleMs` (client-node
 * on Deno can stall without an error). A missing CRD of an optional watch is an empty, synced
 * but not live cache (`missing` event) that is retried with backoff and logged once; `kick()`
 * cuts a backoff short when the CRD is seen to appear.
 */
import { Backoff, type Clock, TIMER_CANCELLED } from "../clock.ts";
import type { WatcherEvent } from "./watcher_event.ts";
import { ApiError, isApiError, type WatchEvent } from "../cluster.ts";
import type { Logger } from "../log.ts";
import { WatcherReport } from "./watcher_report.ts";
import {
  DEFAULT_PAGE_SIZE,
  type PageAnswer,
  type ResumeState,
  type StepResult,
  type WatcherOptions,
  type WatcherState,
} from "./watcher_state.ts";

const IDLE: unique symbol = Symbol("idle");
const CANCELLED: unique symbol = Symbol("cancelled");
/** The longest Retry-After a backoff honours: a server's odd answer does not stop a watch for long. */
const MAX_RETRY_AFTER_MS = 5 * 60_000;
/**
 * Why an open watch is closed (its iterator and the waits on it are cancelled): one shared value,
 * since `abort()` without a reason builds a DOMException, stack and all. No one reads it: every
 * wait on these signals ignores why it ended, and the clients end a watch quietly on abort.
 */
const WATCH_CLOSED: Error = new Error("watch closed");

/** One list+watch loop. */
/**
 * How long a watch may be silent before the watchdog restarts it, unless `idleMs` says otherwise
 * (the live operator's watches set a shorter one: src/cli/run.ts).
 */
export const DEFAULT_WATCH_IDLE_MS = 90_000;

export class Watcher {
  /** The current state (tests may inspect it; `run` advances it). */
  state: WatcherState = { kind: "Empty" };
  readonly #o: WatcherOptions;
  readonly #backoff: Backoff;
  readonly #report: WatcherReport;
  /** Aborted by `kick()` to end the current backoff early. */
  #wake = new AbortController();
  /** A kick came: the next (or current) backoff ends at once. */
  #kicked = false;
  /** `relist()` was called: the loop lists from scratch after the current step. */
  #relistDue = false;

  constructor(opts: WatcherOptions, readonly sink: (ev: WatcherEvent) => void) {
    this.#o = opts;
    this.#backoff = new Backoff(opts.backoff ?? { initialMs: 800, maxMs: 30_000 }, opts.random);
    this.#report = new WatcherReport(opts, this.#backoff);
  }

  /** Steps until `signal` aborts, feeding events to the sink; closes an open watch on the way out. */
  async run(signal: AbortSignal): Promise<void> {
    try {
      while (!signal.aborted) {
        const { events, next } = await this.step(this.state, signal);
        if (signal.aborted) {
          if (next.kind === "Watching") closeWatch(next);
          break;
        }
        if (this.#relistDue) {
          // What the interrupted step saw is in the new list too.
          this.#relistDue = false;
          if (next.kind === "Watching") closeWatch(next);
          this.state = { kind: "Empty" };
          this.#report.restart("relist");
          continue;
        }
        this.state = next;
        for (const ev of events) {
          try {
            this.sink(ev);
          } catch (err) {
            this.#log.error("handling a watch event failed", { error: err, event: ev.type });
          }
        }
      }
    } finally {
      if (this.state.kind === "Watching") closeWatch(this.state);
    }
  }

  /** One transition from `state`. Never throws: errors lead to `Backoff` or a relist. */
  step(state: WatcherState, signal: AbortSignal): Promise<StepResult> {
    switch (state.kind) {
      case "Empty":
        return Promise.resolve({ events: [{ type: "init" }], next: { kind: "InitPage" } });
      case "InitPage":
        return this.#listPage(state.continueToken, state.prefetched);
      case "InitListed":
        return Promise.resolve(this.#openWatch(state.resourceVersion, signal));
      case "Watching":
        return this.#next(state, signal);
      case "Backoff": {
        if (this.#kicked) {
          this.#kicked = false;
          return Promise.resolve({ events: [], next: state.then });
        }
        this.#wake = new AbortController();
        const wake = this.#wake.signal;
        return this.#clock.sleep(state.delayMs, AbortSignal.any([signal, wake])).then(
          () => ({ events: [], next: state.then }),
          () => {
            this.#kicked = false;
            return { events: [], next: signal.aborted ? state : state.then };
          },
        );
      }
    }
  }

  /**
   * Retry now instead of after the current backoff, with the backoff reset: something suggests
   * the cause is gone (the type's CRD appeared or changed). Harmless when nothing is wrong.
   */
  kick(): void {
    this.#backoff.reset();
    this.#kicked = true;
    this.#wake.abort(TIMER_CANCELLED);
  }

  /**
   * Lists from scratch now (the open watch is closed, a backoff cut short, a list under way
   * discarded: it was sent earlier), so that the store holds what the API server has now, whatever
   * the watch missed. Returns false when no list has been sent yet: the next one is new enough.
   */
  relist(): boolean {
    const s = this.state;
    if (s.kind === "Empty") return false;
    this.#relistDue = true;
    if (s.kind === "Watching") s.abort.abort(WATCH_CLOSED);
    else if (s.kind === "Backoff") this.kick();
    return true;
  }

  /** True while the type is known not to be served (an optional watch whose CRD is missing). */
  get missing(): boolean {
    return this.#report.missing;
  }

  get #log(): Logger {
    return this.#report.log;
  }

  get #clock(): Clock {
    return this.#o.clock;
  }

  /** One page of the list; it never rejects, so a page sent ahead and then dropped is harmless. */
  #fetchPage(continueToken?: string): Promise<PageAnswer> {
    const { cluster, type, labelSelector, namespace, metadataOnly } = this.#o;
    return cluster.list(type, {
      ...(namespace ? { namespace } : {}),
      ...(metadataOnly ? { metadataOnly } : {}),
      labelSelector,
      limit: this.#o.pageSize ?? DEFAULT_PAGE_SIZE,
      continue: continueToken,
    }).then((page) => ({ page }), (error: unknown) => ({ error }));
  }

  async #listPage(continueToken?: string, prefetched?: Promise<PageAnswer>): Promise<StepResult> {
    const { optional } = this.#o;
    try {
      const answer = await (prefetched ?? this.#fetchPage(continueToken));
      if ("error" in answer) throw answer.error;
      const { page } = answer;
      this.#report.recovered();
      this.#backoff.reset();
      const events: WatcherEvent[] = page.items.map((object) => ({ type: "init-apply", object }));
      if (page.continue) {
        // The next page is asked for now: the API server prepares it while this one is stored.
        const next = this.#fetchPage(page.continue);
        return {
          events,
          next: { kind: "InitPage", continueToken: page.continue, prefetched: next },
        };
      }
      events.push({ type: "init-done", resourceVersion: page.resourceVersion });
      return { events, next: { kind: "InitListed", resourceVersion: page.resourceVersion } };
    } catch (err) {
      if (isApiError(err, 410)) {
        this.#log.info("list continue token expired; listing again", { code: 410 });
        return { events: [], next: { kind: "Empty" } };
      }
      if (isApiError(err, 404) && optional && continueToken === undefined) {
        this.#report.notServed();
        return { events: [{ type: "missing" }], next: this.#backoffTo({ kind: "Empty" }) };
      }
      this.#report.problem("list", err);
      const resume: ResumeState = isApiError(err, 404)
        ? { kind: "Empty" }
        : { kind: "InitPage", continueToken };
      return { events: [], next: this.#backoffTo(resume, err) };
    }
  }

  #openWatch(resourceVersion: string, signal: AbortSignal): StepResult {
    const { cluster, type, labelSelector, namespace, metadataOnly } = this.#o;
    const abort = new AbortController();
    try {
      const iterable = cluster.watch(type, {
        ...(namespace ? { namespace } : {}),
        ...(metadataOnly ? { metadataOnly } : {}),
        labelSelector,
        resourceVersion,
        timeoutSeconds: this.#o.timeoutSeconds ?? 300,
        allowWatchBookmarks: true,
      }, AbortSignal.any([abort.signal, signal]));
      const stream = iterable[Symbol.asyncIterator]();
      return {
        events: [],
        next: { kind: "Watching", resourceVersion, stream, abort, received: 0 },
      };
    } catch (err) {
      this.#report.problem("watch", err);
      return { events: [], next: this.#backoffTo({ kind: "InitListed", resourceVersion }, err) };
    }
  }

  async #next(
    st: Extract<WatcherState, { kind: "Watching" }>,
    signal: AbortSignal,
  ): Promise<StepResult> {
    const pending = st.stream.next();
    pending.catch(() => {}); // it may settle after the watchdog gave up on it
    const idle = new AbortController();
    // Closing the watch (relist) ends the wait too: a stalled stream may ignore the abort.
    const stop = AbortSignal.any([idle.signal, signal, st.abort.signal]);
    const timer = this.#o.watchdog === false
      ? abortOf(stop).then((): typeof CANCELLED => CANCELLED)
      : this.#clock.sleep(this.#o.idleMs ?? DEFAULT_WATCH_IDLE_MS, stop)
        .then((): typeof IDLE => IDLE, (): typeof CANCELLED => CANCELLED);
    let result: IteratorResult<WatchEvent> | typeof IDLE | typeof CANCELLED;
    try {
      result = await Promise.race([pending, timer]);
    } catch (err) {
      idle.abort(TIMER_CANCELLED);
      closeWatch(st);
      return this.#relistDue ? { events: [], next: st } : this.#watchFailed(st, err);
    }
    idle.abort(TIMER_CANCELLED);
    if (result === CANCELLED || this.#relistDue) return { events: [], next: st };
    if (result === IDLE) {
      closeWatch(st);
      this.#report.restart("idle");
      this.#log.info("watch silent for too long; restarting it", {
        idleMs: this.#o.idleMs ?? DEFAULT_WATCH_IDLE_MS,
      });
      return { events: [], next: { kind: "InitListed", resourceVersion: st.resourceVersion } };
    }
    if (result.done) {
      closeWatch(st);
      this.#report.restart("closed");
      const resume: ResumeState = { kind: "InitListed", resourceVersion: st.resourceVersion };
      // A watch that ends before delivering anything is retried with backoff, so a server that
      // closes at once cannot make this loop spin.
      return { events: [], next: st.received === 0 ? this.#backoffTo(resume) : resume };
    }
    return this.#onEvent(st, result.value);
  }

  #onEvent(st: Extract<WatcherState, { kind: "Watching" }>, ev: WatchEvent): StepResult {
    if (ev.type === "ERROR") {
      const status = ev.object as unknown as { code?: number; reason?: string; message?: string };
      return this.#watchFailed(
        st,
        new ApiError(
          status.code ?? 500,
          status.reason ?? "",
          status.message ?? "watch error event",
        ),
      );
    }
    this.#backoff.reset();
    this.#report.recovered();
    const rv = ev.object.metadata?.resourceVersion ?? st.resourceVersion;
    const next = { ...st, resourceVersion: rv, received: st.received + 1 };
    if (ev.type === "BOOKMARK") return { events: [], next };
    const type = ev.type === "DELETED" ? "delete" : "apply";
    return { events: [{ type, object: ev.object }], next };
  }

  #watchFailed(st: Extract<WatcherState, { kind: "Watching" }>, err: unknown): StepResult {
    closeWatch(st);
    if (isApiError(err, 410)) {
      this.#report.restart("gone");
      this.#log.info("watch resourceVersion too old (410 Gone); listing again", {
        resourceVersion: st.resourceVersion,
      });
      return { events: [], next: { kind: "Empty" } };
    }
    this.#report.restart("error");
    this.#report.problem("watch", err);
    const resume: ResumeState = isApiError(err, 404)
      ? { kind: "Empty" }
      : { kind: "InitListed", resourceVersion: st.resourceVersion };
    return { events: [], next: this.#backoffTo(resume, err) };
  }

  /**
   * The next backoff, at least as long as the Retry-After of the failure (at most
   * {@link MAX_RETRY_AFTER_MS}): an API server shedding load (429) or starting up (503) says when
   * to come back, and a list sent sooner only adds to its load, as client-go's requests wait too.
   */
  #backoffTo(then: ResumeState, err?: unknown): WatcherState {
    const delayMs = this.#backoff.next();
    const asked = err instanceof ApiError && err.retryAfterSeconds !== undefined
      ? Math.min(err.retryAfterSeconds * 1000, MAX_RETRY_AFTER_MS)
      : 0;
    return { kind: "Backoff", delayMs: Math.max(delayMs, asked), then };
  }
}

/** Aborts an open watch and lets its iterator finish in the background. */
function closeWatch(st: Extract<WatcherState, { kind: "Watching" }>): void {
  st.abort.abort(WATCH_CLOSED);
  try {
    st.stream.return?.()?.catch(() => {});
  } catch {
    // an iterator that cannot be closed is dropped
  }
}

/** Resolves when `signal` aborts (at once if it has). */
function abortOf(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve(), { once: true });
  });
}
