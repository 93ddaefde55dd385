/**
 * What a simulated request meets besides the store: the server a client shares (store, lists,
 * write log, open watches), the faults an injector may decide for a request or a watch, and the
 * latency drawn for each.
 */
import type { ApiError } from "../../src/runtime/mod.ts";
import type { ResourceType } from "../../src/api/object.ts";
import type { WriteVerb } from "./history.ts";
import type { Lister } from "./list.ts";
import type { Store } from "./store.ts";
import type { WatchStream } from "./watch.ts";
import type { WriteLog } from "./writelog.ts";

/** The verbs a request can have. */
export type RequestVerb = WriteVerb | "get" | "list" | "watch";

/** A fault decided for one request. */
export type RequestFault =
  | { kind: "error"; error: ApiError }
  /** No answer within the client's timeout; `executed` says whether the server did it anyway. */
  | { kind: "timeout"; executed: boolean; afterMs: number }
  /** The server takes `delayMs` to handle it (a slow etcd, an admission webhook); it lands then. */
  | { kind: "slow"; delayMs: number };

/** A fault decided for one watch. */
export interface WatchFault {
  kind: "drop" | "stall" | "gone";
  afterMs: number;
}

/** What a client asks the fault injector. */
export interface FaultSource {
  request(
    actor: string,
    verb: RequestVerb,
    type: ResourceType,
    namespace: string | undefined,
    name: string | undefined,
  ): RequestFault | undefined;
  watch(actor: string, type: ResourceType): WatchFault | undefined;
  /** How a too-old watch version is reported by this run's server. */
  goneAs(): "event" | "throw";
}

/** Everything a client shares with the server. */
export interface ServerHandle {
  store: Store;
  lister: Lister;
  log: WriteLog;
  faults?: FaultSource;
  /** Open watches, for scenario faults that hit the watches open now. */
  watches?: Set<OpenWatch>;
  onRequest?: RequestListener;
}

/** Told of every request as its client sends it (before latency, faults or execution). */
export type RequestListener = (
  actor: string,
  verb: RequestVerb,
  type: ResourceType,
  namespace: string | undefined,
  name: string | undefined,
) => void;

/** A watch open now. */
export interface OpenWatch {
  actor: string;
  type: ResourceType;
  stream: WatchStream;
}

/** Latency of one request or watch, drawn per request. */
export type Latency = (verb: RequestVerb) => number;
