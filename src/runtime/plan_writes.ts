/**
 * The writes of a Plan, one step each: create, add or remove the finalizer (the latter only once a
 * live list finds nothing left), server-side apply, delete, status. Each checks the leadership
 * signal first, skips what the cache shows is already so, wraps a failure in WriteFailed with the
 * object it concerns, and caches what the API returned (read-your-writes). The order of the steps
 * and what a failure means are the Runner's (runner.ts).
 */
import { describeRef, type ObjectRef, type Plan, refOf } from "../reconcile/plan.ts";
import { FIELD_MANAGER, MANAGED_BY, MANAGED_BY_LABEL } from "../reconcile/labels.ts";
import { resourceFor } from "../api/resources.ts";
import { isObserved } from "../reconcile/observed.ts";
import { specDigest } from "../reconcile/hash.ts";
import type { CacheChange, RunnerCache } from "./controller_spec.ts";
import {
  ApiError,
  type Cluster,
  isApiError,
  NotLeaderError,
  TerminalError,
  type WriteOptions,
} from "./cluster.ts";
import type { Logger } from "./log.ts";
import type { Metrics } from "./metrics.ts";
import {
  applyEntryOf,
  type KubeObject,
  parseResourceVersion,
  type ResourceType,
  typeName,
} from "../api/object.ts";
import { deepEqual } from "../api/json.ts";
import { ownedFieldMissing } from "./diff.ts";
import { addFinalizerOps, removeFinalizerOps } from "./finalizers.ts";

/** What a PlanWriter writes with and tells (the Runner's options carry them). */
export interface WriterOptions {
  cluster: Cluster;
  cache: RunnerCache;
  log: Logger;
  metrics?: Metrics;
  /** Controller name for metrics and logs. */
  controller: string;
  /** Finds the resource type of an apiVersion and kind; default: the operator's RESOURCES table. */
  resolveType?: (apiVersion: string, kind: string) => ResourceType | undefined;
  /**
   * Told every object a successful apply, status apply or finalizer patch got back from the API,
   * and the cache changes that caching it made (the manager queues the keys they concern), with
   * the primary whose Plan made the write (undefined for an object a check found, not written).
   */
  onWrite?: (
    type: ResourceType,
    written: KubeObject,
    changes: CacheChange[],
    by: KubeObject | undefined,
  ) => void;
  /**
   * Milliseconds each write may still take before the server must give it up (the leader's
   * `termLeftMs`); undefined: no bound (no leader election).
   */
  writeBoundMs?: () => number;
}

/**
 * The reason of the conflict a Plan fails with when an object its status rests on is newer on the
 * API server than in the cache ({@link PlanWriter.confirm}): no write failed, the cache was behind.
 */
export const CACHE_BEHIND = "CacheBehind";

/**
 * An object a status rests on, as the cache held it when the status was judged: `cached` absent
 * when the cache holds no objects of its type (nothing to compare), `resourceVersion` absent when
 * the cache held no such object.
 */
export interface JudgedRef {
  ref: ObjectRef;
  cached?: true;
  resourceVersion?: string;
}

/** A failed write: the object and the error. */
export class WriteFailed extends Error {
  constructor(readonly ref: ObjectRef, override readonly cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause));
  }
}

/** A Plan's run so far: writes made, and the primary as last written or cached. */
export interface RunState {
  writes: number;
  primary: KubeObject;
}

/**
 * True for a failed write that may have taken effect all the same: no answer came (the connection
 * dropped, the client's deadline passed) or the server answered that it gave up waiting (504).
 */
export function mayHaveLanded(err: unknown): boolean {
  return err instanceof ApiError && (err.code === 0 || err.code === 504);
}

/** Carries out single writes of Plans for one controller. */
export class PlanWriter {
  readonly #o: WriterOptions;
  readonly #warnedUnwatched = new Set<string>();
  /**
   * Objects whose last write failed without an answer ({@link mayHaveLanded}), by `typeName
   * namespace/name`. Before such an object is written again it is read from the API server: if
   * the write landed, the cache learns it and the same write is not made twice (the watch that
   * would have shown it is often the connection that dropped).
   */
  readonly #unsure = new Set<string>();

  constructor(opts: WriterOptions) {
    this.#o = opts;
  }

  /** The options of one write: not sent at all once the term is over. */
  #guard(signal: AbortSignal): WriteOptions {
    if (signal.aborted) throw new NotLeaderError();
    const bound = this.#o.writeBoundMs?.();
    if (bound === undefined) return {};
    if (bound <= 0) throw new NotLeaderError();
    return { timeoutMs: bound };
  }

  async #write<T>(
    ref: ObjectRef,
    signal: AbortSignal,
    f: (opts: WriteOptions) => Promise<T>,
    target?: ResourceType,
  ): Promise<T> {
    const opts = this.#guard(signal);
    try {
      const out = await f(opts);
      if (target) this.#unsure.delete(unsureKey(target, ref.namespace, ref.name));
      return out;
    } catch (err) {
      if (target && mayHaveLanded(err)) {
        this.#unsure.add(unsureKey(target, ref.namespace, ref.name));
      }
      throw new WriteFailed(ref, err);
    }
  }

  /**
   * When the last write of an object went unanswered, reads it from the API server and caches
   * what it finds (a newer version than the cache's only): the checks that follow then see a
   * write that landed. Returns the object read, or undefined when there was nothing to settle.
   */
  async #settle(
    type: ResourceType,
    ref: ObjectRef,
    signal: AbortSignal,
  ): Promise<KubeObject | undefined> {
    const key = unsureKey(type, ref.namespace, ref.name);
    if (!this.#unsure.has(key)) return undefined;
    let found: KubeObject | undefined;
    try {
      found = await this.#write(
        ref,
        signal,
        () => this.#o.cluster.get(type, ref.namespace, ref.name),
      );
    } catch (err) {
      // Not allowed to read it: write as before rather than never again.
      if (!(err instanceof WriteFailed && isApiError(err.cause, 403))) throw err;
      this.#o.log.warn(`${describeRef(ref)}: cannot read it back (403); writing it again`);
    }
    this.#unsure.delete(key);
    if (found) this.#wrote(type, found, undefined);
    return found;
  }

  /** `state.primary` as the API server has it now, if its last write went unanswered. */
  async #settlePrimary(type: ResourceType, state: RunState, signal: AbortSignal): Promise<void> {
    const found = await this.#settle(type, refOf(state.primary), signal);
    if (found && newer(found, state.primary)) state.primary = found;
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

  /** Adds the Plan's finalizer to the primary unless it has it or is being deleted. */
  async addFinalizer(
    type: ResourceType,
    state: RunState,
    plan: Plan,
    signal: AbortSignal,
  ): Promise<void> {
    const name = plan.finalizer?.add;
    if (!name || state.primary.metadata.deletionTimestamp) return;
    if (state.primary.metadata.finalizers?.includes(name)) return;
    await this.#settlePrimary(type, state, signal);
    const meta = state.primary.metadata;
    if (meta.deletionTimestamp || meta.finalizers?.includes(name)) return this.#skipped();
    const ops = addFinalizerOps(meta.finalizers, name);
    const ref = refOf(state.primary);
    state.primary = await this.#write(
      ref,
      signal,
      (o) => this.#o.cluster.patch(type, meta.namespace, meta.name, ops, o),
      type,
    );
    state.writes++;
    this.#wrote(type, state.primary, state.primary);
  }

  /** Removes the Plan's finalizer once nothing the Plan names is left. */
  async removeFinalizer(
    type: ResourceType,
    state: RunState,
    plan: Plan,
    signal: AbortSignal,
  ): Promise<void> {
    const name = plan.finalizer?.remove;
    const meta = state.primary.metadata;
    const index = name ? meta.finalizers?.indexOf(name) ?? -1 : -1;
    if (index < 0) return;
    for (const left of plan.noneLeft ?? []) {
      await this.expectNone(left, "is left; the finalizer stays until it is gone", signal);
    }
    await this.#settlePrimary(type, state, signal);
    const now = state.primary.metadata.finalizers?.indexOf(name!) ?? -1;
    if (now < 0) return this.#skipped();
    const ops = removeFinalizerOps(now, name!);
    const written = await this.#write(
      refOf(state.primary),
      signal,
      (o) => this.#o.cluster.patch(type, meta.namespace, meta.name, ops, o),
      type,
    );
    state.writes++;
    this.#wrote(type, written, state.primary);
  }

  /**
   * Lists `left` from the API server (cluster-wide, by its label selector if it has one); anything
   * found fails the Plan as a conflict (retried soon) after being handed to the cache, so the next
   * reconcile sees it (and deletes it, or waits for it). `why` ends the error's message.
   */
  async expectNone(
    left: { apiVersion: string; kind: string; labelSelector: string; appliedBy?: string },
    why: string,
    signal: AbortSignal,
  ): Promise<void> {
    const type = this.#type(left.apiVersion, left.kind);
    const ref = {
      apiVersion: left.apiVersion,
      kind: left.kind,
      name: `(${left.labelSelector || "all"})`,
    };
    const page = await this.#write(
      ref,
      signal,
      // A kind the API server no longer serves (its CRD deleted with the module) has no objects.
      () =>
        this.#o.cluster.list(type, left.labelSelector ? { labelSelector: left.labelSelector } : {})
          .catch((err) => {
            if (err instanceof ApiError && err.code === 404) return { items: [] as KubeObject[] };
            throw err;
          }),
    );
    const found = page.items.filter((o) =>
      !o.metadata.deletionTimestamp &&
      (left.appliedBy === undefined || applyEntryOf(o, left.appliedBy) !== undefined)
    );
    if (found.length === 0) return;
    for (const obj of found) {
      this.#wrote(type, { ...obj, apiVersion: left.apiVersion, kind: left.kind }, undefined);
    }
    const first = found[0].metadata;
    throw new WriteFailed(
      { ...ref, ...(first.namespace ? { namespace: first.namespace } : {}), name: first.name },
      new ApiError(
        409,
        "Conflict",
        `${left.kind} ${first.namespace ? `${first.namespace}/` : ""}${first.name} exists ` +
          `(the cache had not shown it) and ${why}`,
      ),
    );
  }

  /**
   * What the cache holds of each of `refs` now: the resourceVersions a Plan's status is judged
   * from, when called in the same task as the reconcile that made the Plan (no watch event can
   * come between). {@link PlanWriter.confirm} compares the live copies with these, not with the
   * cache at the time of the status write, which a watch may have moved on meanwhile.
   */
  judged(refs: readonly ObjectRef[]): JudgedRef[] {
    return refs.map((ref) => {
      const type = this.#type(ref.apiVersion, ref.kind);
      if (!this.#o.cache.has(type)) return { ref };
      const resourceVersion = this.#o.cache.get(type, ref.namespace, ref.name)?.metadata
        .resourceVersion;
      return { ref, cached: true, ...(resourceVersion ? { resourceVersion } : {}) };
    });
  }

  /**
   * Reads `judged.ref` from the API server and compares it with the version the status was judged
   * from: the same resourceVersion (or absent from both) passes. Otherwise the live copy, if any,
   * is handed to the cache (the next reconcile sees it) and the Plan fails as a conflict (retried
   * soon): what it would write was judged from a cache behind the API server.
   */
  async confirm(judged: JudgedRef, signal: AbortSignal): Promise<void> {
    const { ref } = judged;
    // A type the cache does not hold was not what the status was judged from: nothing to compare
    // (and comparing would fail every pass).
    if (!judged.cached) return;
    const type = this.#type(ref.apiVersion, ref.kind);
    const live = await this.#write(
      ref,
      signal,
      () => this.#o.cluster.get(type, ref.namespace, ref.name),
    );
    const seen = live?.metadata.resourceVersion;
    if (seen === judged.resourceVersion) return;
    if (live) this.#wrote(type, { ...live, apiVersion: ref.apiVersion, kind: ref.kind }, undefined);
    const was = judged.resourceVersion === undefined
      ? "absent from the cache"
      : `cached at ${judged.resourceVersion}`;
    const is = seen === undefined ? "gone from the API server" : `at ${seen} there`;
    const why = `${describeRef(ref)} is ${is} but was ${was} when the status was judged`;
    throw new WriteFailed(ref, new ApiError(409, CACHE_BEHIND, `${why}: it is judged again`));
  }

  /**
   * A create-if-absent. 409 AlreadyExists fails the Plan, after reading the object back: when the
   * cache was behind, the next pass sees it there; when it is there but outside what the operator
   * watches (another's object of that name, without the operator's labels), the cache keeps
   * ignoring it and the key backs off (classifyError: AlreadyExists is no conflict to retry soon).
   */
  async create(
    obj: KubeObject,
    state: RunState,
    signal: AbortSignal,
  ): Promise<void> {
    const type = this.#type(obj.apiVersion, obj.kind);
    const ref = refOf(obj);
    let written: KubeObject;
    try {
      written = await this.#write(ref, signal, (o) => this.#o.cluster.create(type, obj, o));
    } catch (err) {
      if (err instanceof WriteFailed && isApiError(err.cause, 409)) {
        const live = await this.#write(
          ref,
          signal,
          () => this.#o.cluster.get(type, ref.namespace, ref.name),
        );
        if (live) {
          this.#wrote(type, { ...live, apiVersion: ref.apiVersion, kind: ref.kind }, undefined);
        }
        const cause = err.cause as ApiError;
        throw new WriteFailed(
          ref,
          new ApiError(
            409,
            cause.reason,
            `${cause.message}; if the operator did not make it (it lacks the operator's labels), ` +
              `it is not the operator's to change: rename or remove it`,
          ),
        );
      }
      throw err;
    }
    state.writes++;
    this.#wrote(type, written, state.primary);
  }

  /** Server-side applies `obj` unless the cache shows it applied already. */
  async apply(
    obj: KubeObject,
    state: RunState,
    signal: AbortSignal,
  ): Promise<void> {
    const type = this.#type(obj.apiVersion, obj.kind);
    const { namespace, name } = obj.metadata;
    await this.#settle(type, refOf(obj), signal);
    if (this.#listed(type)) {
      const observed = this.#o.cache.get(type, namespace, name);
      // Skip only when nothing would change: every desired field is observed, and no field this
      // operator applied before has been dropped from the desired state (SSA would remove it).
      const owned = this.#o.cache.ownedFields?.(type, namespace, name);
      if (
        observed && observedHere(obj, observed, this.#o.cache.specDigest?.(type, namespace, name))
      ) {
        if (!ownedFieldMissing(owned, obj)) return this.#skipped();
      }
    } else if (!this.#o.cache.has(type)) this.#warnUnwatched(type);
    const written = await this.#write(
      refOf(obj),
      signal,
      (o) => this.#o.cluster.apply(type, obj, { fieldManager: FIELD_MANAGER, force: true, ...o }),
      type,
    );
    state.writes++;
    this.#wrote(type, written, state.primary);
  }

  /** True when the cache's answer for `type` is a completed list's: else ask the API server. */
  #listed(type: ResourceType): boolean {
    return this.#o.cache.caches?.(type) ?? this.#o.cache.has(type);
  }

  /** Deletes what the operator created (background propagation, uid precondition). */
  async delete(
    ref: ObjectRef,
    state: Pick<RunState, "writes">,
    signal: AbortSignal,
  ): Promise<void> {
    const type = this.#type(ref.apiVersion, ref.kind);
    const observed = this.#listed(type)
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
    this.#unsure.delete(unsureKey(type, ref.namespace, ref.name));
    await this.#write(ref, signal, (o) =>
      this.#o.cluster.delete(type, ref.namespace, ref.name, {
        propagationPolicy: "Background",
        ...(uid ? { preconditions: { uid } } : {}),
        ...o,
      }));
    state.writes++;
  }

  /**
   * Applies the primary's status unless it is the observed one, after reading live each object in
   * `confirm` the status rests on (from {@link PlanWriter.judged}; see {@link PlanWriter.confirm}).
   */
  async status(
    type: ResourceType,
    state: RunState,
    status: Record<string, unknown> | undefined,
    signal: AbortSignal,
    confirm: readonly JudgedRef[] = [],
  ): Promise<void> {
    if (status === undefined) return;
    if (deepEqual(status, state.primary.status)) return this.#skipped();
    await this.#settlePrimary(type, state, signal);
    if (deepEqual(status, state.primary.status)) return this.#skipped();
    for (const judged of confirm) await this.confirm(judged, signal);
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
      (o) =>
        this.#o.cluster.applyStatus(type, body, { fieldManager: FIELD_MANAGER, force: true, ...o }),
      type,
    );
    state.writes++;
    this.#wrote(type, state.primary, state.primary);
  }

  /**
   * Caches what a write got back, so the next reconcile of the key sees it even before the watch
   * delivers it (it would otherwise apply again, or, while deleting, take children it just created
   * for absent), and tells the manager. A failure here is not the write's.
   */
  #wrote(type: ResourceType, written: KubeObject, by: KubeObject | undefined): void {
    try {
      const changes = this.#o.cache.written?.(type, written) ?? [];
      this.#o.onWrite?.(type, written, changes, by);
    } catch (err) {
      this.#o.log.error("handling a written object failed", { error: err, kind: type.kind });
    }
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

/** The key of {@link PlanWriter}'s unsure writes. */
function unsureKey(type: ResourceType, namespace: string | undefined, name: string): string {
  return `${typeName(type)} ${namespace ?? ""}/${name}`;
}

/**
 * True when `a` is a later version than `b`, by resourceVersion as the cache compares them
 * (`parseResourceVersion`); `b` without a comparable one is older, `a` without one never newer.
 */
function newer(a: KubeObject, b: KubeObject): boolean {
  const x = parseResourceVersion(a.metadata.resourceVersion);
  const y = parseResourceVersion(b.metadata.resourceVersion);
  return x !== undefined && (y === undefined || x > y);
}
