/**
 * A service mesh of Envoy proxies, as far as local rate limits go: which EnvoyFilters reach which
 * Pod's proxy (Istio's rules), one ProxyState a Pod, its route entries (a sidecar's inbound
 * route; the gateway's routes from VirtualServices), and requests spread round-robin over a
 * target's ready Pods. Every proxy runs the Envoy version of the mesh. Deterministic: no clock of
 * its own, no randomness; the caller passes the time.
 */
import type { FieldError } from "../api/issues.ts";
import { DEFAULT_BEHAVIOUR, type EnvoyBehaviour } from "./envoy.ts";
import { meshProxyOf } from "../api/pod.ts";
import { reaches as reachesNamespace } from "../api/mesh.ts";
import { selects } from "../api/selector.ts";
import { type EnvoyFilterModel, readEnvoyFilterOnce } from "./envoyfilter.ts";
import type { EngineClient } from "./engine.ts";
import {
  admitted,
  type BucketId,
  decide,
  type Decision,
  INBOUND_ROUTE,
  newProxyState,
  type ProxyState,
} from "./proxy.ts";
import { NO_LIMIT, proxyConfig } from "./proxyconfig.ts";
import type { Request } from "./request.ts";
import { type GatewayRoute, gatewayRoutes, routeOf } from "./routes.ts";

/** The one route of a gateway no VirtualService routes (the model's stand-in: it takes everything). */
export const GATEWAY_ROUTE = "*";

/** A Pod as the mesh sees it. */
export interface MeshPod {
  namespace: string;
  name: string;
  /** Changes when the Pod is replaced (a new proxy, new buckets); defaults to namespace/name. */
  uid?: string;
  labels: Readonly<Record<string, string>>;
  ready: boolean;
  /**
   * False when the Pod has no mesh proxy: no EnvoyFilter reaches it and its requests pass
   * unlimited. Absent means it has one.
   */
  sidecar?: boolean;
  /**
   * True when its proxy runs as a router (a gateway: it applies GATEWAY patches), false for a
   * sidecar (SIDECAR_INBOUND). Absent: a router when the Pod is one of the mesh's gateway
   * (`MeshOptions.gateway`), for Pods written by hand; `meshPodOf` always says.
   */
  router?: boolean;
}

/** Where a request goes: a workload (namespace and labels of its Pods) or the ingress gateway. */
export type MeshTarget =
  | { namespace: string; labels: Readonly<Record<string, string>> }
  | "gateway";

/** A request sent into the mesh. */
export interface MeshRequest extends Request {
  to: MeshTarget;
  /** When true, a request to a workload passes the ingress gateway's proxy first. */
  viaGateway?: boolean;
}

/** The answer, and which Pod's proxy gave it. */
export interface MeshResponse extends Decision {
  /** `namespace/name` of the Pod that answered; undefined when no Pod was ready. */
  pod?: string;
  /** The route entry that took the request at that Pod; undefined when none did (404). */
  route?: string;
}

/** An EnvoyFilter a proxy rejected (Envoy NACKs the config and keeps its previous one). */
export interface Rejection {
  filter: string;
  pod: string;
  errors: FieldError[];
}

/** Mesh options. */
export interface MeshOptions {
  /** Istio's config root namespace: its EnvoyFilters reach matching workloads of every namespace. */
  rootNamespace?: string;
  /** The ingress gateway's Pods. */
  gateway?: { namespace: string; labels: Readonly<Record<string, string>> };
  /** The Envoy every proxy of this mesh runs (`envoyBehaviour("1.30")`); default DEFAULT_ENVOY. */
  envoy?: EnvoyBehaviour;
  /** The rate limit engine the global filters ask; none: every call fails (the failure mode). */
  engine?: EngineClient;
}

/** The defaults of this project's mesh (docs/design.md: gateway `app: mesh-ingressgateway` in mesh-system). */
export const DEFAULT_MESH: Required<Omit<MeshOptions, "engine">> = {
  rootNamespace: "mesh-system",
  gateway: { namespace: "mesh-system", labels: { app: "mesh-ingressgateway" } },
  envoy: DEFAULT_BEHAVIOUR,
};

interface PodProxy {
  key: string;
  state: ProxyState;
}

/** Istio applies root-namespace EnvoyFilters first, then by priority, creation time and name. */
function applicationOrder(root: string) {
  return (a: EnvoyFilterModel, b: EnvoyFilterModel): number =>
    Number(b.namespace === root) - Number(a.namespace === root) ||
    a.priority - b.priority ||
    (a.creationTimestamp < b.creationTimestamp
      ? -1
      : a.creationTimestamp > b.creationTimestamp
      ? 1
      : 0) ||
    (`${a.namespace}/${a.name}` < `${b.namespace}/${b.name}` ? -1 : 1);
}

/** The mesh: call `sync` when EnvoyFilters or Pods change, `send` for each request. */
export class Mesh {
  readonly #opts: Required<Omit<MeshOptions, "engine">> & { engine?: EngineClient };
  #pods: MeshPod[] = [];
  #proxies = new Map<string, PodProxy>();
  #rejections: Rejection[] = [];
  #next = new Map<string, number>();
  #routes: GatewayRoute[] = [];

  constructor(opts: MeshOptions = {}) {
    this.#opts = { ...DEFAULT_MESH, ...opts };
  }

  /** The Envoy this mesh's proxies run. */
  get envoy(): EnvoyBehaviour {
    return this.#opts.envoy;
  }

  /**
   * Takes the current EnvoyFilters and VirtualServices (other objects, and filters that do not
   * touch the local rate limit, are ignored) and Pods at `nowMs`. A proxy whose config or route
   * entries changed (a new route configuration), or a new Pod, starts with full buckets at `nowMs`;
   * an unchanged proxy keeps its buckets. A proxy that a filter the model (or Envoy) rejects
   * reaches keeps its previous config, as Envoy does on a NACK. Call it at the time things change:
   * a config first seen by a later call starts its buckets then.
   */
  sync(objects: readonly unknown[], pods: readonly MeshPod[], nowMs: number): void {
    const envoyFilters = objects.filter((o) =>
      (o as { kind?: unknown })?.kind !== "VirtualService"
    );
    const read = envoyFilters.map((o) => readEnvoyFilterOnce(o, this.#opts.envoy));
    this.#routes = gatewayRoutes(objects);
    const routeKey = JSON.stringify(this.#routes);
    const root = this.#opts.rootNamespace;
    const good = read.flatMap((r) => (r.ok ? [r.value] : [])).sort(applicationOrder(root));
    const bad = read.flatMap((r) =>
      r.ok || r.selector === null ? [] : [{ ...r, selector: r.selector }]
    );
    const reaches = (f: { namespace: string; selector?: Record<string, string> }, p: MeshPod) =>
      reachesNamespace(f.namespace, p.namespace, root) && selects(f.selector ?? {}, p.labels);
    const proxies = new Map<string, PodProxy>();
    this.#rejections = [];
    for (const pod of pods) {
      if (pod.sidecar === false) continue; // no proxy: nothing to configure or to reject
      const id = pod.uid ?? `${pod.namespace}/${pod.name}`;
      const prev = this.#proxies.get(id);
      const rejected = bad.filter((f) => reaches(f, pod));
      if (rejected.length > 0) {
        for (const f of rejected) {
          this.#rejections.push({
            filter: `${f.namespace}/${f.name}`,
            pod: `${pod.namespace}/${pod.name}`,
            errors: f.errors,
          });
        }
        proxies.set(
          id,
          prev ?? { key: "", state: newProxyState(NO_LIMIT, nowMs, this.#opts.envoy) },
        );
        continue;
      }
      const context = this.#contextOf(pod);
      const config = proxyConfig(good.filter((f) => reaches(f, pod)), context);
      const key = context + JSON.stringify(config) + (context === "GATEWAY" ? routeKey : "");
      proxies.set(
        id,
        prev && prev.key === key ? prev : {
          key,
          state: newProxyState(
            config,
            nowMs,
            this.#opts.envoy,
            context === "GATEWAY",
            this.#opts.engine,
          ),
        },
      );
    }
    this.#pods = [...pods];
    this.#proxies = proxies;
  }

  /** EnvoyFilters the proxies rejected at the last `sync`. */
  rejections(): readonly Rejection[] {
    return this.#rejections;
  }

  /** The proxy state of a Pod (for charts and tests); undefined for an unknown Pod. */
  proxy(namespace: string, name: string): ProxyState | undefined {
    const pod = this.#pods.find((p) => p.namespace === namespace && p.name === name);
    return pod && this.#proxies.get(pod.uid ?? `${pod.namespace}/${pod.name}`)?.state;
  }

  /** The gateway's route entries from the VirtualServices of the last `sync`. */
  gatewayRoutes(): readonly GatewayRoute[] {
    return this.#routes;
  }

  /**
   * Answers a request at `nowMs`. No ready Pod: 503 `no healthy upstream`. At the gateway, a
   * request no route entry takes gets Envoy's 404 (when VirtualServices route the gateway at all).
   */
  send(req: MeshRequest, nowMs: number): MeshResponse {
    if (req.viaGateway && req.to !== "gateway") {
      const first = this.#answer("gateway", req, nowMs);
      if (first.response.status !== 200 || first.response.rejected) return first.response;
      // On to the sidecar as the gateway's connection manager left it (its peer appended to
      // x-forwarded-for); the sidecar's peer is the gateway, whose address the model leaves out.
      const { peer: _, tls: __, ...forwarded } = { ...req, ...first.forwarded };
      return this.#at(req.to, forwarded, nowMs);
    }
    return this.#at(req.to, req, nowMs);
  }

  #contextOf(pod: MeshPod) {
    const gw = this.#opts.gateway;
    const router = pod.router ??
      (pod.namespace === gw.namespace && selects(gw.labels, pod.labels));
    return router ? "GATEWAY" as const : "SIDECAR_INBOUND" as const;
  }

  #at(to: MeshTarget, req: Request, nowMs: number): MeshResponse {
    return this.#answer(to, req, nowMs).response;
  }

  /** The answer at `to`, and the request as the chosen proxy's connection manager admitted it. */
  #answer(
    to: MeshTarget,
    req: Request,
    nowMs: number,
  ): { response: MeshResponse; forwarded?: Request } {
    const target = to === "gateway" ? this.#opts.gateway : to;
    const ready = this.#pods
      .filter((p) =>
        p.ready && p.namespace === target.namespace && selects(target.labels, p.labels)
      )
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    if (ready.length === 0) {
      return {
        response: {
          status: 503,
          headers: { "content-type": "text/plain" },
          body: "no healthy upstream",
        },
      };
    }
    const rr = `${target.namespace}/${JSON.stringify(Object.entries(target.labels).sort())}`;
    const n = this.#next.get(rr) ?? 0;
    this.#next.set(rr, n + 1);
    const pod = ready[n % ready.length];
    const proxy = this.#proxies.get(pod.uid ?? `${pod.namespace}/${pod.name}`);
    const seen = proxy && admitted(proxy.state, req);
    const route = this.#routeAt(to, seen?.request ?? req);
    const decision = proxy && seen
      ? decide(proxy.state, req, nowMs, route ?? null, seen)
      : { status: 200, headers: {}, body: "" };
    const at = { pod: `${pod.namespace}/${pod.name}`, ...(route ? { route } : {}) };
    const forwarded = seen?.request;
    // No route: the router answers 404 with no body, once the rate limit filters let it pass.
    if (route === undefined && decision.status === 200 && !decision.rejected) {
      return { response: { ...decision, status: 404, body: "", ...at }, forwarded };
    }
    return { response: { ...decision, ...at }, forwarded };
  }

  /** The route entry a request takes at `to`'s proxies; undefined when none (a 404). */
  #routeAt(to: MeshTarget, req: Request): string | undefined {
    if (to !== "gateway") return INBOUND_ROUTE;
    if (this.#routes.length === 0) return GATEWAY_ROUTE;
    return routeOf(this.#routes, req)?.name;
  }
}

/**
 * Reads a Pod object (v1) into a MeshPod: ready when its `Ready` condition is True and it is not
 * being deleted; with a proxy, a sidecar or a router, as `meshProxyOf` reads it.
 */
export function meshPodOf(obj: {
  metadata: {
    namespace?: string;
    name: string;
    uid?: string;
    labels?: Record<string, string>;
    deletionTimestamp?: string;
    annotations?: Record<string, string>;
  };
  spec?: unknown;
  status?: unknown;
}): MeshPod {
  const conditions =
    (obj.status as { conditions?: Array<{ type?: string; status?: string }> } | undefined)
      ?.conditions;
  const proxy = meshProxyOf(obj);
  const ready = !obj.metadata.deletionTimestamp &&
    (conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
  return {
    namespace: obj.metadata.namespace ?? "default",
    name: obj.metadata.name,
    ...(obj.metadata.uid ? { uid: obj.metadata.uid } : {}),
    labels: obj.metadata.labels ?? {},
    ready,
    sidecar: proxy !== undefined,
    router: proxy === "router",
  };
}

export type { BucketId };
