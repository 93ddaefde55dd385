/**
 * What a controller is, to the runtime: a primary type, the types it reads, and a pure reconcile
 * from cached state to a Plan. The runtime owns watching, queueing and writing.
 */
import type { ApplyOutcome, Plan } from "../reconcile/plan.ts";
import type { ModuleImages } from "../api/images.ts";
import type { KubeObject, ResourceType } from "../api/object.ts";
import type { Projection } from "./cache/mod.ts";

export type { Projection } from "./cache/mod.ts";

export type { CacheReader } from "./cache/mod.ts";
import type { CacheReader } from "./cache/mod.ts";

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

export type { ModuleImages } from "../api/images.ts";

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
  /** True when the type's CRD may be missing (installed later by the operator): watch it when it appears. */
  optional?: boolean;
  /**
   * What the controller reads of these objects: the cache holds only that (memory). Every
   * controller watching the same type and selector must give the same projection (the manager
   * refuses to start otherwise). Not for the primary, whose status the runner compares whole.
   */
  project?: Projection;
}

/** A controller definition. */
export interface ControllerSpec {
  /** Short name used in logs and metrics: `serverless`, `scaler`, `ratelimit`. */
  name: string;
  primary: ResourceType;
  /** Secondary types read by `reconcile` (the primary is always watched). */
  watches: WatchSpec[];
  /** Indexes of watched types that `triggers` and `reconcile` read through `byIndex`. */
  indexes?: IndexSpec[];
  /** Keys (`namespace/name`) of primaries to reconcile when `obj` of `type` changed (added, updated, deleted). */
  triggers(type: ResourceType, obj: KubeObject, cache: CacheReader): string[];
  /** Pure: the Plan for one primary, from cached state. Undefined when the primary is not in the cache. */
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
   * Reconciles of this controller that may run at once (default: the manager's). 1 when one
   * primary's Plan depends on the others' status, so each must see the last one's writes.
   */
  concurrency?: number;
}

/**
 * Runs the preload of every controller given. A Manager preloads lazily, at a controller's first
 * reconcile; a simulation or test on a virtual clock calls this before starting one, so that time
 * does not run ahead while a real import is pending (and a seed replays the same).
 */
export async function preloadControllers(controllers: readonly ControllerSpec[]): Promise<void> {
  await Promise.all(controllers.map((c) => c.preload?.()));
}
