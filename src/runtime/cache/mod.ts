/**
 * The watch cache: lists and watches (a watcher's state machine and its reports), the stores and
 * their indexes, and what the cache keeps of an object (projections, the write fence). The files
 * behind this front are private to it.
 */
export { Cache, type CacheReader } from "./cache.ts";
export { type CacheChange, CacheStore, type WatcherEvent } from "./store.ts";
export { ownedFieldsOf, prepare, type Projection, specDigest } from "./prepare.ts";
export { Watcher, type WatcherOptions, type WatcherState } from "./watcher.ts";
