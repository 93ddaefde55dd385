/** What a Runner is given (its ports, its cache) and what running a Plan comes to. */
import type { ApplyOutcome } from "../reconcile/plan.ts";
import type { CacheChange } from "./cache/mod.ts";
import type { Clock, Random } from "./clock.ts";
import type { Cluster } from "./cluster.ts";
import type { KubeObject, ResourceType } from "../api/object.ts";
import type { CacheReader } from "./controller_spec.ts";
import type { EventRecorder } from "./events.ts";
import type { Logger } from "./log.ts";
import type { Metrics } from "./metrics.ts";
import type { WorkResult } from "./queue.ts";

/** A cache the runner can ask whether a type is watched, and which fields the operator owns. */
export interface RunnerCache extends CacheReader {
  has(type: ResourceType): boolean;
  /**
   * True when what `get` answers for `type` is what a completed list gave (see `Cache.caches`);
   * a reader without it counts every type it `has` as listed.
   */
  caches?(type: ResourceType): boolean;
  /** The operator's own applied `fieldsV1` of an object, if known. */
  ownedFields?(type: ResourceType, namespace: string | undefined, name: string): unknown;
  /**
   * The digest of an object's spec when its cache keeps a digest instead of the spec (see
   * `Projection`); the runner then compares the desired spec's digest with it.
   */
  specDigest?(type: ResourceType, namespace: string | undefined, name: string): string | undefined;
  /** Read-your-writes: caches an object a write got back, if newer than the cached one. */
  written?(type: ResourceType, obj: KubeObject): CacheChange[];
}

/** Options of a Runner (one a controller). */
export interface RunnerOptions {
  cluster: Cluster;
  cache: RunnerCache;
  clock: Clock;
  random: Random;
  log: Logger;
  metrics?: Metrics;
  /** Controller name for metrics and logs. */
  controller: string;
  /** This replica's name, for Events. */
  identity: string;
  /** Finds the resource type of an apiVersion and kind; default: the operator's RESOURCES table. */
  resolveType?: (apiVersion: string, kind: string) => ResourceType | undefined;
  /**
   * Told every object a successful apply, status apply or finalizer patch got back from the API,
   * and the cache changes that caching it made (the manager queues the keys they concern).
   */
  onWrite?: (type: ResourceType, written: KubeObject, changes: CacheChange[]) => void;
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
