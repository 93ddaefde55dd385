/**
 * Kubernetes Events (core/v1) about reconciled objects. Names are deterministic
 * (`<object>.<hash of uid, type, reason, message>`), so the same event is written once: repeats
 * are skipped from memory, and after a restart the create answers 409 and is dropped. An Event
 * write never fails a reconcile.
 */
import type { EventSpec } from "../reconcile/plan.ts";
import { RESOURCES } from "../api/resources.ts";
import { type Clock, kubeTime } from "./clock.ts";
import { type Cluster, isApiError, type KubeObject } from "./cluster.ts";
import type { Logger } from "./log.ts";

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

/** Writes Events, each at most once. */
export class EventRecorder {
  readonly #o: EventRecorderOptions;
  readonly #written = new Set<string>();

  constructor(opts: EventRecorderOptions) {
    this.#o = opts;
  }

  /** Records `ev` about `obj` unless it was recorded before. Never throws. */
  async record(obj: KubeObject, ev: EventSpec): Promise<void> {
    const body = eventObject(obj, ev, this.#o.clock.now(), this.#o.identity);
    const id = `${body.metadata.namespace}/${body.metadata.name}`;
    if (this.#written.has(id)) return;
    this.#remember(id);
    try {
      await this.#o.cluster.create(RESOURCES.Event, body);
    } catch (err) {
      if (!isApiError(err, 409)) {
        this.#o.log.warn("could not record an Event (the reconcile goes on)", {
          reason: ev.reason,
          object: `${obj.kind} ${id}`,
          error: err,
        });
      }
    }
  }

  #remember(id: string): void {
    if (this.#written.size >= (this.#o.memory ?? 4096)) {
      const oldest = this.#written.values().next().value;
      if (oldest !== undefined) this.#written.delete(oldest);
    }
    this.#written.add(id);
  }
}
