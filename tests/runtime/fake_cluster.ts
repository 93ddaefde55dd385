/**
 * A small scripted in-memory Cluster for the runtime's tests. It keeps the semantics the runtime
 * depends on: one resourceVersion counter, 409 on a stale update or an existing create, generation
 * bumped on spec changes only, no-op applies that change nothing, finalizers and
 * deletionTimestamp, ordered watch events, 410 for a watch or continue token older than the
 * compaction point, 404 for types that are not served. Faults are scripted by the test.
 */
import type { Clock } from "../../src/runtime/clock.ts";
import {
  ApiError,
  type ApplyOptions,
  type Cluster,
  type DeleteOptions,
  type JsonPatchOp,
  type KubeObject,
  type ListOptions,
  type ListPage,
  objectKey,
  type ResourceType,
  type WatchEvent,
  type WatchOptions,
} from "../../src/runtime/cluster.ts";
import { typeId } from "../../src/runtime/cache.ts";
import { kubeTime } from "../../src/runtime/clock.ts";
import { applyOp, fieldsOf, matches, merge, prune, same } from "./fake_json.ts";

/** One call the runtime made. */
export interface Call {
  verb: string;
  kind: string;
  key: string;
}

interface Sub {
  type: string;
  selector?: string;
  bookmarks: boolean;
  queue: WatchEvent[];
  wake: () => void;
  closed: boolean;
  stalled: boolean;
}

const WRITES = new Set(["create", "update", "apply", "applyStatus", "patch", "delete"]);

/** The in-memory cluster. */
export class FakeCluster implements Cluster {
  readonly objects = new Map<string, Map<string, KubeObject>>();
  readonly calls: Call[] = [];
  /** Types whose list and watch answer 404 (CRD missing). */
  readonly unserved = new Set<string>();
  /** Errors to throw from the next calls of a verb, in order. */
  readonly failures = new Map<string, ApiError[]>();
  #rv = 100;
  #compacted = 0;
  #uid = 0;
  #history: { rv: number; type: string; ev: WatchEvent }[] = [];
  #subs = new Set<Sub>();
  #snapshots = new Map<string, KubeObject[]>();
  /** Report 410 on watch as an ERROR event instead of a thrown ApiError. */
  goneAsEvent = false;

  constructor(readonly clock: Clock) {}

  /** Write calls made so far (optionally only since index `from`). */
  writes(from = 0): Call[] {
    return this.calls.slice(from).filter((c) => WRITES.has(c.verb));
  }

  /** Makes the next call(s) of `verb` fail with `err`. */
  failNext(verb: string, ...errs: ApiError[]): void {
    this.failures.set(verb, [...(this.failures.get(verb) ?? []), ...errs]);
  }

  /** Forgets history up to now: watches and continue tokens from before get 410. */
  compact(): void {
    this.#compacted = this.#rv;
    this.#history = [];
    this.#snapshots.clear();
  }

  /** Ends every open watch as a server would at its timeout. */
  dropWatches(): void {
    for (const s of this.#subs) {
      s.closed = true;
      s.wake();
    }
  }

  /** Every open watch stops delivering and ignores aborts (the client-node-on-Deno stall). */
  stallWatches(): void {
    for (const s of this.#subs) s.stalled = true;
  }

  /** Sends a BOOKMARK at the current resourceVersion to every watch that asked for them. */
  bookmark(): void {
    for (const s of this.#subs) {
      if (!s.bookmarks) continue;
      s.queue.push({
        type: "BOOKMARK",
        object: {
          apiVersion: "v1",
          kind: "Bookmark",
          metadata: { name: "", resourceVersion: String(this.#rv) },
        },
      });
      s.wake();
    }
  }

  /** Open watches. */
  get watchCount(): number {
    return this.#subs.size;
  }

  /** Every call answers asynchronously, as over a network. */
  #latency(): Promise<void> {
    return Promise.resolve();
  }

  #store(type: ResourceType): Map<string, KubeObject> {
    const id = typeId(type);
    let m = this.objects.get(id);
    if (!m) this.objects.set(id, m = new Map());
    return m;
  }

  #call(verb: string, type: ResourceType, key: string): void {
    this.calls.push({ verb, kind: type.kind, key });
    const errs = this.failures.get(verb);
    const err = errs?.shift();
    if (err) throw err;
  }

  #emit(type: ResourceType, evType: WatchEvent["type"], obj: KubeObject): void {
    const ev = { type: evType, object: structuredClone(obj) };
    this.#history.push({ rv: this.#rv, type: typeId(type), ev });
    for (const s of this.#subs) {
      if (s.type === typeId(type) && matches(obj, s.selector)) {
        s.queue.push(ev);
        s.wake();
      }
    }
  }

  #save(type: ResourceType, obj: KubeObject, evType: "ADDED" | "MODIFIED"): KubeObject {
    obj.metadata.resourceVersion = String(++this.#rv);
    this.#store(type).set(objectKey(obj), obj);
    this.#emit(type, evType, obj);
    return structuredClone(obj);
  }

  #remove(type: ResourceType, obj: KubeObject): void {
    this.#store(type).delete(objectKey(obj));
    obj.metadata.resourceVersion = String(++this.#rv);
    this.#emit(type, "DELETED", obj);
  }

  /** Removes the object when it is being deleted and no finalizer is left. */
  #settle(type: ResourceType, obj: KubeObject): void {
    if (obj.metadata.deletionTimestamp && !(obj.metadata.finalizers?.length)) {
      this.#remove(type, obj);
    }
  }

  #find(type: ResourceType, namespace: string | undefined, name: string): KubeObject {
    const obj = this.#store(type).get(namespace ? `${namespace}/${name}` : name);
    if (!obj) throw new ApiError(404, "NotFound", `${type.plural} "${name}" not found`);
    return obj;
  }

  async list(type: ResourceType, opts: ListOptions = {}): Promise<ListPage> {
    await this.#latency();
    this.#call("list", type, "");
    if (this.unserved.has(typeId(type))) {
      throw new ApiError(404, "NotFound", "the server could not find the requested resource");
    }
    const [token, offsetText] = (opts.continue ?? "").split(":");
    let items: KubeObject[];
    if (opts.continue) {
      const snap = this.#snapshots.get(token);
      if (!snap) throw new ApiError(410, "Expired", "the provided continue parameter is too old");
      items = snap;
    } else {
      items = [...this.#store(type).values()].filter((o) => matches(o, opts.labelSelector))
        .sort((a, b) => objectKey(a) < objectKey(b) ? -1 : 1).map((o) => structuredClone(o));
    }
    const offset = Number(offsetText ?? 0) || 0;
    const limit = opts.limit ?? items.length;
    const page = items.slice(offset, offset + limit);
    const rv = opts.continue ? token : String(this.#rv);
    let cont: string | undefined;
    if (offset + limit < items.length) {
      this.#snapshots.set(rv, items);
      cont = `${rv}:${offset + limit}`;
    }
    return Promise.resolve({ items: page, resourceVersion: rv, continue: cont });
  }

  async *watch(
    type: ResourceType,
    opts: WatchOptions,
    signal: AbortSignal,
  ): AsyncIterable<WatchEvent> {
    this.#call("watch", type, "");
    if (this.unserved.has(typeId(type))) {
      throw new ApiError(404, "NotFound", "the server could not find the requested resource");
    }
    const from = Number(opts.resourceVersion || this.#rv);
    if (from < this.#compacted) {
      const msg = `too old resource version: ${from} (${this.#compacted})`;
      if (!this.goneAsEvent) throw new ApiError(410, "Expired", msg);
      yield {
        type: "ERROR",
        object: {
          apiVersion: "v1",
          kind: "Status",
          metadata: { name: "" },
          code: 410,
          reason: "Expired",
          message: msg,
        },
      };
      return;
    }
    const sub: Sub = {
      type: typeId(type),
      selector: opts.labelSelector,
      bookmarks: opts.allowWatchBookmarks ?? false,
      queue: this.#history.filter((h) =>
        h.type === typeId(type) && h.rv > from && matches(h.ev.object, opts.labelSelector)
      )
        .map((h) => h.ev),
      wake: () => {},
      closed: false,
      stalled: false,
    };
    this.#subs.add(sub);
    const timeout = new AbortController();
    if (opts.timeoutSeconds) {
      this.clock.sleep(opts.timeoutSeconds * 1000, timeout.signal).then(() => {
        sub.closed = true;
        sub.wake();
      }, () => {});
    }
    const onAbort = () => sub.wake();
    signal.addEventListener("abort", onAbort);
    try {
      for (;;) {
        if (sub.stalled) await new Promise(() => {});
        if (signal.aborted || sub.closed) return;
        const ev = sub.queue.shift();
        if (ev) {
          yield structuredClone(ev);
          continue;
        }
        await new Promise<void>((r) => sub.wake = r);
      }
    } finally {
      timeout.abort();
      signal.removeEventListener("abort", onAbort);
      this.#subs.delete(sub);
    }
  }

  async get(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
  ): Promise<KubeObject | undefined> {
    await this.#latency();
    this.#call("get", type, name);
    const obj = this.#store(type).get(namespace ? `${namespace}/${name}` : name);
    return Promise.resolve(obj && structuredClone(obj));
  }

  async create(type: ResourceType, obj: KubeObject): Promise<KubeObject> {
    await this.#latency();
    this.#call("create", type, objectKey(obj));
    if (this.#store(type).has(objectKey(obj))) {
      throw new ApiError(409, "AlreadyExists", `"${obj.metadata.name}" already exists`);
    }
    const o = structuredClone(obj);
    o.metadata = {
      ...o.metadata,
      uid: `uid-${++this.#uid}`,
      generation: 1,
      creationTimestamp: kubeTime(this.clock.now()),
    };
    return Promise.resolve(this.#save(type, o, "ADDED"));
  }

  async update(type: ResourceType, obj: KubeObject): Promise<KubeObject> {
    await this.#latency();
    this.#call("update", type, objectKey(obj));
    const cur = this.#find(type, obj.metadata.namespace, obj.metadata.name);
    if (obj.metadata.resourceVersion !== cur.metadata.resourceVersion) {
      throw new ApiError(
        409,
        "Conflict",
        "the object has been modified; please apply your changes to the latest version",
      );
    }
    const o = structuredClone(obj);
    o.metadata.uid = cur.metadata.uid;
    o.metadata.creationTimestamp = cur.metadata.creationTimestamp;
    o.metadata.deletionTimestamp = cur.metadata.deletionTimestamp;
    o.metadata.generation = (cur.metadata.generation ?? 1) + (same(o.spec, cur.spec) ? 0 : 1);
    const saved = this.#save(type, o, "MODIFIED");
    this.#settle(type, o);
    return Promise.resolve(saved);
  }

  async apply(type: ResourceType, obj: KubeObject, opts: ApplyOptions): Promise<KubeObject> {
    await this.#latency();
    this.#call("apply", type, objectKey(obj));
    const cur = this.#store(type).get(objectKey(obj));
    // The manager's fields become exactly what it applied; fields it applied before and dropped now
    // are removed (one applier a test, so no shared ownership to consider).
    const managed = [{
      manager: opts.fieldManager,
      operation: "Apply",
      fieldsType: "FieldsV1",
      fieldsV1: fieldsOf(obj),
    }];
    if (!cur) {
      const o = merge({}, obj) as KubeObject;
      o.metadata = {
        ...o.metadata,
        uid: `uid-${++this.#uid}`,
        generation: 1,
        creationTimestamp: kubeTime(this.clock.now()),
        managedFields: managed,
      };
      return this.#save(type, o, "ADDED");
    }
    const before =
      (cur.metadata.managedFields as { manager: string; fieldsV1: unknown }[] | undefined)
        ?.find((m) => m.manager === opts.fieldManager)?.fieldsV1;
    const base = structuredClone(cur);
    prune(base, before, obj);
    const o = merge(base, obj) as KubeObject;
    o.metadata.managedFields = managed;
    if (same(o, cur)) return structuredClone(cur);
    if (!same(o.spec, cur.spec)) o.metadata.generation = (cur.metadata.generation ?? 1) + 1;
    return this.#save(type, o, "MODIFIED");
  }

  async applyStatus(type: ResourceType, obj: KubeObject, _opts: ApplyOptions): Promise<KubeObject> {
    await this.#latency();
    this.#call("applyStatus", type, objectKey(obj));
    const cur = this.#find(type, obj.metadata.namespace, obj.metadata.name);
    if (same(cur.status, obj.status)) return Promise.resolve(structuredClone(cur));
    return Promise.resolve(
      this.#save(type, { ...cur, status: structuredClone(obj.status) }, "MODIFIED"),
    );
  }

  async patch(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    ops: JsonPatchOp[],
  ): Promise<KubeObject> {
    await this.#latency();
    this.#call("patch", type, namespace ? `${namespace}/${name}` : name);
    const cur = this.#find(type, namespace, name);
    const o = structuredClone(cur);
    for (const op of ops) applyOp(o, op);
    if (
      !same(o.metadata.finalizers ?? [], cur.metadata.finalizers ?? []) || !same(o.spec, cur.spec)
    ) {
      if (!same(o.spec, cur.spec)) o.metadata.generation = (cur.metadata.generation ?? 1) + 1;
      const saved = this.#save(type, o, "MODIFIED");
      this.#settle(type, o);
      return Promise.resolve(saved);
    }
    return Promise.resolve(structuredClone(cur));
  }

  async delete(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    _opts?: DeleteOptions,
  ): Promise<boolean> {
    await this.#latency();
    this.#call("delete", type, namespace ? `${namespace}/${name}` : name);
    const cur = this.#store(type).get(namespace ? `${namespace}/${name}` : name);
    if (!cur) return Promise.resolve(false);
    if (cur.metadata.finalizers?.length) {
      if (!cur.metadata.deletionTimestamp) {
        this.#save(type, {
          ...cur,
          metadata: { ...cur.metadata, deletionTimestamp: kubeTime(this.clock.now()) },
        }, "MODIFIED");
      }
    } else this.#remove(type, cur);
    return Promise.resolve(true);
  }

  /** Test setup: creates or replaces an object directly (as another client would). */
  put(type: ResourceType, obj: KubeObject): KubeObject {
    const cur = this.#store(type).get(objectKey(obj));
    const o = structuredClone(obj);
    o.metadata.uid ??= cur?.metadata.uid ?? `uid-${++this.#uid}`;
    o.metadata.generation ??= cur
      ? (cur.metadata.generation ?? 1) + (same(o.spec, cur.spec) ? 0 : 1)
      : 1;
    o.metadata.creationTimestamp ??= cur?.metadata.creationTimestamp ?? kubeTime(this.clock.now());
    return this.#save(type, o, cur ? "MODIFIED" : "ADDED");
  }

  /** Test setup: removes an object directly, ignoring finalizers. */
  remove(type: ResourceType, namespace: string | undefined, name: string): void {
    const cur = this.#store(type).get(namespace ? `${namespace}/${name}` : name);
    if (cur) this.#remove(type, cur);
  }

  /** The stored object, for assertions. */
  peek(type: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.#store(type).get(namespace ? `${namespace}/${name}` : name);
  }
}
