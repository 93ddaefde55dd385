/** The operator runtime: manager, caches, queue, runner, leader election, metrics, health, logs. */
export * from "./manager.ts";
export * from "./log.ts";
export * from "./metrics.ts";
