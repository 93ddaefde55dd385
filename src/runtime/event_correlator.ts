/**
 * client-go's EventCorrelator for the EventRecorder: what recording an Event comes to before
 * anything is written. Three parts, with client-go's defaults:
 *
 * - **Aggregation** (EventAggregator): Events about one object with the same type and reason but
 *   different messages are similar. Once 10 different messages were seen within 10 minutes, the
 *   next new one becomes the one combined Event `(combined from similar events): <message>`,
 *   counted up from then on instead of a new Event each.
 * - **Repeats** (EventLogger): an Event recorded again (same object, type, reason and message) is
 *   the same Event counted once more (`count`, `lastTimestamp`), not a new one. A repeat is
 *   counted when the object's Events moved on in between (Enforced, SidecarMissing, Enforced: the
 *   first counted twice); recorded again right after itself it is the same news restated (a Plan
 *   states its Events on each reconcile, as the engine's does) and changes nothing.
 * - **Spam filter** (EventSourceObjectSpamFilter): a token bucket for each object, 25 at most,
 *   one more every 5 minutes. Unlike client-go's, it never loses an Event: a new Event is written
 *   whether or not a token is left (it takes one if there is), and a repeat without a token is not
 *   written now but carried: the next write of that Event has the whole count.
 *
 * Every map is bounded (`memory` entries, least recently used forgotten first), as client-go's
 * LRU caches are. Pure bookkeeping: it writes nothing, and is told the time.
 */
import type { EventSpec } from "../reconcile/plan.ts";
import type { KubeObject } from "../api/object.ts";

/** Different messages of similar Events within the interval before they are combined. */
export const AGGREGATE_MAX_MESSAGES = 10;
/** How long similar Events' messages are remembered for aggregation (client-go: 10 minutes). */
export const AGGREGATE_INTERVAL_MS = 600_000;
/** The prefix of a combined Event's message, as client-go writes it. */
export const AGGREGATE_PREFIX = "(combined from similar events): ";
/** Tokens of an object's spam filter bucket (client-go: burst 25). */
export const SPAM_BURST = 25;
/** One token comes back this often (client-go: qps 1/300). */
export const SPAM_REFILL_MS = 300_000;
/** Entries each of the correlator's maps keeps by default (client-go's LRU size). */
export const CORRELATOR_MEMORY = 4096;

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

/** What recording an Event comes to. */
export interface Correlation {
  /** The Event to write: `ev`, or the combined Event its similar ones became. */
  ev: EventSpec;
  /** Its name (eventName of `ev`). */
  name: string;
  /** Times it was recorded so far, this one included: 1 for a new Event. */
  count: number;
  /** True when it is the object's last Event recorded again: nothing to count or write. */
  restated: boolean;
  /** False for a repeat the spam filter holds back: carried into the Event's next write. */
  write: boolean;
}

/** A map that forgets its least recently used entry beyond `max`. */
class Lru<V> {
  readonly #m = new Map<string, V>();
  constructor(private readonly max: number) {}
  get(key: string): V | undefined {
    const v = this.#m.get(key);
    if (v !== undefined) {
      this.#m.delete(key);
      this.#m.set(key, v);
    }
    return v;
  }
  set(key: string, v: V): void {
    this.#m.delete(key);
    this.#m.set(key, v);
    if (this.#m.size > this.max) this.#m.delete(this.#m.keys().next().value!);
  }
  delete(key: string): void {
    this.#m.delete(key);
  }
}

/** Similar Events' messages seen since `since`. */
interface Similar {
  since: number;
  messages: Set<string>;
}

/** An object's spam filter bucket. */
interface Bucket {
  tokens: number;
  at: number;
}

/** Correlates the Events of one recorder (see the module comment). */
export class EventCorrelator {
  /** Per Event (namespace/name): times recorded. */
  readonly #counts: Lru<number>;
  /** Per object, type and reason: the messages seen. */
  readonly #similar: Lru<Similar>;
  /** Per object: its spam filter bucket. */
  readonly #buckets: Lru<Bucket>;
  /** Per object: the id and message of its last Event recorded. */
  readonly #last: Lru<string>;

  constructor(memory = CORRELATOR_MEMORY) {
    this.#counts = new Lru(memory);
    this.#similar = new Lru(memory);
    this.#buckets = new Lru(memory);
    this.#last = new Lru(memory);
  }

  /** Records `ev` about `obj` (its `subject` key) at `now`: what to write, and whether now. */
  correlate(obj: KubeObject, subject: string, ev: EventSpec, now: number): Correlation {
    const combined = this.#combined(`${subject}|${ev.type}|${ev.reason}`, ev.message, now);
    // The combined Event keeps one name whatever its latest message: it is counted up.
    const name = eventName(obj, combined ? { ...ev, message: AGGREGATE_PREFIX } : ev);
    const id = `${obj.metadata.namespace ?? "default"}/${name}`;
    const before = this.#counts.get(id);
    // The combined Event's id stays as its messages change: a new message is not a restatement.
    const last = `${id}\u0000${ev.message}`;
    if (before !== undefined && this.#last.get(subject) === last) {
      return { ev, name, count: before, restated: true, write: false };
    }
    this.#last.set(subject, last);
    const count = (before ?? 0) + 1;
    this.#counts.set(id, count);
    const token = this.#take(subject, now);
    const written = combined ? { ...ev, message: `${AGGREGATE_PREFIX}${ev.message}` } : ev;
    return { ev: written, name, count, restated: false, write: token || count === 1 };
  }

  /**
   * Forgets that the Event `namespace/name` was recorded: it was never written (dropped, or its
   * write failed), or it is gone from the API server, so recording it again writes it anew.
   */
  forget(namespace: string, name: string): void {
    this.#counts.delete(`${namespace}/${name}`);
  }

  /**
   * The Event `namespace/name` was found written `before` times before this correlator counted it
   * (a restart): its count goes on from there.
   */
  countFrom(namespace: string, name: string, before: number): void {
    const id = `${namespace}/${name}`;
    this.#counts.set(id, (this.#counts.get(id) ?? 0) + before);
  }

  /** True when `message` is one similar message too many within the interval: combine it. */
  #combined(key: string, message: string, now: number): boolean {
    let s = this.#similar.get(key);
    if (!s || now - s.since > AGGREGATE_INTERVAL_MS) s = { since: now, messages: new Set() };
    this.#similar.set(key, s);
    if (s.messages.has(message) || s.messages.size < AGGREGATE_MAX_MESSAGES) {
      s.messages.add(message);
      return false;
    }
    return true;
  }

  /** Takes a token of `subject`'s bucket if one is left. */
  #take(subject: string, now: number): boolean {
    const b = this.#buckets.get(subject) ?? { tokens: SPAM_BURST, at: now };
    const refilled = Math.min(SPAM_BURST, b.tokens + (now - b.at) / SPAM_REFILL_MS);
    const ok = refilled >= 1;
    this.#buckets.set(subject, { tokens: ok ? refilled - 1 : refilled, at: now });
    return ok;
  }
}
