/**
 * Types served from inside the operator instead of the API server: what another component says
 * (istiod, about its proxies) turned into objects that the runtime lists, watches and caches like
 * any other type, so that indexes, triggers, relists and the simulator all work on them unchanged.
 *
 * A {@link LocalSource} holds the current objects of one type and numbers each change. The Cluster
 * that {@link withLocalTypes} returns answers `list` and `watch` of that type from it (never from
 * the API server, and never counted as API requests); every other call goes on unchanged. A watch
 * from a version the source no longer remembers gets 410 Gone, and the cache lists again, as it
 * does after an etcd compaction.
 */
import { type KubeObject, objectKey, type ResourceType, typeId } from "../api/object.ts";
import {
  ApiError,
  type Cluster,
  forwardingTo,
  type ListOptions,
  type ListPage,
  type WatchEvent,
  type WatchOptions,
} from "./cluster.ts";

/** How many changes a source remembers for watches that resume (older ones get 410). */
const REMEMBERED = 64;

interface Change {
  version: number;
  event: WatchEvent;
}

/**
 * The objects of one local type, replaced whole by each {@link publish}: only what differs becomes
 * a change (ADDED, MODIFIED or DELETED), and a publish that changes nothing changes no version.
 */
export class LocalSource {
  readonly type: ResourceType;
  #objects = new Map<string, { obj: KubeObject; json: string }>();
  #version = 0;
  #changes: Change[] = [];
  #waiters = new Set<() => void>();

  /** A source of objects of `type`, empty at version 0. */
  constructor(type: ResourceType) {
    this.type = type;
  }

  /** The version of the current objects. */
  get version(): number {
    return this.#version;
  }

  /**
   * Makes `objects` the current objects of the type (keyed by namespace and name; a later duplicate
   * wins). Each added or changed object gets the new version as its resourceVersion. Returns the
   * number of changes.
   */
  publish(objects: readonly KubeObject[]): number {
    const next = new Map<string, KubeObject>();
    for (const o of objects) next.set(objectKey(o), o);
    const version = this.#version + 1;
    const events: WatchEvent[] = [];
    const kept = new Map<string, { obj: KubeObject; json: string }>();
    for (const [key, o] of next) {
      const json = JSON.stringify({ ...o, metadata: { ...o.metadata, resourceVersion: "" } });
      const old = this.#objects.get(key);
      if (old && old.json === json) {
        kept.set(key, old);
        continue;
      }
      const obj = Object.freeze({
        ...o,
        metadata: { ...o.metadata, resourceVersion: String(version) },
      }) as KubeObject;
      kept.set(key, { obj, json });
      events.push({ type: old ? "MODIFIED" : "ADDED", object: obj });
    }
    for (const [key, old] of this.#objects) {
      if (next.has(key)) continue;
      events.push({
        type: "DELETED",
        object: { ...old.obj, metadata: { ...old.obj.metadata, resourceVersion: String(version) } },
      });
    }
    if (events.length === 0) return 0;
    this.#objects = kept;
    this.#version = version;
    for (const event of events) this.#changes.push({ version, event });
    const firstKept = this.#changes.findIndex((c) => c.version > version - REMEMBERED);
    if (firstKept > 0) this.#changes.splice(0, firstKept);
    for (const wake of this.#waiters) wake();
    this.#waiters.clear();
    return events.length;
  }

  /** The current objects, optionally of one namespace, and their version. */
  list(namespace?: string): ListPage {
    const items: KubeObject[] = [];
    for (const { obj } of this.#objects.values()) {
      if (namespace === undefined || obj.metadata.namespace === namespace) items.push(obj);
    }
    items.sort((a, b) => objectKey(a) < objectKey(b) ? -1 : 1);
    return { items, resourceVersion: String(this.#version) };
  }

  /**
   * The changes after `from`, as they come, until `signal` aborts. Throws ApiError(410) when `from`
   * is older than what the source remembers, or not a version it gave.
   */
  async *watch(from: number, namespace: string | undefined, signal: AbortSignal) {
    let at = from;
    while (!signal.aborted) {
      const oldest = this.#changes.length > 0 ? this.#changes[0].version - 1 : this.#version;
      if (!Number.isInteger(at) || at < oldest || at > this.#version) {
        throw new ApiError(410, "Expired", `too old resource version: ${at} (${this.#version})`);
      }
      const pending = this.#changes.filter((c) => c.version > at);
      for (const c of pending) {
        if (namespace === undefined || c.event.object.metadata.namespace === namespace) {
          yield c.event;
        }
        at = c.version;
      }
      if (pending.length > 0) continue;
      await new Promise<void>((resolve) => {
        const wake = () => {
          signal.removeEventListener("abort", wake);
          this.#waiters.delete(wake);
          resolve();
        };
        this.#waiters.add(wake);
        signal.addEventListener("abort", wake, { once: true });
      });
    }
  }
}

/**
 * `cluster`, with `list` and `watch` of each source's type answered by the source. Label
 * selectors are refused (no caller needs them); the pages are whole (no `limit`, no `continue`).
 */
export function withLocalTypes(cluster: Cluster, sources: readonly LocalSource[]): Cluster {
  if (sources.length === 0) return cluster;
  const byType = new Map(sources.map((s) => [typeId(s.type), s]));
  const local = (type: ResourceType, labelSelector?: string) => {
    const s = byType.get(typeId(type));
    if (s && labelSelector) {
      throw new ApiError(400, "BadRequest", `${type.plural} is served locally: no label selector`);
    }
    return s;
  };
  return {
    ...forwardingTo(cluster),
    list(type: ResourceType, opts: ListOptions = {}): Promise<ListPage> {
      const s = local(type, opts.labelSelector);
      return s ? Promise.resolve(s.list(opts.namespace)) : cluster.list(type, opts);
    },
    watch(type: ResourceType, opts: WatchOptions, signal: AbortSignal): AsyncIterable<WatchEvent> {
      const s = local(type, opts.labelSelector);
      if (!s) return cluster.watch(type, opts, signal);
      return s.watch(Number(opts.resourceVersion), opts.namespace, signal);
    },
  };
}
