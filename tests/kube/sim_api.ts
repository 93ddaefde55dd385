/**
 * The simulator's API server (sim/cluster) behind HTTP, for running the whole operator process in a
 * test: each request the operator's LiveCluster sends (get, list, watch, create, update, server-side
 * apply, JSON Patch, delete, status subresource) becomes the same call on one simulator client, so
 * every answer comes from the simulator's store, lists and watches; there is no second model of the
 * API here. Only the self reviews of access (the simulator has no RBAC) are answered here: rules
 * reviews with one rule allowing everything, access reviews allowed.
 * The simulator's clock follows real time, so its own controllers (CRD establishment, Pods of
 * Deployments, garbage collection) run while the operator does.
 */
import { RESOURCES, resourceType } from "../../src/api/resources.ts";
import { customResourceDefinitions } from "../../src/crd/definitions.ts";
import { envoyFilterCrd, virtualServiceCrd } from "../../src/crd/istio.ts";
import { ApiError, type DeleteOptions, type WatchEvent } from "../../src/runtime/cluster.ts";
import type { JsonPatchOp, KubeObject, ResourceType } from "../../src/api/object.ts";
import { SimClock } from "../../sim/clock.ts";
import { type Actor, type SimClient, SimCluster } from "../../sim/cluster/mod.ts";
import { badRequest, notFound, statusObject } from "../../sim/cluster/errors.ts";
import { Prng } from "../../sim/prng.ts";
import { json, type Seen, status } from "./fake_server.ts";
import { APPLY_PATCH, JSON_PATCH } from "../../src/kube/live_cluster.ts";

const INSTALLER: Actor = { name: "installer", manager: "kubectl" };
const CRD = RESOURCES.CustomResourceDefinition;
/** How often the simulator's clock catches up with real time between requests. */
const TICK_MS = 20;

/** What a request path names: a type (served or not), and maybe a namespace, object, subresource. */
interface Target {
  type: ResourceType;
  namespace?: string;
  name?: string;
  subresource?: string;
}

/** The simulated cluster and the HTTP handler in front of it. */
export class SimApi {
  /** The cluster (its store holds what the operator wrote, for assertions). */
  readonly sim: SimCluster;
  readonly #clock: SimClock;
  readonly #client: SimClient;
  readonly #watches = new Set<AbortController>();
  readonly #ticker: ReturnType<typeof setInterval>;

  /** A cluster as the simulator starts one: namespaces, the project's and Istio's CRDs, the mesh. */
  constructor() {
    this.#clock = new SimClock(Date.now());
    this.sim = new SimCluster({ clock: this.#clock, prng: new Prng(1) });
    this.#client = this.sim.client("operator", { latency: () => 0, faultFree: true });
    this.#ticker = setInterval(() => this.#tick(), TICK_MS);
  }

  /** Deletes `type`'s CRD (and so stops serving the type), as before `kubectl apply -k deploy/`. */
  uninstall(type: ResourceType): void {
    const store = this.sim.store;
    const name = `${type.plural}.${type.group}`;
    const crd = store.get(CRD, undefined, name);
    if (!crd) return;
    // Its instances' cleanup is the finalizer's job; there are none to clean up here.
    store.update(CRD, { ...crd, metadata: { ...crd.metadata, finalizers: [] } }, INSTALLER);
    store.delete(CRD, undefined, name, {}, INSTALLER);
  }

  /** Creates `type`'s CRD as shipped (the project's, or Istio's): the type is served at once. */
  install(type: ResourceType): void {
    const crds = [...customResourceDefinitions() as unknown as KubeObject[], envoyFilterCrd()];
    const crd = [...crds, virtualServiceCrd()].find((c) =>
      c.metadata.name === `${type.plural}.${type.group}`
    );
    if (!crd) throw new Error(`no CRD ships for ${type.plural}.${type.group}`);
    this.sim.store.create(CRD, crd, INSTALLER);
  }

  /** Ends every open watch and stops the clock. */
  close(): void {
    clearInterval(this.#ticker);
    for (const w of this.#watches) w.abort();
    for (const w of this.sim.watches) w.stream.end();
  }

  /** Answers one request. */
  handle = async (req: Seen): Promise<Response> => {
    this.#tick();
    try {
      return await this.#answer(req);
    } catch (err) {
      if (err instanceof ApiError) return status(err.code, err.reason, err.message);
      throw err;
    }
  };

  async #answer(req: Seen): Promise<Response> {
    const target = this.#target(req.path);
    if (!target) return status(404, "NotFound", "the server could not find the requested resource");
    const { type, namespace, name, subresource } = target;
    const q = req.query;
    if (type.plural === "selfsubjectrulesreviews" && req.method === "POST") {
      const everything = { verbs: ["*"], apiGroups: ["*"], resources: ["*"] };
      const status = { resourceRules: [everything], nonResourceRules: [], incomplete: false };
      return json({ ...JSON.parse(req.body), status }, 201);
    }
    if (type.plural === "selfsubjectaccessreviews" && req.method === "POST") {
      return json({ ...JSON.parse(req.body), status: { allowed: true } }, 201);
    }
    const client = this.#client;
    if (!name) {
      if (req.method === "GET" && q.get("watch") === "true") return this.#watch(target, q);
      if (req.method === "GET") {
        const page = await client.list(type, {
          namespace,
          labelSelector: q.get("labelSelector") ?? undefined,
          limit: q.has("limit") ? Number(q.get("limit")) : undefined,
          continue: q.get("continue") ?? undefined,
        });
        const metadata = { resourceVersion: page.resourceVersion, continue: page.continue };
        return json({ kind: `${type.kind}List`, metadata, items: page.items });
      }
      if (req.method === "POST") {
        return json(await client.create(type, placed(req.body, namespace)), 201);
      }
    } else if (req.method === "GET" && !subresource) {
      const obj = await client.get(type, namespace, name);
      if (!obj) throw notFound(type, name);
      return json(obj);
    } else if (req.method === "PUT" && !subresource) {
      return json(await client.update(type, placed(req.body, namespace, name)));
    } else if (req.method === "PATCH" && req.headers.get("content-type") === APPLY_PATCH) {
      const fieldManager = q.get("fieldManager");
      if (!fieldManager) throw badRequest("fieldManager is required for apply requests");
      const obj = placed(req.body, namespace, name);
      const opts = { fieldManager, force: q.get("force") === "true" };
      if (subresource === "status") return json(await client.applyStatus(type, obj, opts));
      if (!subresource) return json(await client.apply(type, obj, opts));
    } else if (req.method === "PATCH" && !subresource) {
      if (req.headers.get("content-type") !== JSON_PATCH) {
        return status(415, "UnsupportedMediaType", `${req.headers.get("content-type")}`);
      }
      const ops = JSON.parse(req.body) as JsonPatchOp[];
      return json(await client.patch(type, namespace, name, ops));
    } else if (req.method === "DELETE" && !subresource) {
      const opts: DeleteOptions = req.body ? JSON.parse(req.body) : {};
      const { propagationPolicy, preconditions } = opts;
      const deleted = await client.delete(type, namespace, name, {
        propagationPolicy,
        preconditions,
      });
      if (!deleted) throw notFound(type, name);
      return json({ kind: "Status", apiVersion: "v1", status: "Success" });
    }
    return status(405, "MethodNotAllowed", `${req.method} ${req.path} is not served here`);
  }

  /** A watch as a stream of JSON lines; an error opening it is the answer's status instead. */
  async #watch({ type, namespace }: Target, q: URLSearchParams): Promise<Response> {
    const stop = new AbortController();
    const events = this.#client.watch(type, {
      namespace,
      resourceVersion: q.get("resourceVersion") ?? "",
      labelSelector: q.get("labelSelector") ?? undefined,
      timeoutSeconds: q.has("timeoutSeconds") ? Number(q.get("timeoutSeconds")) : undefined,
      allowWatchBookmarks: q.get("allowWatchBookmarks") === "true",
    }, stop.signal)[Symbol.asyncIterator]();
    let first: Promise<IteratorResult<WatchEvent>> | undefined = events.next();
    // Without latency the client opens a watch in microtasks: a failure to open shows before a
    // timer fires, while an open watch with nothing to replay stays pending.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const opened = await Promise.race([
      first.then(() => undefined, (err: unknown) => err),
      new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), 0))),
    ]);
    clearTimeout(timer);
    if (opened !== undefined) throw opened;
    this.#watches.add(stop);
    const encoder = new TextEncoder();
    const line = (event: WatchEvent) => encoder.encode(JSON.stringify(event) + "\n");
    const body = new ReadableStream<Uint8Array>({
      pull: async (out) => {
        try {
          const next = await (first ?? events.next());
          first = undefined;
          if (!next.done) return out.enqueue(line(next.value));
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          out.enqueue(line({ type: "ERROR", object: statusObject(err) }));
        }
        this.#watches.delete(stop);
        out.close();
      },
      cancel: () => {
        this.#watches.delete(stop);
        stop.abort();
      },
    });
    return new Response(body, { headers: { "content-type": "application/json" } });
  }

  #target(path: string): Target | undefined {
    const parts = path.split("/").filter((p) => p).map(decodeURIComponent);
    const core = parts[0] === "api";
    if (!core && parts[0] !== "apis") return undefined;
    const [group, version] = core ? ["", parts[1]] : [parts[1], parts[2]];
    const rest = parts.slice(core ? 2 : 3);
    if (group === undefined || version === undefined || rest.length === 0) return undefined;
    // `namespaces/x/<plural>...` is namespaced; `namespaces` and `namespaces/x` are Namespaces.
    const namespace = rest[0] === "namespaces" && rest.length >= 3 ? rest[1] : undefined;
    const [plural, name, subresource, ...more] = namespace ? rest.slice(2) : rest;
    if (more.length > 0) return undefined;
    const asked = resourceType(group, version, "", plural, namespace !== undefined);
    // An unserved type goes to the client as asked: the simulator answers 404 as for a missing CRD.
    const served = this.sim.store.types.serves(asked);
    const type = served ? this.sim.store.types.resolve(asked) : asked;
    return { type, namespace, name, subresource };
  }

  /** Runs the simulator's timers that are due by now, in order. */
  #tick(): void {
    const now = Date.now();
    for (let fire = this.#clock.popDue(now); fire; fire = this.#clock.popDue(now)) fire();
    this.#clock.advanceTo(now);
  }
}

/** The body object, in the namespace (and with the name) the path gives; 400 when they differ. */
function placed(body: string, namespace: string | undefined, name?: string): KubeObject {
  const obj = JSON.parse(body) as KubeObject;
  const meta = obj.metadata ??= { name: name ?? "" };
  if (namespace !== undefined && (meta.namespace ?? namespace) !== namespace) {
    throw badRequest("the namespace of the provided object does not match the request's");
  }
  if (name !== undefined && (meta.name || name) !== name) {
    throw badRequest("the name of the provided object does not match the request's");
  }
  if (namespace !== undefined) meta.namespace = namespace;
  if (name !== undefined) meta.name = name;
  return obj;
}
