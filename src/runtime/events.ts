/**
 * Kubernetes Events (core/v1) about reconciled objects, recorded by client-go's conventions
 * (event_correlator.ts): similar Events combined, a repeat counted on the Event it repeats
 * (`count`, `lastTimestamp`) instead of a new one, and a spam filter for each object. Names are
 * deterministic (`<object>.<hash of uid, type, reason, message>`): after a restart the create of
 * an Event already written answers 409, and the Event is read and counted on instead. An Event
 * write never fails a reconcile, and never delays one: Events are queued and written off the
 * reconcile's path (client-go's EventBroadcaster does the same), a few at a time, in order for
 * each object, and only one at a time while reconciles are at work, so they take little from the
 * writes that make a change take effect.
 */
import type { EventSpec } from "../reconcile/plan.ts";
import { EventCorrelator } from "./event_correlator.ts";
import { RESOURCES } from "../api/resources.ts";
import type { Clock } from "./clock.ts";
import { type Cluster, isApiError } from "./cluster.ts";
import type { JsonPatchOp, KubeObject } from "../api/object.ts";
import type { Logger } from "./log.ts";
import type { Metrics } from "./metrics.ts";
import { kubeTime } from "../api/time.ts";

export { eventName } from "./event_correlator.ts";

/**
 * Events waiting to be written, by default; beyond it the oldest is dropped. Larger than client-go's
 * 1000: Events wait while reconciles run, so the queue must hold a whole burst (two a RateLimit
 * created, 1,000 created at once).
 */
export const EVENT_QUEUE_CAPACITY = 4096;

/** Event writes in flight at once, by default. */
export const EVENT_CONCURRENCY = 4;

/**
 * How long an Event waits for reconciles to stop before it is written anyway (one at a time, with
 * the next Event recorded or written), so an operator that never rests still writes its Events.
 */
export const EVENT_MAX_WAIT_MS = 30_000;

/** The component name on every Event. */
export const EVENT_COMPONENT = "platform-operator";

/** Options of an EventRecorder. */
export interface EventRecorderOptions {
  cluster: Cluster;
  clock: Clock;
  log: Logger;
  /** This replica's name (`reportingInstance`). */
  identity: string;
  /** Entries each of the correlator's maps keeps; default 4096. */
  memory?: number;
  /** Events waiting to be written; default EVENT_QUEUE_CAPACITY. */
  capacity?: number;
  /** Event writes in flight at once; default EVENT_CONCURRENCY. */
  concurrency?: number;
  /** Counts dropped Events (`events_dropped_total`). */
  metrics?: Metrics;
  /**
   * True while reconciles run or wait: Events then wait (see EVENT_MAX_WAIT_MS), leaving the API
   * server to the writes that make changes take effect; `wake` when it turns false.
   */
  busy?: () => boolean;
}

/** The core/v1 Event `event` (a name) for `ev` about `obj` at time `now`, recorded `count` times. */
export function eventObject(
  obj: KubeObject,
  ev: EventSpec,
  now: number,
  identity: string,
  event: string,
  count = 1,
): KubeObject {
  const { name, namespace, uid, resourceVersion } = obj.metadata;
  const time = kubeTime(now);
  return {
    apiVersion: "v1",
    kind: "Event",
    metadata: { name: event, namespace: namespace ?? "default" },
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
    count,
  };
}

/** The JSON patch that moves a written Event on to `body`'s count, time and message. */
function countPatch(body: KubeObject): JsonPatchOp[] {
  return [
    { op: "replace", path: "/count", value: body.count },
    { op: "replace", path: "/lastTimestamp", value: body.lastTimestamp },
    { op: "replace", path: "/message", value: body.message },
  ];
}

/** An Event waiting to be written. */
interface Pending {
  /** `namespace/name` of the Event. */
  id: string;
  /** The object it is about: Events about one object are written one at a time, in order. */
  subject: string;
  /** The Event as it will be written; a repeat recorded while it waits moves its count on. */
  body: KubeObject;
  /** True when the Event was written before: its count, time and message are patched. */
  update: boolean;
  /** Aborts when the lease is lost: a replica that stopped leading writes nothing more. */
  signal?: AbortSignal;
  /** When it was queued (Clock milliseconds). */
  at: number;
}

/**
 * Writes Events off the reconcile's path: `record` only correlates and queues. While reconciles run
 * or wait (`busy`) Events wait, unless the oldest has waited EVENT_MAX_WAIT_MS (then one at a time);
 * otherwise at most `concurrency` writes are in flight. Never two about the same object, so Events
 * about one object land in the order they were recorded. A repeat recorded while its Event still
 * waits is folded into that write. When more than `capacity` wait, the oldest is dropped (counted,
 * and one warning for each overload). No timers: writes start from `record` (on a microtask, after
 * the caller's synchronous work), from finished writes and from `wake` (reconciles stopped), so
 * virtual clocks replay it exactly.
 */
export class EventRecorder {
  readonly #o: EventRecorderOptions;
  readonly #correlator: EventCorrelator;
  readonly #queue: Pending[] = [];
  /** The waiting writes by Event id. */
  readonly #waiting = new Map<string, Pending>();
  readonly #busy = new Set<string>();
  #inFlight = 0;
  #pumpScheduled = false;
  #dropped = 0;
  #overloaded = false;
  /** Set once a count update was forbidden (RBAC without `patch` on events): repeats are not written. */
  #noUpdates = false;
  #idleWaiters: (() => void)[] = [];

  constructor(opts: EventRecorderOptions) {
    this.#o = opts;
    this.#correlator = new EventCorrelator(opts.memory);
  }

  /**
   * Records `ev` about `obj`: a new Event is queued, a repeat counted on it (queued as an update
   * unless the spam filter holds it back); the write starts after the caller's synchronous work.
   * Nothing is queued once `signal` has aborted. Never throws.
   */
  record(obj: KubeObject, ev: EventSpec, signal?: AbortSignal): void {
    if (signal?.aborted) return;
    const { apiVersion, kind, metadata: { namespace, name } } = obj;
    const subject = `${apiVersion}|${kind}|${namespace ?? ""}|${name}`;
    const now = this.#o.clock.now();
    const c = this.#correlator.correlate(obj, subject, ev, now);
    if (c.restated) return;
    const id = `${namespace ?? "default"}/${c.name}`;
    const waiting = this.#waiting.get(id);
    if (waiting) {
      waiting.body = {
        ...waiting.body,
        message: c.ev.message,
        count: c.count,
        lastTimestamp: kubeTime(now),
      };
      return;
    }
    // Held back by the spam filter: the Event's next write carries the count.
    if (!c.write || (c.count > 1 && this.#noUpdates)) return;
    const body = eventObject(obj, c.ev, now, this.#o.identity, c.name, c.count);
    if (this.#queue.length >= (this.#o.capacity ?? EVENT_QUEUE_CAPACITY)) this.#dropOldest();
    const p: Pending = { id, subject, body, update: c.count > 1, signal, at: now };
    this.#queue.push(p);
    this.#waiting.set(id, p);
    if (!this.#pumpScheduled) {
      this.#pumpScheduled = true;
      queueMicrotask(() => {
        this.#pumpScheduled = false;
        this.#pump();
      });
    }
  }

  /** Reconciles have stopped (their queues ran empty, or a graceful stop drained them): write now. */
  wake(): void {
    this.#pump();
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
    for (const p of this.#queue.splice(0)) this.#unwritten(p);
    this.#settle();
  }

  /** `p` leaves the queue unwritten: a new Event is not remembered, so recording it again writes it. */
  #unwritten(p: Pending): void {
    this.#waiting.delete(p.id);
    if (!p.update) this.#correlator.forget(p.body.metadata.namespace ?? "", p.body.metadata.name);
  }

  #dropOldest(): void {
    const oldest = this.#queue.shift();
    if (!oldest) return;
    this.#unwritten(oldest);
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
    const busy = this.#o.busy?.() ?? false;
    const oldest = this.#queue[0];
    const overdue = oldest !== undefined &&
      this.#o.clock.now() - oldest.at >= EVENT_MAX_WAIT_MS;
    const limit = !busy ? this.#o.concurrency ?? EVENT_CONCURRENCY : overdue ? 1 : 0;
    while (this.#inFlight < limit) {
      const i = this.#queue.findIndex((p) => !this.#busy.has(p.subject));
      if (i < 0) break;
      const [p] = this.#queue.splice(i, 1);
      if (p.signal?.aborted) {
        this.#unwritten(p);
        continue;
      }
      // From here on a repeat is a new update: this write's body is sent as it is.
      this.#waiting.delete(p.id);
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
    const { namespace = "default", name } = p.body.metadata;
    try {
      if (!p.update) await this.#o.cluster.create(RESOURCES.Event, p.body);
      else {
        await this.#o.cluster.patch(RESOURCES.Event, namespace, name, countPatch(p.body));
      }
    } catch (err) {
      // Written before a restart (or by the replica that led before): its count goes on.
      if (!p.update && isApiError(err, 409)) return await this.#countOn(p);
      // Gone (Events expire) or never written: recording it again writes it anew.
      this.#correlator.forget(namespace, name);
      if (p.update && isApiError(err, 404)) return;
      if (p.update && isApiError(err, 403)) {
        if (!this.#noUpdates) {
          this.#o.log.warn("may not update Events (no patch on events): repeats are not counted", {
            error: err,
          });
        }
        this.#noUpdates = true;
        return;
      }
      const { kind, name: about } = p.body.involvedObject as { kind: string; name: string };
      this.#o.log.warn("could not record an Event (the reconcile goes on)", {
        reason: p.body.reason,
        object: `${kind} ${namespace}/${about}`,
        error: err,
      });
    }
  }

  /**
   * `p`'s create found the Event written already, by this operator before it restarted: the
   * correlator began again at 1, so the Event's own count is read and `p`'s counted on it (the
   * correlator and a repeat waiting to be written go on from there). Dropped, its count would stay
   * where it was and the next repeat's patch would set it back to 2.
   */
  async #countOn(p: Pending): Promise<void> {
    const { namespace = "default", name } = p.body.metadata;
    try {
      const live = await this.#o.cluster.get(RESOURCES.Event, namespace, name);
      if (!live) return;
      const before = typeof live.count === "number" && live.count > 0 ? live.count : 1;
      this.#correlator.countFrom(namespace, name, before);
      const waiting = this.#waiting.get(p.id);
      if (waiting) waiting.body = { ...waiting.body, count: Number(waiting.body.count) + before };
      await this.#o.cluster.patch(
        RESOURCES.Event,
        namespace,
        name,
        countPatch({ ...p.body, count: before + Number(p.body.count) }),
      );
    } catch (err) {
      // Not readable (a role without get on events) or gone meanwhile: left as it was.
      this.#o.log.debug("an Event written before could not be counted on", { name, error: err });
    }
  }

  /** Wakes `flush` callers once nothing waits or runs; ends an overload. */
  #settle(): void {
    if (this.#queue.length === 0) this.#overloaded = false;
    if (this.pending > 0) return;
    for (const resolve of this.#idleWaiters.splice(0)) resolve();
  }
}
