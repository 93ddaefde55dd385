/**
 * Kubernetes Events (core/v1) about reconciled objects. Names are deterministic
 * (`<object>.<hash of uid, type, reason, message>`), so the same event is written once: repeats
 * are skipped from memory, and after a restart the create answers 409 and is dropped. An Event
 * write never fails a reconcile, and never delays one: Events are queued and written off the
 * reconcile's path (client-go's EventBroadcaster does the same), a few at a time, in order for
 * each object.
 */
import type { EventSpec } from "../reconcile/plan.ts";
import { RESOURCES } from "../api/resources.ts";
import type { Clock } from "./clock.ts";
import { type Cluster, isApiError } from "./cluster.ts";
import type { KubeObject } from "../api/object.ts";
import type { Logger } from "./log.ts";
import type { Metrics } from "./metrics.ts";
import { kubeTime } from "../api/time.ts";

/** Events waiting to be written, by default; beyond it the oldest is dropped. */
export const EVENT_QUEUE_CAPACITY = 256;

/** Event writes in flight at once, by default. */
export const EVENT_CONCURRENCY = 4;

/** The component name on every Event. */
export const EVENT_COMPONENT = "platform-operator";

/** Options of an EventRecorder. */
export interface EventRecorderOptions {
  cluster: Cluster;
  clock: Clock;
  log: Logger;
  /** This replica's name (`reportingInstance`). */
  identity: string;
  /** Event names remembered as written; default 4096. */
  memory?: number;
  /** Events waiting to be written; default EVENT_QUEUE_CAPACITY. */
  capacity?: number;
  /** Event writes in flight at once; default EVENT_CONCURRENCY. */
  concurrency?: number;
  /** Counts dropped Events (`events_dropped_total`). */
  metrics?: Metrics;
}

/** FNV-1a, 32 bit, as 8 hex digits: a short stable hash for names. */
export function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, "0");
}

/** The deterministic Event name for `ev` about `obj`. */
export function eventName(obj: KubeObject, ev: EventSpec): string {
  const hash = fnv1a([obj.metadata.uid ?? "", ev.type, ev.reason, ev.message].join("\u0000"));
  return `${obj.metadata.name.slice(0, 244)}.${hash}`;
}

/** The core/v1 Event object for `ev` about `obj` at time `now`. */
export function eventObject(
  obj: KubeObject,
  ev: EventSpec,
  now: number,
  identity: string,
): KubeObject {
  const { name, namespace, uid, resourceVersion } = obj.metadata;
  const time = kubeTime(now);
  return {
    apiVersion: "v1",
    kind: "Event",
    metadata: { name: eventName(obj, ev), namespace: namespace ?? "default" },
    involvedObject: {
      apiVersion: obj.apiVersion,
      kind: obj.kind,
      name,
      ...(namespace ? { namespace } : {}),
      ...(uid ? { uid } : {}),
      ...(resourceVersion ? { resourceVersion } : {}),
    },
    type: ev.type,
    reason: ev.reason,
    message: ev.message,
    source: { component: EVENT_COMPONENT },
    reportingComponent: EVENT_COMPONENT,
    reportingInstance: identity,
    firstTimestamp: time,
    lastTimestamp: time,
    count: 1,
  };
}

/** An Event waiting to be written. */
interface Pending {
  /** `namespace/name` of the Event. */
  id: string;
  /** The object it is about: Events about one object are written one at a time, in order. */
  subject: string;
  body: KubeObject;
  /** Aborts when the lease is lost: a replica that stopped leading writes nothing more. */
  signal?: AbortSignal;
}

/**
 * Writes Events, each at most once, off the reconcile's path: `record` only queues. At most
 * `concurrency` writes are in flight, never two about the same object, so Events about one object
 * land in the order they were recorded. When more than `capacity` wait, the oldest is dropped
 * (counted, and one warning for each overload). No timers: writes start from `record` (on a
 * microtask, after the caller's synchronous work) and from finished writes, so virtual clocks replay
 * it exactly.
 */
export class EventRecorder {
  readonly #o: EventRecorderOptions;
  readonly #written = new Set<string>();
  readonly #queue: Pending[] = [];
  readonly #busy = new Set<string>();
  #inFlight = 0;
  #pumpScheduled = false;
  #dropped = 0;
  #overloaded = false;
  #idleWaiters: (() => void)[] = [];

  constructor(opts: EventRecorderOptions) {
    this.#o = opts;
  }

  /**
   * Queues `ev` about `obj` unless it was recorded before; the write starts after the caller's
   * synchronous work. Nothing is queued once `signal` has aborted. Never throws.
   */
  record(obj: KubeObject, ev: EventSpec, signal?: AbortSignal): void {
    if (signal?.aborted) return;
    const body = eventObject(obj, ev, this.#o.clock.now(), this.#o.identity);
    const id = `${body.metadata.namespace}/${body.metadata.name}`;
    if (this.#written.has(id)) return;
    this.#remember(id);
    const { apiVersion, kind, metadata: { namespace, name } } = obj;
    const subject = `${apiVersion}|${kind}|${namespace ?? ""}|${name}`;
    if (this.#queue.length >= (this.#o.capacity ?? EVENT_QUEUE_CAPACITY)) this.#dropOldest();
    this.#queue.push({ id, subject, body, signal });
    if (!this.#pumpScheduled) {
      this.#pumpScheduled = true;
      queueMicrotask(() => {
        this.#pumpScheduled = false;
        this.#pump();
      });
    }
  }

  /** Events waiting or being written. */
  get pending(): number {
    return this.#queue.length + this.#inFlight;
  }

  /** Events dropped because too many were waiting. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Resolves once every queued Event has been written (or has failed). Bound the wait yourself. */
  flush(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Forgets every queued Event (a crash: they are never written); writes in flight go on. */
  discard(): void {
    for (const p of this.#queue.splice(0)) this.#written.delete(p.id);
    this.#settle();
  }

  #dropOldest(): void {
    const oldest = this.#queue.shift();
    if (!oldest) return;
    // Not written, so not remembered: the same Event may be recorded again later.
    this.#written.delete(oldest.id);
    this.#dropped++;
    this.#o.metrics?.eventsDropped.inc();
    if (this.#overloaded) return;
    this.#overloaded = true;
    this.#o.log.warn(
      "too many Events waiting to be written: dropping the oldest until the queue empties",
      { capacity: this.#o.capacity ?? EVENT_QUEUE_CAPACITY, droppedTotal: this.#dropped },
    );
  }

  /** Starts writes while there is room, taking the oldest Event whose object has none in flight. */
  #pump(): void {
    const limit = this.#o.concurrency ?? EVENT_CONCURRENCY;
    while (this.#inFlight < limit) {
      const i = this.#queue.findIndex((p) => !this.#busy.has(p.subject));
      if (i < 0) break;
      const [p] = this.#queue.splice(i, 1);
      if (p.signal?.aborted) {
        this.#written.delete(p.id);
        continue;
      }
      this.#busy.add(p.subject);
      this.#inFlight++;
      void this.#write(p).then(() => {
        this.#busy.delete(p.subject);
        this.#inFlight--;
        this.#pump();
      });
    }
    this.#settle();
  }

  async #write(p: Pending): Promise<void> {
    try {
      await this.#o.cluster.create(RESOURCES.Event, p.body);
    } catch (err) {
      if (!isApiError(err, 409)) {
        const { kind, name } = p.body.involvedObject as { kind: string; name: string };
        this.#o.log.warn("could not record an Event (the reconcile goes on)", {
          reason: p.body.reason,
          object: `${kind} ${p.body.metadata.namespace}/${name}`,
          error: err,
        });
      }
    }
  }

  /** Wakes `flush` callers once nothing waits or runs; ends an overload. */
  #settle(): void {
    if (this.#queue.length === 0) this.#overloaded = false;
    if (this.pending > 0) return;
    for (const resolve of this.#idleWaiters.splice(0)) resolve();
  }

  #remember(id: string): void {
    if (this.#written.size >= (this.#o.memory ?? 4096)) {
      const oldest = this.#written.values().next().value;
      if (oldest !== undefined) this.#written.delete(oldest);
    }
    this.#written.add(id);
  }
}
