/**
 * Carries out a Plan against the Cluster, writing only what is not already observed in the cache:
 * creates first (claims), then the finalizer, server-side applies, deletes, status, finalizer
 * removal last; Events are handed to an EventRecorder, which writes them after the run returns
 * (they never hold it up). Before every write it checks the leadership signal, so a replica that
 * lost its lease stops writing at once. The result says what happened (fed back to the next reconcile as
 * `ctx.lastOutcome`) and what the queue should do next.
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
import { FIELD_MANAGER, MANAGED_BY, MANAGED_BY_LABEL } from "../reconcile/labels.ts";
import { resourceFor } from "../api/resources.ts";
import { typeName } from "./cache.ts";
import { ApiError, type KubeObject, type ResourceType } from "./cluster.ts";
import { isObserved } from "../reconcile/observed.ts";
import { deepEqual, ownedFieldMissing } from "./diff.ts";
import { specDigest } from "./prepare.ts";
import { classifyError, NotLeaderError, TerminalError } from "./errors.ts";
import { EventRecorder } from "./events.ts";
import { addFinalizerOps, removeFinalizerOps } from "./finalizers.ts";
import type { RunnerOptions, RunResult } from "./runner_options.ts";
import { retryWork, WriteFailed } from "./write_failure.ts";

export type { RunnerCache, RunnerOptions, RunResult } from "./runner_options.ts";

/** Carries out Plans for one controller. */
export class Runner {
  readonly #o: RunnerOptions;
  readonly #events: EventRecorder;
  readonly #warnedUnwatched = new Set<string>();

  constructor(opts: RunnerOptions) {
    this.#o = opts;
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
   * Runs `plan` for the primary `primary` (as cached when the plan was made). `lastOutcome` is the
   * outcome the plan was made knowing; `signal` aborts when the lease is lost.
   */
  async run(
    primaryType: ResourceType,
    primary: KubeObject,
    plan: Plan,
    lastOutcome: ApplyOutcome | undefined,
    signal: AbortSignal,
  ): Promise<RunResult> {
    const state = { writes: 0, primary };
    const generation = primary.metadata.generation;
    try {
      for (const obj of plan.create ?? []) await this.#create(obj, state, signal);
      await this.#addFinalizer(primaryType, state, plan, signal);
      for (const obj of plan.apply) await this.#apply(obj, state, signal);
      for (const ref of plan.delete) await this.#delete(ref, state, signal);
      await this.#status(primaryType, state, plan.status, signal);
      await this.#removeFinalizer(primaryType, state, plan, signal);
    } catch (err) {
      const result = await this.#failed(primaryType, state, plan, lastOutcome, err, signal);
      if (result.outcome) this.#recordEvents(state.primary, plan.events, signal);
      return result;
    }
    this.#recordEvents(state.primary, plan.events, signal);
    const outcome: ApplyOutcome = { ok: true, generation };
    // A plan made while the last pass had failed described that failure: look again now.
    const stale = lastOutcome !== undefined && !lastOutcome.ok;
    const requeueAfterMs = stale ? 0 : plan.requeueAfterMs;
    return { outcome, work: { type: "done", requeueAfterMs }, writes: state.writes };
  }

  async #failed(
    primaryType: ResourceType,
    state: { writes: number; primary: KubeObject },
    plan: Plan,
    lastOutcome: ApplyOutcome | undefined,
    err: unknown,
    signal: AbortSignal,
  ): Promise<RunResult> {
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
    this.#o.log.error(`${describeRef(ref)}: write failed: ${message}`, {
      code: cause instanceof ApiError ? cause.code : undefined,
      reason: cause instanceof ApiError ? cause.reason : undefined,
    });
    // The plan was made knowing the previous pass failed, so its status reports a failure:
    // write it even though this pass failed too, or the error would never reach the status.
    if (lastOutcome && !lastOutcome.ok && !sameRef(ref, refOf(primary))) {
      try {
        await this.#status(primaryType, state, plan.status, signal);
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

  #guard(signal: AbortSignal): void {
    if (signal.aborted) throw new NotLeaderError();
  }

  async #write<T>(ref: ObjectRef, signal: AbortSignal, f: () => Promise<T>): Promise<T> {
    this.#guard(signal);
    try {
      return await f();
    } catch (err) {
      throw new WriteFailed(ref, err);
    }
  }

  #skipped(): void {
    this.#o.metrics?.writesSkipped.inc({ controller: this.#o.controller });
  }

  #type(apiVersion: string, kind: string): ResourceType {
    const type = (this.#o.resolveType ?? resourceFor)(apiVersion, kind);
    if (!type) {
      throw new TerminalError(`unknown kind ${kind} of ${apiVersion}: add it to RESOURCES`);
    }
    return type;
  }

  async #addFinalizer(
    type: ResourceType,
    state: { writes: number; primary: KubeObject },
    plan: Plan,
    signal: AbortSignal,
  ): Promise<void> {
    const name = plan.finalizer?.add;
    const meta = state.primary.metadata;
    if (!name || meta.deletionTimestamp || meta.finalizers?.includes(name)) return;
    const ops = addFinalizerOps(meta.finalizers, name);
    const ref = refOf(state.primary);
    state.primary = await this.#write(
      ref,
      signal,
      () => this.#o.cluster.patch(type, meta.namespace, meta.name, ops),
    );
    state.writes++;
    this.#wrote(type, state.primary);
  }

  async #removeFinalizer(
    type: ResourceType,
    state: { writes: number; primary: KubeObject },
    plan: Plan,
    signal: AbortSignal,
  ): Promise<void> {
    const name = plan.finalizer?.remove;
    const meta = state.primary.metadata;
    const index = name ? meta.finalizers?.indexOf(name) ?? -1 : -1;
    if (index < 0) return;
    for (const left of plan.noneLeft ?? []) await this.#expectNoneLeft(left, signal);
    const ops = removeFinalizerOps(index, name!);
    const written = await this.#write(
      refOf(state.primary),
      signal,
      () => this.#o.cluster.patch(type, meta.namespace, meta.name, ops),
    );
    state.writes++;
    this.#wrote(type, written);
  }

  /**
   * Lists `left` from the API server; anything found fails the Plan as a conflict (retried soon)
   * after being handed to the cache, so the next reconcile sees it and deletes it.
   */
  async #expectNoneLeft(
    left: { apiVersion: string; kind: string; labelSelector: string },
    signal: AbortSignal,
  ): Promise<void> {
    const type = this.#type(left.apiVersion, left.kind);
    const ref = { apiVersion: left.apiVersion, kind: left.kind, name: `(${left.labelSelector})` };
    const page = await this.#write(
      ref,
      signal,
      () => this.#o.cluster.list(type, { labelSelector: left.labelSelector }),
    );
    const found = page.items.filter((o) => !o.metadata.deletionTimestamp);
    if (found.length === 0) return;
    for (const obj of found) {
      this.#wrote(type, { ...obj, apiVersion: left.apiVersion, kind: left.kind });
    }
    const first = found[0].metadata;
    throw new WriteFailed(
      { ...ref, ...(first.namespace ? { namespace: first.namespace } : {}), name: first.name },
      new ApiError(
        409,
        "Conflict",
        `${left.kind} ${first.namespace ? `${first.namespace}/` : ""}${first.name} still exists ` +
          `(the cache had not shown it); the finalizer stays until it is gone`,
      ),
    );
  }

  /** A create-if-absent: 409 AlreadyExists fails the Plan (a conflict: the cache was behind). */
  async #create(obj: KubeObject, state: { writes: number }, signal: AbortSignal): Promise<void> {
    const type = this.#type(obj.apiVersion, obj.kind);
    const written = await this.#write(
      refOf(obj),
      signal,
      () => this.#o.cluster.create(type, obj),
    );
    state.writes++;
    this.#wrote(type, written);
  }

  async #apply(obj: KubeObject, state: { writes: number }, signal: AbortSignal): Promise<void> {
    const type = this.#type(obj.apiVersion, obj.kind);
    const { namespace, name } = obj.metadata;
    if (this.#o.cache.has(type)) {
      const observed = this.#o.cache.get(type, namespace, name);
      // Skip only when nothing would change: every desired field is observed, and no field this
      // operator applied before has been dropped from the desired state (SSA would remove it).
      const owned = this.#o.cache.ownedFields?.(type, namespace, name);
      if (
        observed && observedHere(obj, observed, this.#o.cache.specDigest?.(type, namespace, name))
      ) {
        if (!ownedFieldMissing(owned, obj)) return this.#skipped();
      }
    } else this.#warnUnwatched(type);
    const written = await this.#write(
      refOf(obj),
      signal,
      () => this.#o.cluster.apply(type, obj, { fieldManager: FIELD_MANAGER, force: true }),
    );
    state.writes++;
    this.#wrote(type, written);
  }

  async #delete(ref: ObjectRef, state: { writes: number }, signal: AbortSignal): Promise<void> {
    const type = this.#type(ref.apiVersion, ref.kind);
    const observed = this.#o.cache.has(type)
      ? this.#o.cache.get(type, ref.namespace, ref.name)
      : await this.#write(ref, signal, () => this.#o.cluster.get(type, ref.namespace, ref.name));
    if (!observed || observed.metadata.deletionTimestamp) return this.#skipped();
    if (observed.metadata.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY) {
      // Never delete what the operator did not create, whatever a plan says.
      throw new WriteFailed(
        ref,
        new TerminalError(
          `refusing to delete ${describeRef(ref)}: it lacks ${MANAGED_BY_LABEL}=${MANAGED_BY}`,
        ),
      );
    }
    const uid = observed.metadata.uid;
    await this.#write(ref, signal, () =>
      this.#o.cluster.delete(type, ref.namespace, ref.name, {
        propagationPolicy: "Background",
        ...(uid ? { preconditions: { uid } } : {}),
      }));
    state.writes++;
  }

  async #status(
    type: ResourceType,
    state: { writes: number; primary: KubeObject },
    status: Record<string, unknown> | undefined,
    signal: AbortSignal,
  ): Promise<void> {
    if (status === undefined) return;
    if (deepEqual(status, state.primary.status)) return this.#skipped();
    const { apiVersion, kind, metadata: { name, namespace } } = state.primary;
    const body: KubeObject = {
      apiVersion,
      kind,
      metadata: namespace ? { name, namespace } : { name },
      status,
    };
    state.primary = await this.#write(
      refOf(state.primary),
      signal,
      () => this.#o.cluster.applyStatus(type, body, { fieldManager: FIELD_MANAGER, force: true }),
    );
    state.writes++;
    this.#wrote(type, state.primary);
  }

  /**
   * Caches what a write got back, so the next reconcile of the key sees it even before the watch
   * delivers it (it would otherwise apply again, or, while deleting, take children it just created
   * for absent), and tells the manager. A failure here is not the write's.
   */
  #wrote(type: ResourceType, written: KubeObject): void {
    try {
      const changes = this.#o.cache.written?.(type, written) ?? [];
      this.#o.onWrite?.(type, written, changes);
    } catch (err) {
      this.#o.log.error("handling a written object failed", { error: err, kind: type.kind });
    }
  }

  /** Queues the plan's Events; best-effort, written after this run returns. */
  #recordEvents(primary: KubeObject, events: EventSpec[], signal: AbortSignal): void {
    for (const ev of events) this.#events.record(primary, ev, signal);
  }

  #warnUnwatched(type: ResourceType): void {
    const name = typeName(type);
    if (this.#warnedUnwatched.has(name)) return;
    this.#warnedUnwatched.add(name);
    this.#o.log.warn(
      `${name} is applied but not watched, so every reconcile writes it; add it to the watches`,
    );
  }
}

/**
 * True when applying `desired` would change nothing in `observed`. With the spec's digest (its
 * cache dropped the spec), the spec must be the same up to key order and omitted empty fields, and
 * the rest is compared as usual. A spec that someone else extended then no longer counts as
 * observed, so it is applied again on its owner's reconciles: a no-op for the API server, which
 * changes nothing and so wakes nothing.
 */
function observedHere(desired: KubeObject, observed: KubeObject, digest: string | undefined) {
  if (digest === undefined) return isObserved(desired, observed);
  return specDigest(desired.spec) === digest &&
    isObserved({ ...desired, spec: undefined }, observed);
}
