/**
 * The simulator's in-memory API server (sim/cluster) as the runtime's unit tests use it: one client
 * without latency on the test's manual clock, whose calls are recorded and can be made to fail, and
 * the setup a test needs (objects put and removed as another client would, types served or not,
 * watches dropped, stalled or bookmarked, history compacted). Every answer comes from the
 * simulator's store, lists and watches: there is no second fake of the API here.
 */
import { RESOURCES, resourceType } from "../../src/api/resources.ts";
import { customResourceDefinitions } from "../../src/crd/definitions.ts";
import { envoyFilterCrd, virtualServiceCrd } from "../../src/crd/istio.ts";
import type {
  ApiError,
  ApplyOptions,
  Cluster,
  DeleteOptions,
  ListOptions,
  ListPage,
  WatchEvent,
  WatchOptions,
} from "../../src/runtime/cluster.ts";
import type { JsonPatchOp, KubeObject, ResourceType } from "../../src/api/object.ts";
import { type Actor, type FaultSource, SimClient, SimCluster } from "../../sim/cluster/mod.ts";
import { noSuchType } from "../../sim/cluster/errors.ts";
import { cloneJson } from "../../sim/cluster/json.ts";
import { TypeRegistry } from "../../sim/cluster/types.ts";
import { Prng } from "../../sim/prng.ts";
import type { ManualClock } from "./helpers.ts";

/** One call the runtime made: its verb, kind and `namespace/name` (empty for lists and watches). */
export interface Call {
  verb: string;
  kind: string;
  key: string;
  /** A list's or watch's namespace, when it asked one namespace only. */
  namespace?: string;
}

/** A custom type the runtime tests reconcile: any spec, a status subresource, no schema checks. */
export const WIDGET = resourceType("test.platform-project.io", "v1", "Widget", "widgets");

/** Namespaces the cluster starts with: those the runtime tests write into. */
export const TEST_NAMESPACES = ["default", "platform-system", "demo", "ns", "u", "users"];

const WRITES = new Set(["create", "update", "apply", "applyStatus", "patch", "delete"]);
const USER: Actor = { name: "test", manager: "test" };

/** A CRD serving `type` with an open schema and a status subresource. */
export function openCrd(type: ResourceType, labels?: Record<string, string>): KubeObject {
  const open = { type: "object", "x-kubernetes-preserve-unknown-fields": true };
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${type.plural}.${type.group}`, ...(labels ? { labels } : {}) },
    spec: {
      group: type.group,
      names: {
        kind: type.kind,
        listKind: `${type.kind}List`,
        plural: type.plural,
        singular: type.kind.toLowerCase(),
      },
      scope: type.namespaced ? "Namespaced" : "Cluster",
      versions: [{
        name: type.version,
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: { openAPIV3Schema: { type: "object", properties: { spec: open, status: open } } },
      }],
    },
  };
}

/** Every CRD the cluster starts with: the project's, Istio's, the modules' kinds, and WIDGET. */
function initialCrds(): KubeObject[] {
  const given = [
    ...customResourceDefinitions() as unknown as KubeObject[],
    envoyFilterCrd(),
    virtualServiceCrd(),
  ];
  const names = new Set(given.map((c) => c.metadata.name));
  const custom = [...Object.values(RESOURCES), WIDGET].filter((t) =>
    !TypeRegistry.isBuiltinGroup(t.group) && !names.has(`${t.plural}.${t.group}`)
  );
  return [...given, ...custom.map((t) => openCrd(t))];
}

/** The simulated API server with one latency-free client: the runtime's unit-test cluster. */
export class TestCluster implements Cluster {
  readonly sim: SimCluster;
  /** Every call made through this cluster, in order. */
  readonly calls: Call[] = [];
  /** Errors the next calls of a verb answer with, in order. */
  readonly failures = new Map<string, ApiError[]>();
  /** Report a too-old watch version as an ERROR event instead of a thrown 410. */
  goneAsEvent = false;
  readonly #client: SimClient;
  /** Calls of a verb still to take effect unanswered (see `landUnanswered`). */
  readonly #unanswered = new Map<string, number>();
  /** Types whose CRD is not Established yet: requests for them answer 404 whatever the store has. */
  readonly #pending = new Set<string>();

  constructor(readonly clock: ManualClock, namespaces: readonly string[] = TEST_NAMESPACES) {
    const faults: FaultSource = {
      request: (_actor, verb, type, namespace, name) => {
        const key = name ? (namespace ? `${namespace}/${name}` : name) : "";
        this.calls.push({
          verb,
          kind: type.kind,
          key,
          ...(!name && namespace ? { namespace } : {}),
        });
        if (this.#pending.has(`${type.group}/${type.plural}`)) {
          return { kind: "error", error: noSuchType(type) };
        }
        const error = this.failures.get(verb)?.shift();
        if (error) return { kind: "error", error };
        const unanswered = this.#unanswered.get(verb) ?? 0;
        if (unanswered > 0) {
          this.#unanswered.set(verb, unanswered - 1);
          return { kind: "timeout", executed: true, afterMs: 0 };
        }
        return undefined;
      },
      watch: () => undefined,
      goneAs: () => this.goneAsEvent ? "event" : "throw",
    };
    this.sim = new SimCluster({ clock, prng: new Prng(1), faults, empty: true });
    const store = this.sim.store;
    for (const name of namespaces) {
      store.create(
        RESOURCES.Namespace,
        { apiVersion: "v1", kind: "Namespace", metadata: { name } },
        USER,
      );
    }
    for (const crd of initialCrds()) store.create(RESOURCES.CustomResourceDefinition, crd, USER);
    this.#client = this.sim.client("runtime", { latency: () => 0, clock: clock.view() });
  }

  /** Write calls made so far (optionally only since index `from`). */
  writes(from = 0): Call[] {
    return this.calls.slice(from).filter((c) => WRITES.has(c.verb));
  }

  /** Makes the next call(s) of `verb` fail with `errs`. */
  failNext(verb: string, ...errs: ApiError[]): void {
    this.failures.set(verb, [...(this.failures.get(verb) ?? []), ...errs]);
  }

  /** Makes the next call of `verb` take effect but answer nothing (ApiError code 0, a timeout). */
  landUnanswered(verb: string): void {
    this.#unanswered.set(verb, (this.#unanswered.get(verb) ?? 0) + 1);
  }

  /** Forgets every type's history up to now: watches and continue tokens from before get 410. */
  compact(): void {
    for (const type of this.sim.store.types.all()) this.sim.store.compact(type);
  }

  /** Ends every open watch as the server does at its timeout. */
  dropWatches(): void {
    for (const w of this.sim.watches) w.stream.end();
  }

  /** Every open watch stops delivering and ignores aborts (the client-node-on-Deno stall). */
  stallWatches(): void {
    for (const w of this.sim.watches) w.stream.hang();
  }

  /** Sends a BOOKMARK at the current resourceVersion to every watch that asked for them. */
  bookmark(): void {
    for (const w of this.sim.watches) if (w.stream.opts.allowWatchBookmarks) w.stream.bookmark();
  }

  /** Open watches. */
  get watchCount(): number {
    return this.sim.watches.size;
  }

  /** Removes `type`'s CRD (and with it the type): lists and watches of it answer 404. */
  unserve(type: ResourceType): void {
    this.remove(RESOURCES.CustomResourceDefinition, undefined, `${type.plural}.${type.group}`);
  }

  /**
   * `type`'s CRD, whenever it is created, is not Established until `establish(type)`: the runtime's
   * requests for the type answer 404 meanwhile (the simulated server serves a CRD at once).
   */
  notEstablished(type: ResourceType): void {
    this.#pending.add(`${type.group}/${type.plural}`);
  }

  /** Ends `notEstablished(type)`. */
  establish(type: ResourceType): void {
    this.#pending.delete(`${type.group}/${type.plural}`);
  }

  /** Installs an open CRD for `type` unless one exists: it is served at once. */
  serve(type: ResourceType): void {
    if (!this.sim.store.types.serves(type)) {
      this.put(RESOURCES.CustomResourceDefinition, openCrd(type));
    }
  }

  /**
   * Test setup: creates or replaces an object as another client would (its status too, through the
   * status subresource), without going through the runtime's client.
   */
  put(type: ResourceType, obj: KubeObject): KubeObject {
    const store = this.sim.store;
    const { namespace, name } = obj.metadata;
    const cur = store.get(store.types.resolve(type), namespace, name);
    const main = obj;
    const stored = cur
      ? store.update(type, {
        ...main,
        metadata: { ...main.metadata, resourceVersion: cur.metadata.resourceVersion },
      }, USER).obj
      : store.create(type, main, USER).obj;
    if (!("status" in obj) || !store.types.hasStatus(store.types.resolve(type))) {
      return cloneJson(stored);
    }
    return cloneJson(store.update(type, { ...stored, status: obj.status }, USER, "status").obj);
  }

  /** Test setup: removes an object as its last finalizer's owner would, finalizers and all. */
  remove(type: ResourceType, namespace: string | undefined, name: string): void {
    const store = this.sim.store;
    const cur = store.get(store.types.resolve(type), namespace, name);
    if (!cur) return;
    if (cur.metadata.finalizers?.length) {
      store.update(type, { ...cur, metadata: { ...cur.metadata, finalizers: [] } }, USER);
    }
    if (store.get(store.types.resolve(type), namespace, name)) {
      store.delete(type, namespace, name, {}, USER);
    }
  }

  /** The stored object (frozen), for assertions. */
  peek(type: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    const store = this.sim.store;
    return store.types.serves(type)
      ? store.get(store.types.resolve(type), namespace, name)
      : undefined;
  }

  list(type: ResourceType, opts?: ListOptions): Promise<ListPage> {
    return this.#client.list(type, opts);
  }

  watch(type: ResourceType, opts: WatchOptions, signal: AbortSignal): AsyncIterable<WatchEvent> {
    return this.#client.watch(type, opts, signal);
  }

  get(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
  ): Promise<KubeObject | undefined> {
    return this.#client.get(type, namespace, name);
  }

  create(type: ResourceType, obj: KubeObject): Promise<KubeObject> {
    return this.#client.create(type, obj);
  }

  update(type: ResourceType, obj: KubeObject): Promise<KubeObject> {
    return this.#client.update(type, obj);
  }

  apply(type: ResourceType, obj: KubeObject, opts: ApplyOptions): Promise<KubeObject> {
    return this.#client.apply(type, obj, opts);
  }

  applyStatus(type: ResourceType, obj: KubeObject, opts: ApplyOptions): Promise<KubeObject> {
    return this.#client.applyStatus(type, obj, opts);
  }

  patch(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    ops: JsonPatchOp[],
  ): Promise<KubeObject> {
    return this.#client.patch(type, namespace, name, ops);
  }

  delete(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    opts?: DeleteOptions,
  ): Promise<boolean> {
    return this.#client.delete(type, namespace, name, opts);
  }
}
