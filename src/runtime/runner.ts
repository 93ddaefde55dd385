/**
 * Carries out a Plan against the Cluster, writing only what is not already observed in the cache:
 * creates first (claims), then the finalizer, server-side applies, deletes, status, finalizer
 * removal last, each a step of the PlanWriter (plan_writes.ts); Events are handed to an
 * EventRecorder, which writes them after the run returns (they never hold it up). Before every
 * write the leadership signal is checked, so a replica that lost its lease stops writing at once.
 * The result says what happened (fed back to the next reconcile as `ctx.lastOutcome`) and what the
 * queue should do next.
 */
import {
  type ApplyOutcome,
  describeRef,
  type EventSpec,
  type ObjectRef,
  type Plan,
  refOf,
  sameRef,
} from "../reconcile/plan.ts";
import { ApiError, classifyError, type ErrorClass, errorMessage } from "./cluster.ts";
import { type KubeObject, objectKey, type ResourceType, typeId } from "../api/object.ts";
import { EventRecorder } from "./events.ts";
import {
  CACHE_BEHIND,
  type JudgedRef,
  PlanWriter,
  type RunState,
  WriteFailed,
  type WriterOptions,
} from "./plan_writes.ts";
import type { Clock, Random } from "./clock.ts";
import type { WorkResult } from "./queue.ts";

/** Options of a Runner (one a controller). */
export interface RunnerOptions extends WriterOptions {
  clock: Clock;
  random: Random;
  /** This replica's name, for Events. */
  identity: string;
  /** Where Events go (the manager shares one among its runners); default: a recorder of its own. */
  events?: EventRecorder;
}

/** What running a Plan came to. */
export interface PlanRunResult {
  /** What happened to the writes; undefined when nothing should be remembered (lease lost, primary gone). */
  outcome?: ApplyOutcome;
  /** What the queue should do with the key. */
  work: WorkResult;
  /** Writes made (Events not counted). */
  writes: number;
}

/** Carries out Plans for one controller. */
export class Runner {
  readonly #o: RunnerOptions;
  readonly #events: EventRecorder;
  readonly #writes: PlanWriter;
  /**
   * Per primary key being run: the primary as its Plan was made from, and what its writes got back
   * (`writeId`) that holds nothing the Plan did not see, for `echoOf`.
   */
  readonly #runs = new Map<string, { primary: KubeObject; wrote: Set<string> }>();

  constructor(opts: RunnerOptions) {
    this.#o = opts;
    this.#writes = new PlanWriter({
      ...opts,
      onWrite: (type, written, changes, by) => {
        const run = by && this.#runs.get(objectKey(by));
        // The primary's own write (its status, its finalizer) comes back with whatever else
        // changed on the server first: a spec edit made just before it is in the answer, and the
        // watch's event of that edit, older than the answer, never reaches the cache. Such an
        // answer is not an echo: the key must run again for it.
        if (run && !(sameObject(written, run.primary) && unseenChange(run.primary, written))) {
          run.wrote.add(writeId(type, written));
        }
        opts.onWrite?.(type, written, changes, by);
      },
    });
    this.#events = opts.events ?? new EventRecorder({
      cluster: opts.cluster,
      clock: opts.clock,
      log: opts.log,
      identity: opts.identity,
      metrics: opts.metrics,
    });
  }

  /** The recorder this runner's Events go to (`flush` it to wait for them). */
  get events(): EventRecorder {
    return this.#events;
  }

  /**
   * While the Plan of primary `key` runs: a check, good once the run has ended, of whether `obj`
   * (as a change showed it) is what one of the run's writes got back. Undefined when no Plan of
   * `key` is running.
   */
  echoOf(key: string, type: ResourceType, obj: KubeObject): (() => boolean) | undefined {
    const run = this.#runs.get(key);
    if (!run) return undefined;
    const id = writeId(type, obj);
    return () => run.wrote.has(id);
  }

  /**
   * Runs `plan` for the primary `primary` (as cached when the plan was made). Called in the same
   * task as the reconcile that made `plan`, so the cache is still as the reconcile read it (what
   * `plan.confirm` is compared with). `lastOutcome` is the outcome the plan was made knowing;
   * `signal` aborts when the lease is lost.
   */
  async run(
    primaryType: ResourceType,
    primary: KubeObject,
    plan: Plan,
    lastOutcome: ApplyOutcome | undefined,
    signal: AbortSignal,
  ): Promise<PlanRunResult> {
    const key = objectKey(primary);
    // Before anything is awaited: what the Plan's status was judged from (see PlanWriter.judged).
    const judged = this.#writes.judged(plan.confirm ?? []);
    this.#runs.set(key, { primary, wrote: new Set() });
    try {
      return await this.#run(primaryType, primary, plan, judged, lastOutcome, signal);
    } finally {
      this.#runs.delete(key);
    }
  }

  /**
   * Deletes what a primary that is gone owned (the Plan made for it lists them), before the
   * garbage collector gets to it: each only if the operator made it and as the cache last saw it
   * (its uid, PlanWriter.delete). A failure is retried; the garbage collector stays the backstop.
   */
  async deleteOrphans(refs: readonly ObjectRef[], signal: AbortSignal): Promise<PlanRunResult> {
    const state = { writes: 0 };
    try {
      for (const ref of refs) await this.#writes.delete(ref, state, signal);
    } catch (err) {
      const cause = err instanceof WriteFailed ? err.cause : err;
      // Gone already (the garbage collector was first), or another object of that name now (the
      // uid precondition failed): nothing of the deleted primary's is left to delete.
      if (cause instanceof ApiError && (cause.code === 404 || cause.code === 409)) {
        return { work: { type: "done" }, writes: state.writes };
      }
      const kind = classifyError(cause);
      if (kind === "not-leader") return { work: { type: "terminal" }, writes: state.writes };
      const ref = err instanceof WriteFailed ? describeRef(err.ref) : "an orphan";
      this.#o.log.warn(`${ref}: delete failed (its owner is gone): ${errorMessage(cause)}`);
      return {
        work: kind === "terminal" ? { type: "terminal" } : { type: "retry" },
        writes: state.writes,
      };
    }
    return { work: { type: "done" }, writes: state.writes };
  }

  async #run(
    primaryType: ResourceType,
    primary: KubeObject,
    plan: Plan,
    judged: JudgedRef[],
    lastOutcome: ApplyOutcome | undefined,
    signal: AbortSignal,
  ): Promise<PlanRunResult> {
    const state = { writes: 0, primary };
    const generation = primary.metadata.generation;
    // A plan made while the last pass had failed describes that failure.
    const stale = lastOutcome !== undefined && !lastOutcome.ok;
    try {
      for (const obj of plan.create ?? []) await this.#writes.create(obj, state, signal);
      await this.#writes.addFinalizer(primaryType, state, plan, signal);
      for (const obj of plan.apply) await this.#writes.apply(obj, state, signal);
      if (plan.blockers && (plan.delete.length > 0 || plan.finalizer?.remove)) {
        for (const b of plan.blockers) {
          await this.#writes.expectNone({ ...b, labelSelector: "" }, "blocks the deletion", signal);
        }
      }
      for (const ref of plan.delete) await this.#writes.delete(ref, state, signal);
      // Every write of a stale plan has now succeeded, so the failure its status describes is
      // over: writing it would put a stale status, then the true one a moment later (two writes
      // for one change, seen when the API server restarts). The key is looked at again at once.
      if (!stale) {
        await this.#writes.status(primaryType, state, plan.status, signal, judged);
      }
      await this.#writes.removeFinalizer(primaryType, state, plan, signal);
    } catch (err) {
      const result = await this.#failed(primaryType, state, plan, judged, lastOutcome, err, signal);
      if (result.outcome) this.#recordEvents(state.primary, plan.events, signal);
      return result;
    }
    this.#recordEvents(state.primary, plan.events, signal);
    const outcome: ApplyOutcome = { ok: true, generation };
    // A stale plan's status was not written: look again now.
    const requeueAfterMs = stale ? 0 : plan.requeueAfterMs;
    return { outcome, work: { type: "done", requeueAfterMs }, writes: state.writes };
  }

  async #failed(
    primaryType: ResourceType,
    state: RunState,
    plan: Plan,
    judged: JudgedRef[],
    lastOutcome: ApplyOutcome | undefined,
    err: unknown,
    signal: AbortSignal,
  ): Promise<PlanRunResult> {
    const { writes, primary } = state;
    const ref = err instanceof WriteFailed ? err.ref : refOf(primary);
    const cause = err instanceof WriteFailed ? err.cause : err;
    const kind = classifyError(cause);
    if (kind === "not-leader") return { work: { type: "terminal" }, writes };
    const primaryGone = cause instanceof ApiError && cause.code === 404 &&
      sameRef(ref, refOf(primary));
    if (primaryGone) return { work: { type: "done" }, writes };
    const message = cause instanceof Error ? cause.message : String(cause);
    const outcome: ApplyOutcome = {
      ok: false,
      failed: ref,
      error: message,
      generation: primary.metadata.generation,
    };
    const behind = cause instanceof ApiError && cause.reason === CACHE_BEHIND;
    if (behind) {
      // Not a failed write: a watch is behind (or stalled), and the status waits for it.
      this.#o.log.warn(message, { reason: cause.reason });
    } else {
      this.#o.log.error(`${describeRef(ref)}: write failed: ${message}`, {
        code: cause instanceof ApiError ? cause.code : undefined,
        reason: cause instanceof ApiError ? cause.reason : undefined,
      });
    }
    // The plan was made knowing the previous pass failed, so its status reports a failure:
    // write it even though this pass failed too, or the error would never reach the status
    // (unless the status was what failed: what it rests on is newer than the cache).
    if (lastOutcome && !lastOutcome.ok && !sameRef(ref, refOf(primary)) && !behind) {
      try {
        await this.#writes.status(primaryType, state, plan.status, signal, judged);
      } catch (statusErr) {
        this.#o.log.warn("status write after a failed apply failed too", { error: statusErr });
      }
    }
    return { outcome, work: retryWork(kind, cause, () => this.#soon()), writes: state.writes };
  }

  /** 100–500 ms: long enough for the watch to deliver the object that conflicted. */
  #soon(): number {
    return 100 + Math.floor(this.#o.random.next() * 400);
  }

  /** Queues the plan's Events; best-effort, written after this run returns. */
  #recordEvents(primary: KubeObject, events: EventSpec[], signal: AbortSignal): void {
    for (const ev of events) this.#events.record(primary, ev, signal);
  }
}

/** One version of one object: what a write got back, and what a change may show again. */
/** Whether `a` and `b` are the same object (kind and key), whatever their versions. */
function sameObject(a: KubeObject, b: KubeObject): boolean {
  return a.kind === b.kind && objectKey(a) === objectKey(b);
}

/**
 * Whether `written`, what a write of the primary got back, holds a change its Plan was not made
 * from (`seen`): another uid, generation (a spec edit), deletion, labels or annotations. The
 * Plan's own writes of the primary change its status and finalizers only.
 */
function unseenChange(seen: KubeObject, written: KubeObject): boolean {
  const a = seen.metadata;
  const b = written.metadata;
  return a.uid !== b.uid || a.generation !== b.generation ||
    a.deletionTimestamp !== b.deletionTimestamp ||
    !sameStrings(a.labels, b.labels) || !sameStrings(a.annotations, b.annotations);
}

function sameStrings(
  a: Readonly<Record<string, string>> | undefined,
  b: Readonly<Record<string, string>> | undefined,
): boolean {
  const ka = Object.keys(a ?? {});
  if (ka.length !== Object.keys(b ?? {}).length) return false;
  return ka.every((k) => b?.[k] === a?.[k]);
}

function writeId(type: ResourceType, obj: KubeObject): string {
  return `${typeId(type)}|${objectKey(obj)}|${obj.metadata.resourceVersion ?? ""}`;
}

/**
 * What the queue does after a failed write of class `kind` (not "not-leader"): a conflict is tried
 * again `soon()`, a throttled write after the server's Retry-After (else soon), a terminal error
 * waits for the next change, anything else backs off.
 */
export function retryWork(kind: ErrorClass, cause: unknown, soon: () => number): WorkResult {
  switch (kind) {
    case "conflict":
      return { type: "retrySoon", afterMs: soon() };
    case "throttled": {
      const after = cause instanceof ApiError && cause.retryAfterSeconds
        ? cause.retryAfterSeconds * 1000
        : soon();
      return { type: "retrySoon", afterMs: after };
    }
    case "terminal":
      return { type: "terminal" };
    default:
      return { type: "retry" };
  }
}
