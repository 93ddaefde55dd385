/**
 * What a controller is, to the runtime: a primary type, the types it reads, and a pure reconcile
 * from cached state to a Plan. The runtime owns watching, queueing and writing.
 */
import type { ApplyOutcome, Plan } from "../reconcile/plan.ts";
import type { ModuleImages } from "../api/images.ts";
import {
  type KubeObject,
  objectKey,
  type Projection,
  type ResourceType,
  typeId,
  typeName,
} from "../api/object.ts";

/** Read access to the watch caches. Objects are frozen snapshots; never mutate them. */
export interface CacheReader {
  /** All cached objects of a type, optionally in one namespace, in a stable order (namespace/name). */
  list(type: ResourceType, namespace?: string): readonly KubeObject[];
  /** One cached object. */
  get(type: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined;
  /**
   * True when the watch of `type` is established on a served type and has listed it, so that what
   * `list` returns, even nothing, is what the API server has. False while the type's CRD is
   * missing, its list fails or has not finished: then "no objects" means "not known". A controller
   * that acts on the absence of objects (deleting a CRD deletes all of its objects) must check it.
   * The runtime always implements it; a reader without it (a test's fake) counts as live.
   */
  isLive?(type: ResourceType): boolean;
  /**
   * The cached objects of `type` that the index `index` (see `IndexSpec`) files under `value`, in
   * namespace/name order. The runtime implements it for every index a controller declares; a
   * reader without it (a test's fake) is read through `list` instead (see `byIndexOf`).
   */
  byIndex?(type: ResourceType, index: string, value: string): readonly KubeObject[];
  /**
   * The operator's own applied `fieldsV1` of an object (its server-side apply's managedFields
   * entry), if the object has one: undefined means the operator's field manager never applied it.
   * The runtime always implements it; a reader without it (a test's fake) cannot tell.
   */
  ownedFields?(type: ResourceType, namespace: string | undefined, name: string): unknown;
}

/** The cache as a controller's loop reads it: whether a watch has listed, besides the objects. */
export interface ControllerCache extends CacheReader {
  /** True when the watch of (type, selector) exists and has completed its first list. */
  isSynced(type: ResourceType, labelSelector?: string): boolean;
}

/** A cache the runner can ask whether a type is watched, and which fields the operator owns. */
export interface RunnerCache extends CacheReader {
  has(type: ResourceType): boolean;
  /**
   * True when what `get` answers for `type` is what a completed list gave (see `Cache.caches`);
   * a reader without it counts every type it `has` as listed.
   */
  caches?(type: ResourceType): boolean;
  /**
   * The digest of an object's spec when its cache keeps a digest instead of the spec (see
   * `Projection`); the runner then compares the desired spec's digest with it.
   */
  specDigest?(type: ResourceType, namespace: string | undefined, name: string): string | undefined;
  /** Read-your-writes: caches an object a write got back, if newer than the cached one. */
  written?(type: ResourceType, obj: KubeObject): CacheChange[];
}

/** A change a store made: what the manager turns into queue keys. */
export type CacheChange =
  | { type: "apply"; object: KubeObject; old?: KubeObject }
  | { type: "delete"; object: KubeObject };

/**
 * A secondary index of a watched type (client-go's Indexer): `keys` names the values an object is
 * filed under, kept up to date as the watch changes, so a trigger or reconcile looks objects up by
 * value instead of scanning a namespace.
 */
export interface IndexSpec {
  type: ResourceType;
  /** Unique among a manager's indexes of `type`. */
  name: string;
  /** The values `obj` is filed under; must not throw, and depends on `obj` alone. */
  keys(obj: KubeObject): string[];
}

/** `cache.byIndex` when the reader has it, else the same answer from `list` (for test fakes). */
export function byIndexOf(
  cache: CacheReader,
  spec: IndexSpec,
  value: string,
): readonly KubeObject[] {
  if (cache.byIndex) return cache.byIndex(spec.type, spec.name, value);
  return cache.list(spec.type).filter((o) => spec.keys(o).includes(value));
}

/** Inputs of a reconcile besides the cache: all the impure things, passed in as values. */
export interface ReconcileContext {
  /** Epoch milliseconds from the runtime's Clock. */
  now: number;
  /** What happened to the writes of the previous Plan for this key, if the runtime remembers. */
  lastOutcome?: ApplyOutcome;
  images: ModuleImages;
  /** The operator's namespace: where it keeps its own objects (the module claims). */
  namespace: string;
}

/** A type a controller reads; the runtime lists, watches and caches it. */
export interface WatchSpec {
  type: ResourceType;
  labelSelector?: string;
  /**
   * Watch only the operator's own namespace (ReconcileContext.namespace): for objects the operator
   * keeps there, which RBAC grants in that namespace only. The selector must single them out.
   */
  ownNamespace?: boolean;
  /**
   * Watch only this namespace: for objects the operator keeps in a namespace of its own (the
   * global rate limit engine's), which RBAC grants there only. Its (type, selector) must not be
   * watched in another namespace too: they would share one cache.
   */
  namespace?: string;
  /** True when the type's CRD may be missing (installed later by the operator): watch it when it appears. */
  optional?: boolean;
  /**
   * True for a type served inside the operator (local_types.ts): no CRD, no RBAC, never asked of
   * the API server, so the startup checks skip it.
   */
  local?: boolean;
  /**
   * What the controller reads of these objects: the cache holds only that (memory). Every
   * controller watching the same type and selector must give the same projection (the manager
   * refuses to start otherwise). Not for the primary, whose status the runner compares whole.
   */
  project?: Projection;
  /** Which primaries a change to one of these objects concerns; none when absent. */
  trigger?: MapFunc;
  /**
   * Watch only what the primaries need (a RateLimit: the Pods of its namespace), not the whole
   * type: the parts of the type that each primary object reads. The runtime opens one watch a
   * distinct scope while some primary names it, closes it (forgetting what it cached) when none
   * does, and reconciles a primary only once every scope it names has listed. Such a watch is not
   * waited for at start-up. Called with the primary's current state on each of its changes; must
   * not throw.
   */
  scopes?: (primary: KubeObject, cache: CacheReader) => WatchScope[];
}

/** A part of a type a scoped watch lists and watches (see `WatchSpec.scopes`). */
export interface WatchScope {
  /** One namespace; undefined: every namespace. */
  namespace?: string;
  /** A label selector (`k=v,...`); undefined: every object. */
  labelSelector?: string;
}

/** The one string a scope is known by. */
export function scopeId(scope: WatchScope): string {
  return `${scope.namespace ?? ""}|${scope.labelSelector ?? ""}`;
}

/**
 * A map function (controller-runtime's `EnqueueRequestsFromMapFunc`): the keys (`namespace/name`)
 * of the primaries a change to `obj` concerns. The runtime calls it with the object's new state
 * and, on an update, its old state too, so a label moved away still reaches the old owner. It
 * must not throw (a throw is logged and wakes nothing). Reusable ones: src/controllers/triggers.ts.
 */
export type MapFunc = (obj: KubeObject, cache: CacheReader) => string[];

/** A controller definition. */
export interface ControllerSpec {
  /** Short name used in logs and metrics: `serverless`, `scaler`, `ratelimit`. */
  name: string;
  primary: ResourceType;
  /** Watch the primary in this namespace only (see `WatchSpec.namespace`); default: everywhere. */
  primaryNamespace?: string;
  /** Secondary types read by `reconcile` (the primary is always watched). */
  watches: WatchSpec[];
  /** Indexes of watched types that `triggers` and `reconcile` read through `byIndex`. */
  indexes?: IndexSpec[];
  /**
   * Which other primaries a change to a primary concerns (its own key is queued anyway): those
   * whose decision reads it, as a module's peers or a RateLimit's rivals.
   */
  peers?: MapFunc;
  /**
   * Pure: the Plan for one primary, from cached state; undefined for nothing to do. For a primary
   * no longer in the cache (deleted), only the Plan's deletes are run: what it owned, removed
   * before the garbage collector gets to it.
   */
  reconcile(key: string, cache: CacheReader, ctx: ReconcileContext): Plan | undefined;
  /**
   * Loads what `reconcile` reads besides the cache when it is too large to hold while there is
   * nothing to reconcile (a module's upstream CRDs: about 0.5 MB of text for KEDA). The runtime
   * awaits it once, before this controller's first reconcile, and retries a failure like a failed
   * reconcile; `reconcile` is never called before it has resolved.
   */
  preload?(): Promise<void>;
  /**
   * True when the controller has nothing to do while its primary type has no objects: its
   * triggers map every other watched object to primaries, and there are none. The runtime then
   * opens its other watches (those no other controller needs always) only while a primary object
   * exists, and closes them, forgetting what they cached, when the last one is gone. A module
   * controller reads 19 types: an idle operator held 19 watch streams on the API server for them
   * and listed all 19 before its first reconcile.
   */
  watchesNeedPrimary?: boolean;
  /**
   * True when its Plans are fixpoints: reconciling a primary again right after its own Plan's
   * writes, with nothing else changed, plans no write. The runtime then does not reconcile the
   * primary again for its own Plan's writes (its status, its children), whether their answer or
   * the watch shows them first: one reconcile per change instead of two. Any other change, and
   * what those writes change for other primaries (its peers and rivals), is queued as always; a
   * failed Plan is retried as always.
   */
  settlesInOnePass?: boolean;
  /**
   * Reconciles of this controller that may run at once (default: the manager's, else
   * DEFAULT_CONCURRENCY). 1 when one primary's Plan depends on the others' status, so each must
   * see the last one's writes.
   */
  concurrency?: number;
}

/**
 * Reconciles of one controller at once, unless it sets its own (never two of one key). A
 * RateLimit's reconcile is two writes one after the other, so what bounds a controller is the API
 * server's answer time: 1,000 RateLimits took 24.8 s to Ready at 2, 18.6 s at 4 and 19.2 s at 8
 * (bench/RESULTS.md, issue 46).
 */
export const DEFAULT_CONCURRENCY = 4;
/** The most reconciles at once a controller may be given (`--concurrency`'s bound). */
export const MAX_CONCURRENCY = 64;

/**
 * The keys a change to `obj` of `type` concerns for `spec`: a primary's own key and its `peers`,
 * and the `trigger` of every watch of the type, in that order, each key once. A map function that
 * throws is told to `onError` and the others still count (without `onError`, the throw goes up).
 */
export function triggersOf(
  spec: Pick<ControllerSpec, "primary" | "watches" | "peers">,
  onError?: (err: unknown, obj: KubeObject) => void,
): (type: ResourceType, obj: KubeObject, cache: CacheReader) => string[] {
  const byType = new Map<string, MapFunc[]>();
  const add = (type: ResourceType, f: MapFunc | undefined) => {
    if (f) byType.set(typeId(type), [...(byType.get(typeId(type)) ?? []), f]);
  };
  const primaryId = typeId(spec.primary);
  add(spec.primary, (obj) => [objectKey(obj)]);
  add(spec.primary, spec.peers);
  for (const w of spec.watches) if (typeId(w.type) !== primaryId) add(w.type, w.trigger);
  return (type, obj, cache) => {
    const keys = new Set<string>();
    for (const f of byType.get(typeId(type)) ?? []) {
      try {
        for (const k of f(obj, cache)) keys.add(k);
      } catch (err) {
        if (!onError) throw err;
        onError(err, obj);
      }
    }
    return [...keys];
  };
}

/**
 * Runs the preload of every controller given. A Manager preloads lazily, at a controller's first
 * reconcile; a simulation or test on a virtual clock calls this before starting one, so that time
 * does not run ahead while a real import is pending (and a seed replays the same).
 */
export async function preloadControllers(controllers: readonly ControllerSpec[]): Promise<void> {
  await Promise.all(controllers.map((c) => c.preload?.()));
}

/** One watch the manager runs. */
export interface PlannedWatch {
  type: ResourceType;
  selector?: string;
  /** Watched in the operator's namespace only. */
  ownNamespace?: boolean;
  /** Watched in this namespace only. */
  namespace?: string;
  /** False when every controller that reads it marked it optional (its CRD may be missing). */
  required: boolean;
  /** Served inside the operator (see `WatchSpec.local`). */
  local?: boolean;
  /** What its cache keeps of each object (see `WatchSpec.project`). */
  project?: Projection;
  /**
   * Primaries whose objects keep this watch open: it is read only by controllers with
   * `watchesNeedPrimary`, as a secondary. Undefined: open from start to stop.
   */
  wakers?: ResourceType[];
  /** A scoped watch (see `WatchSpec.scopes`): its primary and what each primary object needs. */
  scoped?: { primary: ResourceType; scopes: NonNullable<WatchSpec["scopes"]> };
}

/**
 * The watches of all controllers: one per (type, label selector), required if any requires it,
 * opened on demand (`wakers`) when only controllers with `watchesNeedPrimary` read it, as a
 * secondary.
 */
export function planWatches(controllers: readonly ControllerSpec[]): PlannedWatch[] {
  const wanted = new Map<string, PlannedWatch>();
  const scoped: PlannedWatch[] = [];
  /** Per watch: the primaries that wake it, or null once some reader needs it always. */
  const wakers = new Map<string, ResourceType[] | null>();
  for (const c of controllers) {
    for (
      const w of [
        {
          type: c.primary,
          labelSelector: undefined,
          optional: false,
          namespace: c.primaryNamespace,
        },
        ...c.watches,
      ]
    ) {
      if ("scopes" in w && w.scopes) {
        scoped.push({
          type: w.type,
          required: !w.optional,
          ...(w.project ? { project: w.project } : {}),
          scoped: { primary: c.primary, scopes: w.scopes },
        });
        continue;
      }
      const id = `${typeId(w.type)}|${w.labelSelector ?? ""}|${w.namespace ?? ""}`;
      const lazy = c.watchesNeedPrimary === true && w.type !== c.primary;
      const waking = wakers.get(id);
      if (!lazy) wakers.set(id, null);
      else if (waking !== null) wakers.set(id, [...(waking ?? []), c.primary]);
      const before = wanted.get(id);
      const required = (before?.required ?? false) || !w.optional;
      const ownNamespace = "ownNamespace" in w && w.ownNamespace === true;
      const local = "local" in w && w.local === true;
      const project = "project" in w ? w.project : undefined;
      if (before && before.project !== project) {
        throw new Error(
          `${typeName(w.type)}: controllers project one watch two ways (${
            before.project?.name ?? "none"
          }, ${project?.name ?? "none"}); give them the same projection`,
        );
      }
      wanted.set(id, {
        type: w.type,
        selector: w.labelSelector,
        required,
        ...(ownNamespace ? { ownNamespace } : {}),
        ...(local ? { local } : {}),
        ...(w.namespace ? { namespace: w.namespace } : {}),
        ...(project ? { project } : {}),
      });
    }
  }
  const planned = [...wanted].map(([id, w]) => {
    const by = wakers.get(id);
    return by ? { ...w, wakers: by } : w;
  });
  for (const w of scoped) {
    if (
      planned.some((p) => typeId(p.type) === typeId(w.type)) ||
      scoped.filter((o) => typeId(o.type) === typeId(w.type)).length > 1
    ) {
      throw new Error(`${typeName(w.type)}: a scoped watch must be the type's only watch`);
    }
  }
  return [...planned, ...scoped];
}
