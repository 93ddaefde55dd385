/**
 * The operator runtime's front door: every other layer imports the runtime from here (tests may
 * reach inside). Manager, caches, queue, runner, leader election, the cluster port, clocks,
 * metrics, health, logs, Events, and the controller specification the controllers fill in.
 */
export * from "./manager.ts";
export * from "./manager_options.ts";
export * from "./controller_spec.ts";
export * from "./health.ts";
export * from "./log.ts";
export * from "./metrics.ts";
export * from "./cluster.ts";
export * from "./clock.ts";
export * from "./parallel.ts";
export { AccessReview } from "./access_review.ts";
export { instrumentCluster } from "./instrumented_cluster.ts";
export { LocalSource, withLocalTypes } from "./local_types.ts";
export { isSubset } from "./diff.ts";
export { Cache, CacheStore, DEFAULT_PAGE_SIZE, type WatcherEvent } from "./cache/mod.ts";
export {
  DEFAULT_WATCH_IDLE_MS,
  Watcher,
  type WatcherOptions,
  type WatcherState,
} from "./cache/mod.ts";
export { WorkQueue, type WorkResult } from "./queue.ts";
export { type PlanRunResult, Runner } from "./runner.ts";
export { LeaderElector, type LeaderElectorOptions } from "./leader.ts";
export { microTime } from "./lease.ts";
export { eventName, eventObject, EventRecorder } from "./events.ts";
