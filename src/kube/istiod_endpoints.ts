/**
 * istiod's replicas, found from the EndpointSlices of its Service (`--istiod-service`): a proxy is
 * connected to one replica and each replica's `/debug/syncz` lists only its own proxies, so the
 * operator asks every replica, and the replicas come and go (istiod's HPA, rolling upgrades).
 *
 * Each Service is one list and watch (the runtime's Watcher into a CacheStore) of the slices
 * labelled `kubernetes.io/service-name=<name>` in its namespace, so at rest this costs a watch and
 * no request. A replica is an endpoint of those slices, asked on the slice's port named
 * `http-monitoring` (istiod's chart names its 15014 so), else on 15014:
 *
 * - ready (`conditions.ready` true or absent): asked, and an istiod that does not answer is a
 *   failure (Unknown, naming the replica);
 * - terminating but still serving (`serving` and `terminating` true, as during a rolling
 *   upgrade): asked too, since its proxies are still connected to it until they move, but it is
 *   going away, so no answer from it is no failure;
 * - anything else: not asked.
 *
 * The RBAC this needs is `list` and `watch` of endpointslices in istiod's namespace only
 * ({@link DISCOVERY_VERBS}); src/deploy/ renders that Role from the same constant.
 */
import type { KubeObject, ResourceType } from "../api/object.ts";
import {
  CacheStore,
  type Clock,
  type Cluster,
  describeFailure,
  forwardingTo,
  isApiError,
  type Logger,
  type Metrics,
  type Random,
  Watcher,
} from "../runtime/mod.ts";
import type { Verb } from "./rbac.ts";
import type { AccessCheck } from "./self_access.ts";

/** discovery.k8s.io/v1 EndpointSlice (not in RESOURCES: only this module reads it). */
export const ENDPOINT_SLICE: ResourceType = {
  group: "discovery.k8s.io",
  version: "v1",
  kind: "EndpointSlice",
  plural: "endpointslices",
  namespaced: true,
};

/** The label an EndpointSlice names its Service by. */
export const SERVICE_NAME_LABEL = "kubernetes.io/service-name";
/** The name of istiod's monitoring port in its Service (Istio's chart). */
export const MONITORING_PORT_NAME = "http-monitoring";
/** istiod's monitoring port when the slice names none. */
export const DEFAULT_MONITORING_PORT = 15014;
/** What the discovery does with endpointslices, in istiod's namespace only. */
export const DISCOVERY_VERBS: readonly Verb[] = ["list", "watch"];

/** A Service, `namespace/name`. */
export interface ServiceRef {
  namespace: string;
  name: string;
}

/** `ns/name` of a Service. */
export function serviceRefText(s: ServiceRef): string {
  return `${s.namespace}/${s.name}`;
}

/** One endpoint to ask: its monitoring URL, a name for messages, and whether it must answer. */
export interface Replica {
  url: string;
  /** The Pod's name (the endpoint's targetRef), else its address. */
  name: string;
  /** False for a terminating endpoint still serving: asked, but no answer is no failure. */
  required: boolean;
}

interface SliceEndpoint {
  addresses?: string[];
  conditions?: { ready?: boolean | null; serving?: boolean | null; terminating?: boolean | null };
  targetRef?: { kind?: string; namespace?: string; name?: string };
}

interface SlicePort {
  name?: string | null;
  port?: number | null;
}

/**
 * The replicas the slices of one Service list, each once (by Pod, else by URL: a dual-stack
 * replica is in an IPv4 and an IPv6 slice), sorted by URL. Pure.
 */
export function replicasOf(slices: readonly KubeObject[]): Replica[] {
  const byKey = new Map<string, Replica>();
  for (const slice of slices) {
    const s = slice as unknown as {
      addressType?: string;
      endpoints?: SliceEndpoint[] | null;
      ports?: SlicePort[] | null;
    };
    const named = (s.ports ?? []).find((p) => p.name === MONITORING_PORT_NAME)?.port;
    const port = typeof named === "number" ? named : DEFAULT_MONITORING_PORT;
    for (const e of s.endpoints ?? []) {
      const address = e.addresses?.[0];
      if (!address) continue;
      const c = e.conditions ?? {};
      const ready = c.ready !== false;
      const draining = !ready && c.serving === true && c.terminating === true;
      if (!ready && !draining) continue;
      const host = s.addressType === "IPv6" ? `[${address}]` : address;
      const url = `http://${host}:${port}`;
      const pod = e.targetRef?.kind === "Pod" && e.targetRef.name ? e.targetRef.name : undefined;
      const key = pod ? `pod/${e.targetRef?.namespace ?? ""}/${pod}` : url;
      const seen = byKey.get(key);
      if (seen) seen.required ||= ready;
      else byKey.set(key, { url, name: pod ?? address, required: ready });
    }
  }
  return [...byKey.values()].sort((a, b) => (a.url < b.url ? -1 : a.url > b.url ? 1 : 0));
}

/** What the discovery knows now. */
export type ReplicaView =
  /** Some Service's slices have not been listed yet: nothing is known, nothing to say. */
  | { state: "listing" }
  /** Some Service's slices cannot be listed, or it has no ready replica: why, for istiod's status. */
  | { state: "failed"; reason: string; message: string }
  /** Every Service listed: the replicas to ask, and a number that changes when they do. */
  | { state: "listed"; version: number; replicas: readonly Replica[] };

/** Why the discovery gives no replica: no ready endpoint. */
export const NO_READY_REPLICA = "NoReadyReplica";
/** Why the discovery gives no replica: its slices cannot be listed. */
export const REPLICAS_UNKNOWN = "ReplicasUnknown";

/** Settings of the discovery. */
export interface IstiodEndpointsOptions {
  /** Where to list and watch (its `list`/`watch` calls are the only ones made). */
  cluster: Cluster;
  services: readonly ServiceRef[];
  clock: Clock;
  random: Random;
  log: Logger;
  metrics?: Metrics;
  /** While true, list and watch failures log at debug (the startup checks say what is wrong). */
  quiet?: () => boolean;
}

interface Watched {
  service: ServiceRef;
  store: CacheStore;
  watcher: Watcher;
  /** The last list's failure, until a list succeeds. */
  failure?: string;
}

/** Follows the replicas of istiod's Services: `run` watches, `view` says what is known. */
export class IstiodEndpoints {
  readonly #watched: Watched[];
  #key = "";
  #version = 0;

  /** The discovery; nothing is asked before `run`. */
  constructor(opts: IstiodEndpointsOptions) {
    this.#watched = opts.services.map((service) => {
      const labelSelector = `${SERVICE_NAME_LABEL}=${service.name}`;
      const store = new CacheStore(ENDPOINT_SLICE, labelSelector);
      const w: Watched = { service, store } as Watched;
      // The list's failures are kept to say why no replica is known (the watcher logs them).
      const cluster: Cluster = {
        ...forwardingTo(opts.cluster),
        list: (type, o) =>
          opts.cluster.list(type, o).then((page) => {
            w.failure = undefined;
            return page;
          }, (err: unknown) => {
            w.failure = isApiError(err, 403)
              ? `list ${type.plural} in namespace ${service.namespace}: forbidden (${err.message}): apply deploy/istiod's Role ${DISCOVERY_ROLE} there`
              : describeFailure("list", type, err).replace(/; retrying$/, "");
            throw err;
          }),
      };
      w.watcher = new Watcher({
        cluster,
        clock: opts.clock,
        random: opts.random,
        log: opts.log.child({ service: serviceRefText(service) }),
        metrics: opts.metrics,
        type: ENDPOINT_SLICE,
        namespace: service.namespace,
        labelSelector,
        quiet: opts.quiet,
      }, (ev) => store.handle(ev));
      return w;
    });
  }

  /** Lists and watches every Service's slices until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    await Promise.all(this.#watched.map((w) => w.watcher.run(signal)));
  }

  /** The replicas to ask now (see {@link ReplicaView}). */
  view(): ReplicaView {
    const replicas: Replica[] = [];
    for (const w of this.#watched) {
      const name = serviceRefText(w.service);
      if (!w.store.synced) {
        if (w.failure === undefined) return { state: "listing" };
        return {
          state: "failed",
          reason: REPLICAS_UNKNOWN,
          message:
            `istiod's replicas are not known: the EndpointSlices of Service ${name}: ${w.failure}`,
        };
      }
      const found = replicasOf(w.store.list(w.service.namespace));
      if (found.length === 0) {
        return {
          state: "failed",
          reason: NO_READY_REPLICA,
          message:
            `istiod has no ready replica: the EndpointSlices of Service ${name} list no ready endpoint`,
        };
      }
      replicas.push(...found);
    }
    const key = replicas.map((r) => `${r.url} ${r.name} ${r.required}`).join("\n");
    if (key !== this.#key) {
      this.#key = key;
      this.#version++;
    }
    return { state: "listed", version: this.#version, replicas };
  }
}

/** The name of the Role (and its binding) granting the discovery in istiod's namespace. */
export const DISCOVERY_ROLE = "platform-operator-istiod";

/**
 * The access checks the discovery of `services` needs at start, each with what grants it: `list`
 * and `watch` of endpointslices in each Service's namespace.
 */
export function discoveryChecks(
  services: readonly ServiceRef[],
): { check: AccessCheck; grantedBy: string }[] {
  const namespaces = [...new Set(services.map((s) => s.namespace))];
  return namespaces.flatMap((namespace) =>
    DISCOVERY_VERBS.map((verb) => ({
      check: { type: ENDPOINT_SLICE, verb, namespace },
      grantedBy:
        `apply deploy/istiod's Role ${DISCOVERY_ROLE} in namespace ${namespace} (docs/operations.md, Asking istiod)`,
    }))
  );
}
