/** The operator runtime: manager, caches, queue, runner, leader election, metrics, health, logs. */
export * from "./manager.ts";
export * from "./health.ts";
export * from "./log.ts";
export * from "./metrics.ts";
export * from "./cluster.ts";
export { isSubset } from "./diff.ts";
export { Cache, CacheStore, type WatcherEvent } from "./cache/mod.ts";
export type { CacheChange } from "./controller_spec.ts";
export { Watcher, type WatcherOptions, type WatcherState } from "./cache/mod.ts";
export { WorkQueue, type WorkResult } from "./queue.ts";
export { type PlanRunResult, Runner } from "./runner.ts";
export { LeaderElector, type LeaderElectorOptions } from "./leader.ts";
export { microTime } from "./lease.ts";
export { eventName, EventRecorder } from "./events.ts";
