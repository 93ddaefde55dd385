/** What a Watcher is given, and the states of its list-and-watch machine. */
import type { BackoffOptions, Clock, Random } from "../clock.ts";
import type { WatcherEvent } from "./watcher_event.ts";
import type { Cluster, ListPage, WatchEvent } from "../cluster.ts";
import type { ResourceType } from "../../api/object.ts";
import type { Logger } from "../log.ts";
import type { Metrics } from "../metrics.ts";

/** Objects a list page asks for when WatcherOptions.pageSize is not given. */
export const DEFAULT_PAGE_SIZE = 500;

/** Options of a Watcher. */
export interface WatcherOptions {
  cluster: Cluster;
  clock: Clock;
  random: Random;
  log: Logger;
  metrics?: Metrics;
  type: ResourceType;
  labelSelector?: string;
  /** Watch this namespace only (RBAC may grant no more); default: every namespace. */
  namespace?: string;
  /** The type's CRD may be missing: a 404 on list means "none yet", not an error. */
  optional?: boolean;
  /** List and watch each object's metadata only (see `Projection.metadataOnly`). */
  metadataOnly?: boolean;
  /** Page size of the list; default DEFAULT_PAGE_SIZE. */
  pageSize?: number;
  /** Server-side watch timeout; default 300. */
  timeoutSeconds?: number;
  /** Restart a watch that delivers nothing (not even a bookmark) for this long; default 90 000. */
  idleMs?: number;
  /** False: never restart a silent watch (a source inside the process, without bookmarks). */
  watchdog?: boolean;
  /** Retry delays; default 800 ms doubling to 30 s, jittered. */
  backoff?: BackoffOptions;
  /** While true, failures log at debug and are not remembered (start-up checks still running). */
  quiet?: () => boolean;
}

/** Where a Backoff goes when it is over. */
export type ResumeState =
  | { kind: "Empty" }
  | { kind: "InitPage"; continueToken?: string }
  | { kind: "InitListed"; resourceVersion: string };

/** The watcher's state. */
export type WatcherState =
  /** Nothing listed yet, or a relist is due (start, 410 Gone, CRD missing). */
  | { kind: "Empty" }
  /**
   * Listing: the next page is fetched with `continueToken` (none for the first page), or was sent
   * already (`prefetched`), as soon as the page before it arrived.
   */
  | { kind: "InitPage"; continueToken?: string; prefetched?: Promise<PageAnswer> }
  /** Listed (or a watch ended): open a watch from `resourceVersion`. */
  | { kind: "InitListed"; resourceVersion: string }
  /** A watch is open. */
  | {
    kind: "Watching";
    resourceVersion: string;
    stream: AsyncIterator<WatchEvent>;
    abort: AbortController;
    /** Events and bookmarks received on this watch. */
    received: number;
  }
  /** Waiting `delayMs` after an error, then `then`. */
  | { kind: "Backoff"; delayMs: number; then: ResumeState };

/** A list page, or why it could not be had: a page request sent ahead never rejects. */
export type PageAnswer = { page: ListPage } | { error: unknown };

/** The events one step produced and the state it leads to. */
export interface StepResult {
  events: WatcherEvent[];
  next: WatcherState;
}
