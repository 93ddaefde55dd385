/**
 * istiod and the mesh's proxies, as far as the RateLimit's Accepted condition goes (issue 42 point
 * 5). Each mesh Pod (a sidecar, or the gateway's router) has one proxy that connects to istiod,
 * receives the EnvoyFilters reaching it in pushes, and answers each push as Envoy does: it
 * acknowledges it (ACK) and holds the new config, or rejects it (NACK) and keeps the last config it
 * accepted. istiod pushes a seeded debounce after EnvoyFilters or Pods change (at once to a proxy
 * that connects), and keeps per proxy what `/debug/syncz` shows: the nonce sent, the nonce
 * acknowledged and the error of the last NACK. A proxy's dump is generated from its push context,
 * as istiod's config_dump is, which moves before the push is sent (istiod's push queue).
 *
 * Whether a proxy takes a push is the data-plane model's call (src/dataplane: a filter the model
 * refuses, like Kyma api-gateway#2380's empty `actions`, makes the proxy reject the push), plus the
 * faults: a proxy that rejects a push, a proxy that never connects, istiod unreachable for the
 * operator (its pushes go on). A dump holds the per-route configs of the local rate limit filter
 * as the model reads them from the filters it holds, in Istio's order; `heldLimitsOf`
 * (src/api/istiod.ts) reads the operator's limits out of it, as from a real dump.
 *
 * Every proxy keeps a timeline of the limits it held and of when it was rejecting: the invariants
 * judge the operator's Accepted condition against it, the oracle its convergence.
 */
import { heldLimitsOf, proxyId, type ProxySync } from "../src/api/istiod.ts";
import type { KubeObject } from "../src/api/object.ts";
import { RESOURCES } from "../src/api/resources.ts";
import { contextOf, type ProxyContext, reaches } from "../src/api/mesh.ts";
import { isActivePod, meshProxyOf } from "../src/api/pod.ts";
import { selects } from "../src/api/selector.ts";
import { GENERATION_ANNOTATION, STAT_PREFIX } from "../src/reconcile/ratelimit/render.ts";
import {
  type EnvoyBehaviour,
  istioOf,
  LOCAL_RATELIMIT_FILTER,
  Mesh,
  type MeshPod,
  meshPodOf,
} from "../src/dataplane/mod.ts";
import { unwrapTyped } from "../src/dataplane/envoyconfig.ts";
import { readEnvoyFilterOnce } from "../src/dataplane/envoyfilter.ts";
import type { Change, SimCluster } from "./cluster/mod.ts";
import { SIM_EPOCH } from "./clock.ts";
import type { Target } from "./fault_rules.ts";
import type { Prng } from "./prng.ts";
import type { Trace } from "./trace.ts";

/** Where a proxy stands with istiod. */
export type ProxyStanding = "notConnected" | "pending" | "accepted" | "rejected";

/** One push istiod sent a proxy. */
interface Push {
  nonce: string;
  /** The connection it was sent on: an answer on an earlier one is lost. */
  stream: number;
  /** The EnvoyFilters reaching the proxy then. */
  filters: readonly KubeObject[];
  /** Which filters (by uid) at which generations: a push that changes none is not sent. */
  key: string;
}

/** What a proxy held from a moment on: its limits (JSON; undefined before it accepted any). */
interface Moment {
  at: number;
  limits: string | undefined;
  /** The filters of the push it holds (undefined before it accepted any). */
  filters: readonly KubeObject[] | undefined;
  rejecting: boolean;
}

/** Why istiod could not be asked, as the operator's client reports it (src/kube/istiod.ts). */
export type IstiodOutage = { reason: "Unreachable"; message: string };

/** A mesh Pod's proxy: what istiod knows of it and what it holds. */
export class SimProxy {
  connected = false;
  /** Kept from connecting (a fault) until healed. */
  heldBack = false;
  /** The last push sent, and the nonce of the last one acknowledged. */
  sent: Push | undefined;
  /** The push context istiod moved to and has not sent yet (its push queue). */
  queued: { filters: readonly KubeObject[]; key: string } | undefined;
  sentTime = "";
  acked = "";
  /** The error of its last NACK; empty after an ACK. */
  lastError = "";
  /** Its last NACK was an injected fault (healed when faults stop). */
  injected = false;
  /** Pushes it is to reject (a targeted fault). */
  rejectNext = 0;
  /** When its last answer is due: answers come in the order of the pushes. */
  answerAt = 0;
  /** Its connections to istiod so far. */
  stream = 0;
  readonly moments: Moment[] = [];
  #limits: string | undefined;
  #filters: readonly KubeObject[] | undefined;

  constructor(
    readonly uid: string,
    public pod: MeshPod,
    public object: KubeObject,
    readonly createdAt: number,
  ) {}

  /** `pod.namespace`, istiod's id. */
  get id(): string {
    return proxyId(this.pod);
  }

  /** `namespace/name` of its Pod. */
  get key(): string {
    return `${this.pod.namespace}/${this.pod.name}`;
  }

  /** The patch context it applies. */
  get context(): ProxyContext {
    return contextOf(this.pod.router ? "router" : "sidecar");
  }

  /** Where it stands now. */
  get standing(): ProxyStanding {
    if (!this.connected) return "notConnected";
    if (this.lastError !== "") return "rejected";
    return this.sent && this.sent.nonce !== this.acked ? "pending" : "accepted";
  }

  /**
   * The limits (JSON of heldLimitsOf's) of the config it holds now, connected or not (Envoy keeps
   * its config while it reconnects); undefined before it accepted any.
   */
  get limits(): string | undefined {
    return this.#limits;
  }

  /**
   * Records what it holds from `at` on: the limits, and the filters of the push that carried them
   * (`held` undefined: as before).
   */
  note(
    at: number,
    held: { limits: string; filters: readonly KubeObject[] } | undefined,
    rejecting: boolean,
  ): void {
    this.#limits = held?.limits ?? this.#limits;
    this.#filters = held?.filters ?? this.#filters;
    this.moments.push({ at, limits: this.#limits, filters: this.#filters, rejecting });
  }

  /**
   * True when, at some instant of [from, to], it held the EnvoyFilter `key` (`namespace/name`)
   * owned by the RateLimit of uid `owner` as rendered from `generation` (its annotation).
   */
  heldGenerationWithin(
    key: string,
    owner: string | undefined,
    generation: string,
    from: number,
    to: number,
  ): boolean {
    return this.#within(
      from,
      to,
      (m) =>
        m.filters?.some((f) =>
          `${f.metadata.namespace}/${f.metadata.name}` === key &&
          f.metadata.ownerReferences?.some((o) => o.kind === "RateLimit" && o.uid === owner) ===
            true &&
          f.metadata.annotations?.[GENERATION_ANNOTATION] === generation
        ) === true,
    );
  }

  /** True when it held `limits` at some instant of [from, to]. */
  heldWithin(limits: string, from: number, to: number): boolean {
    return this.#within(from, to, (m) => m.limits === limits);
  }

  /** True when it was rejecting (its last answer a NACK) at some instant of [from, to]. */
  rejectingWithin(from: number, to: number): boolean {
    return this.#within(from, to, (m) => m.rejecting);
  }

  #within(from: number, to: number, ok: (m: Moment) => boolean): boolean {
    for (let i = this.moments.length - 1; i >= 0; i--) {
      const m = this.moments[i];
      if (m.at > to) continue;
      if (ok(m)) return true;
      if (m.at <= from) return false;
    }
    return false;
  }
}

/** What a Pod's proxy is told to do by a targeted fault. */
interface ProxyRule {
  target: Target;
  kind: "holdBack" | "reject";
  count: number;
}

/** Settings of the simulated istiod. */
export interface SimIstiodOptions {
  cluster: SimCluster;
  prng: Prng;
  envoy: EnvoyBehaviour;
  rootNamespace: string;
  trace: Trace;
  /** Random faults fire only while this holds (the safety phase). */
  active: () => boolean;
  /** Chance that a push is rejected by a proxy; chance that a new proxy never connects. */
  rates: () => { proxyRejects: number; proxyNeverConnects: number };
}

const LISTENER: Record<ProxyContext, string> = {
  SIDECAR_INBOUND: "virtualInbound",
  GATEWAY: "0.0.0.0_8080",
};

/** The forwarding routes' actions: where a request of the model goes. */
const FORWARDING = new Set(["ANY", "ROUTE"]);

/** True when a Pod's name is `target.name` or one of its Deployment's Pods (`name-...`). */
function podMatches(t: Target, pod: MeshPod): boolean {
  return (t.namespace === undefined || t.namespace === pod.namespace) &&
    (t.name === undefined || pod.name === t.name || pod.name.startsWith(`${t.name}-`));
}

/** The simulated istiod and its proxies. */
export class SimIstiod {
  readonly #o: SimIstiodOptions;
  readonly #proxies = new Map<string, SimProxy>();
  readonly #rules: ProxyRule[] = [];
  #pushing = false;
  #version = 0;
  #outageUntil = -Infinity;
  #outageHeld = false;
  /** Incremented at every answer, connection and disconnection: the mesh changed. */
  changes = 0;
  /** Told when the EnvoyFilters change (the operator's poller looks at its cache's list). */
  onFilters?: () => void;

  constructor(opts: SimIstiodOptions) {
    this.#o = opts;
    opts.cluster.store.subscribe((c) => this.#observe(c));
  }

  /** The proxies, by Pod uid, of the Pods that exist. */
  get proxies(): readonly SimProxy[] {
    return [...this.#proxies.values()];
  }

  /** The proxy of Pod `namespace/name`, if it has one. */
  proxyOf(namespace: string, name: string): SimProxy | undefined {
    return this.proxies.find((p) => p.pod.namespace === namespace && p.pod.name === name);
  }

  /** Why the operator cannot ask istiod now; undefined when it can. */
  outage(): IstiodOutage | undefined {
    const now = this.#o.cluster.clock.now();
    if (!this.#outageHeld && now >= this.#outageUntil) return undefined;
    return {
      reason: "Unreachable",
      message: "dial tcp 10.96.0.15:15014: connect: connection refused",
    };
  }

  /** Makes istiod unreachable for the operator until `until` (virtual ms), or until healed. */
  unreachable(until: number | undefined): void {
    if (until === undefined) this.#outageHeld = true;
    else this.#outageUntil = Math.max(this.#outageUntil, until);
  }

  /** Ends an outage now. */
  reachable(): void {
    this.#outageHeld = false;
    this.#outageUntil = -Infinity;
  }

  /**
   * What `/debug/syncz` lists: every connected proxy, with its listeners and routes at the same
   * nonces (a push carries both), in the order of their ids.
   */
  syncz(): ProxySync[] {
    const istio = istioOf(this.#o.envoy)[0]?.replace(/^Istio /, "");
    return this.proxies.filter((p) => p.connected).map((p): ProxySync => {
      const sync = {
        sent: p.sent?.nonce ?? "",
        acked: p.acked,
        sentTime: p.sentTime,
        lastError: p.lastError,
      };
      return {
        id: p.id,
        type: p.pod.router ? "router" : "sidecar",
        istioVersion: istio ? `${istio}.0` : "",
        listeners: { ...sync },
        routes: { ...sync },
      };
    }).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /**
   * istiod's dump of a connected proxy's listeners and routes, from its push context (a push still
   * queued included); undefined when it is not connected.
   */
  dump(id: string): unknown {
    const p = this.proxies.find((x) => x.id === id && x.connected);
    return p && this.#dumpOf((p.queued ?? p.sent)?.filters ?? [], p);
  }

  /** The proxies a filter reaches now, of active Pods, in the context its patches apply to. */
  reachedBy(filter: KubeObject): SimProxy[] {
    const read = readEnvoyFilterOnce(filter, this.#o.envoy);
    if (!read.ok) return [];
    return this.proxies.filter((p) =>
      isActivePod(p.object) && this.#reaches(filter, p.pod) &&
      read.value.contexts[p.context] !== undefined
    );
  }

  /** The limits (heldLimitsOf's, JSON) a proxy holding only `filter` would hold. */
  limitsOf(filter: KubeObject, p: SimProxy): string {
    return this.#limitsOf([filter], p);
  }

  /** Keeps matching proxies from connecting (disconnecting those connected) until cleared. */
  holdBack(target: Target): void {
    this.#rules.push({ target, kind: "holdBack", count: 0 });
    const now = this.#o.cluster.clock.now();
    for (const p of this.proxies) {
      if (!podMatches(target, p.pod)) continue;
      p.heldBack = true;
      this.#disconnect(p, now);
    }
  }

  /** Matching proxies reject the next `count` pushes each. */
  rejectPushes(target: Target, count: number): void {
    for (const p of this.proxies) if (podMatches(target, p.pod)) p.rejectNext += count;
    this.#rules.push({ target, kind: "reject", count });
  }

  /** Ends the targeted faults on proxies matching `target` (all when undefined). */
  clear(target?: Target): void {
    const hit = (t: Target) =>
      target === undefined ||
      (t.namespace === target.namespace && t.name === target.name);
    for (let i = this.#rules.length - 1; i >= 0; i--) {
      if (hit(this.#rules[i].target)) this.#rules.splice(i, 1);
    }
    for (const p of this.proxies) {
      if (target !== undefined && !podMatches(target, p.pod)) continue;
      p.rejectNext = 0;
      if (p.heldBack && !this.#heldBackByRule(p.pod)) {
        p.heldBack = false;
        this.#connectLater(p);
      }
    }
  }

  /**
   * Faults stop: istiod is reachable, every proxy kept back connects, and a proxy whose last answer
   * was an injected NACK reconnects (Envoy asks for everything again on a new stream).
   */
  heal(): void {
    this.reachable();
    this.clear();
    const now = this.#o.cluster.clock.now();
    for (const p of this.proxies) {
      if (p.heldBack) {
        p.heldBack = false;
        this.#connectLater(p);
      } else if (p.connected && p.injected) {
        this.#disconnect(p, now);
        this.#connectLater(p);
      }
    }
  }

  #observe(c: Change): void {
    const kind = c.rtype.kind;
    if (kind === "EnvoyFilter") {
      this.#schedulePush();
      this.onFilters?.();
    } else if (kind === "Pod") this.#onPod(c);
  }

  #onPod(c: Change): void {
    const uid = c.object.metadata.uid ?? "";
    const now = this.#o.cluster.clock.now();
    const known = this.#proxies.get(uid);
    if (c.type === "DELETED" || meshProxyOf(c.object) === undefined) {
      if (known) {
        this.#disconnect(known, now);
        this.#proxies.delete(uid);
      }
      return;
    }
    const pod = meshPodOf(c.object);
    if (known) {
      known.pod = pod;
      known.object = c.object;
      this.#schedulePush();
      return;
    }
    const p = new SimProxy(uid, pod, c.object, now);
    this.#proxies.set(uid, p);
    p.rejectNext = this.#rules.filter((r) => r.kind === "reject" && podMatches(r.target, pod))
      .reduce((n, r) => n + r.count, 0);
    const o = this.#o;
    p.heldBack = this.#heldBackByRule(pod) ||
      (o.active() && o.prng.chance(o.rates().proxyNeverConnects));
    if (p.heldBack) this.#phase(`the proxy of Pod ${p.key} does not connect`);
    this.#connectLater(p);
  }

  #heldBackByRule(pod: MeshPod): boolean {
    return this.#rules.some((r) => r.kind === "holdBack" && podMatches(r.target, pod));
  }

  /** Connects `p` after the time its agent takes to start (unless kept back by then). */
  #connectLater(p: SimProxy): void {
    const clock = this.#o.cluster.clock;
    clock.schedule(this.#o.prng.logUniform(200, 3_000), () => {
      if (this.#proxies.get(p.uid) !== p || p.heldBack || p.connected) return;
      p.connected = true;
      p.stream++;
      p.sent = undefined;
      p.queued = undefined;
      p.acked = "";
      p.lastError = "";
      p.injected = false;
      p.answerAt = clock.now();
      this.changes++;
      this.#o.trace.line(`M ${clock.now() - SIM_EPOCH} connect ${p.id}`);
      p.note(clock.now(), undefined, false);
      this.#pushTo(p);
    });
  }

  #disconnect(p: SimProxy, now: number): void {
    if (!p.connected) return;
    p.connected = false;
    this.changes++;
    this.#o.trace.line(`M ${now - SIM_EPOCH} disconnect ${p.id}`);
    p.note(now, undefined, false);
  }

  #schedulePush(): void {
    if (this.#pushing) return;
    this.#pushing = true;
    // istiod debounces config changes (PILOT_DEBOUNCE_AFTER 100 ms, up to PILOT_DEBOUNCE_MAX 10 s).
    this.#o.cluster.clock.schedule(this.#o.prng.logUniform(100, 2_000), () => {
      this.#pushing = false;
      for (const p of this.proxies) if (p.connected) this.#pushTo(p);
    });
  }

  #reaches(filter: KubeObject, pod: MeshPod): boolean {
    const selector = (filter.spec as { workloadSelector?: { labels?: Record<string, string> } })
      ?.workloadSelector?.labels;
    return reaches(filter.metadata.namespace ?? "", pod.namespace, this.#o.rootNamespace) &&
      selects(selector ?? {}, pod.labels);
  }

  /**
   * Moves `p`'s push context to the filters reaching it now (unless it holds exactly those) and
   * queues their send: istiod's dump already shows them while the send waits in its push queue
   * (1–300 ms), so a dump may be ahead of the nonces syncz shows (what `confirmed` is for).
   */
  #pushTo(p: SimProxy): void {
    const store = this.#o.cluster.store;
    const filters = store.types.serves(RESOURCES.EnvoyFilter)
      ? store.objects(RESOURCES.EnvoyFilter).filter((f) => this.#reaches(f, p.pod))
      : [];
    // By uid too: a filter deleted and made again starts at generation 1 again.
    const key = JSON.stringify(
      filters.map((f) =>
        `${f.metadata.namespace}/${f.metadata.name}/${f.metadata.uid}@${f.metadata.generation}`
      ),
    );
    if ((p.queued ?? p.sent)?.key === key) return;
    const queued = p.queued !== undefined;
    p.queued = { filters, key };
    if (queued) return; // the queued send takes the newest context
    const stream = p.stream;
    this.#o.cluster.clock.schedule(this.#o.prng.logUniform(1, 300), () => {
      // A send queued on an earlier connection is void: the new one queued its own.
      if (this.#proxies.get(p.uid) !== p || !p.connected || p.stream !== stream) return;
      const next = p.queued;
      p.queued = undefined;
      if (next) this.#send(p, next);
    });
  }

  /** Sends `p` a push of `next` now; its answer comes in order, after Envoy applied (or refused) it. */
  #send(p: SimProxy, next: { filters: readonly KubeObject[]; key: string }): void {
    const clock = this.#o.cluster.clock;
    const now = clock.now();
    const version = ++this.#version;
    const push: Push = { nonce: this.#nonce(now, version), stream: p.stream, ...next };
    p.sent = push;
    p.sentTime = new Date(now).toISOString();
    p.answerAt = Math.max(p.answerAt, now + this.#o.prng.logUniform(5, 500));
    clock.schedule(p.answerAt - now, () => this.#answer(p, push));
  }

  /** istiod's nonce: the push version (`RFC 3339/N`) and a UUID. */
  #nonce(now: number, version: number): string {
    const r = this.#o.prng;
    const hex = (n: number) => Array.from({ length: n }, () => r.int(0, 15).toString(16)).join("");
    const time = new Date(now).toISOString().replace(/\.\d+Z$/, "Z");
    return `${time}/${version}${hex(8)}-${hex(4)}-${hex(4)}-${hex(4)}-${hex(12)}`;
  }

  #answer(p: SimProxy, push: Push): void {
    if (this.#proxies.get(p.uid) !== p || !p.connected || push.stream !== p.stream) return;
    const o = this.#o;
    const now = o.cluster.clock.now();
    const mesh = new Mesh({ envoy: o.envoy, rootNamespace: o.rootNamespace });
    mesh.sync(push.filters, [p.pod], now);
    const refused = mesh.rejections()[0];
    let error = "";
    p.injected = false;
    if (p.rejectNext > 0 || (o.active() && o.prng.chance(o.rates().proxyRejects))) {
      p.rejectNext = Math.max(0, p.rejectNext - 1);
      p.injected = true;
      error = `${
        LISTENER[p.context]
      }: the proxy refused the config (an injected fault: Envoy's worker could not apply it)`;
    } else if (refused) {
      error = `${LISTENER[p.context]}: EnvoyFilter ${refused.filter}: ${
        refused.errors.map((e) => `${e.path}: ${e.message}`).join("; ")
      }`;
    }
    this.changes++;
    if (error !== "") {
      p.lastError = error;
      o.trace.line(`M ${now - SIM_EPOCH} nack ${p.id} ${push.nonce.slice(0, 30)}`);
      p.note(now, undefined, true);
      return;
    }
    p.acked = push.nonce;
    p.lastError = "";
    o.trace.line(`M ${now - SIM_EPOCH} ack ${p.id} ${push.nonce.slice(0, 30)}`);
    p.note(now, { limits: this.#limitsOf(push.filters, p), filters: push.filters }, false);
  }

  #limitsOf(filters: readonly KubeObject[], p: SimProxy): string {
    const held = heldLimitsOf(this.#dumpOf(filters, p), LOCAL_RATELIMIT_FILTER, STAT_PREFIX);
    return JSON.stringify(held.limits);
  }

  /**
   * A dump of the routes of a proxy holding `filters`: one forwarding route whose per-filter
   * configs and metadata are those the filters merge into it, in Istio's order (the model's: the later merge of
   * one key wins), unwrapped from their TypedStruct as istiod sends them.
   */
  #dumpOf(filters: readonly KubeObject[], p: SimProxy): unknown {
    const mesh = new Mesh({ envoy: this.#o.envoy, rootNamespace: this.#o.rootNamespace });
    mesh.sync(filters, [p.pod], 0);
    const order = mesh.proxy(p.pod.namespace, p.pod.name)?.config.sources ?? [];
    const perFilter: Record<string, unknown> = {};
    const filterMetadata: Record<string, unknown> = {};
    for (const source of order) {
      const f = filters.find((x) => `${x.metadata.namespace}/${x.metadata.name}` === source);
      const read = f && readEnvoyFilterOnce(f, this.#o.envoy);
      if (!read?.ok) continue;
      for (const patch of read.value.contexts[p.context]?.routePatches ?? []) {
        if (!FORWARDING.has(patch.action)) continue;
        const configs = patch.value.typed_per_filter_config as Record<string, unknown> | undefined;
        for (const [name, config] of Object.entries(configs ?? {})) {
          const typed = unwrapTyped(config, name);
          if (typed.ok) perFilter[name] = typed.value;
        }
        // Route metadata (the operator's digest): a proto map, so the later merge of a key wins.
        const metadata = patch.value.metadata as { filter_metadata?: Record<string, unknown> };
        Object.assign(filterMetadata, metadata?.filter_metadata);
      }
    }
    const route = {
      ...(Object.keys(filterMetadata).length > 0 ? { metadata: { filterMetadata } } : {}),
      typedPerFilterConfig: perFilter,
    };
    return {
      configs: [{
        dynamicRouteConfigs: [{ routeConfig: { virtualHosts: [{ routes: [route] }] } }],
      }],
    };
  }

  #phase(detail: string): void {
    this.#o.trace.phase(this.#o.cluster.clock.now(), detail);
  }
}
