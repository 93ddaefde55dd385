/**
 * The operator as processes in the simulated cluster: each replica is the real runtime (`Manager`)
 * with the real controllers, on its own view of the virtual clock and its own API client. A crash aborts the
 * Manager and freezes the process (its timers and requests never complete, as in a killed
 * container); a restart starts a fresh Manager with a new identity and empty caches, which must
 * win the Lease before it writes.
 */
import { DEFAULT_IMAGES } from "../src/reconcile/images.ts";
import { allControllersFor } from "../src/controllers/registry.ts";
import { DEFAULT_MESH } from "../src/dataplane/mod.ts";
import { FIELD_MANAGER } from "../src/reconcile/labels.ts";
import {
  type ControllerSpec,
  LocalSource,
  type Logger,
  Manager,
  nullLogger,
  preloadControllers,
} from "../src/runtime/mod.ts";
import { rateLimitsOfPod } from "../src/controllers/ratelimit.ts";
import { RESOURCES } from "../src/api/resources.ts";
import { PROXY_STATUS } from "../src/api/istiod.ts";
import { ENGINE_STATUS } from "../src/api/engine_status.ts";
import { DNS_LOOKUP } from "../src/api/cluster_dns.ts";
import { ClusterDnsProbe, kedaDnsTargets } from "../src/controllers/cluster_dns.ts";
import { EngineStatusFeed, type SimEngine } from "./engine.ts";
import type { SimClient, SimCluster } from "./cluster/mod.ts";
import type { SimIstiod } from "./istiod.ts";
import { ProxyStatusFeed } from "./istiod_feed.ts";
import type { Prng } from "./prng.ts";

/**
 * The operator's controllers for the simulated mesh, whose root namespace is mesh-system, asking
 * istiod about the proxies (as with `--istiod-url`) and reading the global rate limit engine back
 * (as with `--global-redis-secret`): the RateLimit's Accepted condition comes from the simulated
 * istiod, GlobalEnforced from the simulated engine (sim/engine.ts); and looking up the name KEDA's
 * metrics server dials, as an operator in a Pod does, in the simulated cluster DNS.
 */
export const SIM_CONTROLLERS = allControllersFor({
  meshRootNamespace: DEFAULT_MESH.rootNamespace,
  proxyStatus: true,
  engineStatus: true,
  clusterDns: true,
});

/** Where the operator runs and the name of its Lease. */
export const OPERATOR_NAMESPACE = "platform-system";
/** Name of the leader-election Lease. */
export const LEASE_NAME = "platform-operator";

/** Options of the simulated operator. */
export interface OperatorOptions {
  cluster: SimCluster;
  prng: Prng;
  controllers?: readonly ControllerSpec[];
  /** Run leader election on a Lease (default true, as deployed). */
  leaderElection?: boolean;
  /** Replicas the operator Deployment keeps running (default 1); all but the leader stand by. */
  replicas?: number;
  log?: Logger;
  /** The istiod each replica asks about the proxies (its own poller, as each operator Pod has). */
  istiod?: SimIstiod;
  /** The global rate limit engine each replica reads back (its own poller). */
  engine?: SimEngine;
  /** Called when a Manager's `start()` rejects: a bug in the runtime. */
  onError?: (err: unknown) => void;
  /** Called when a replica stops leading, with the elector's reason (a lost lead is a disturbance). */
  onLeadLost?: (identity: string, reason: string) => void;
}

interface Replica {
  identity: string;
  manager: Manager;
  client: SimClient;
  feed?: ProxyStatusFeed;
  engineFeed?: EngineStatusFeed;
  /** Stops its cluster DNS lookups. */
  dns: AbortController;
}

/**
 * One operator Deployment: `replicas` Pods that campaign for one Lease; each can crash, and a new
 * Pod takes its place.
 */
export class OperatorProcess {
  #replicas: Replica[] = [];
  #started = 0;
  /** Identities of every replica started, in order. */
  readonly identities: string[] = [];

  constructor(readonly opts: OperatorOptions) {}

  /** Replicas the Deployment wants running. */
  get desired(): number {
    return Math.max(1, this.opts.replicas ?? 1);
  }

  /** The leading replica's Manager, else the oldest running one's; undefined when none runs. */
  get manager(): Manager | undefined {
    return (this.#replicas.find((r) => r.manager.status.leading) ?? this.#replicas[0])?.manager;
  }

  /** Identities of the running replicas, oldest first. */
  get running(): string[] {
    return this.#replicas.map((r) => r.identity);
  }

  /** How many replicas were started (initial ones and restarts). */
  get starts(): number {
    return this.#started;
  }

  /**
   * Loads what the controllers load before their first reconcile (the modules' CRDs), before the
   * virtual clock starts: a real import pending while virtual time runs would end at a different
   * virtual moment on every run, and a seed would not replay.
   */
  async preload(): Promise<void> {
    await preloadControllers(this.opts.controllers ?? SIM_CONTROLLERS);
  }

  /** Starts replicas (new Pods: new identities, empty caches) until `desired` run. */
  start(): void {
    if (this.#replicas.length >= this.desired) throw new Error("operator already running");
    this.fill();
  }

  /** Starts replicas until `desired` run (the Deployment replacing crashed Pods); returns them. */
  fill(): string[] {
    const started: string[] = [];
    while (this.#replicas.length < this.desired) started.push(this.#startOne());
    return started;
  }

  #startOne(): string {
    const n = this.#started++;
    const identity = `platform-operator-${n}`;
    const clock = this.opts.cluster.clock.view();
    const client = this.opts.cluster.client(`operator/${identity}`, {
      manager: FIELD_MANAGER,
      clock,
    });
    const source = this.opts.istiod && new LocalSource(PROXY_STATUS);
    const engineSource = this.opts.engine && new LocalSource(ENGINE_STATUS);
    const lookups = new LocalSource(DNS_LOOKUP);
    const manager = new Manager({
      cluster: client,
      localSources: [
        ...(source ? [source] : []),
        ...(engineSource ? [engineSource] : []),
        lookups,
      ],
      clock,
      random: this.opts.prng.fork(`replica/${n}`),
      log: this.opts.log ?? nullLogger,
      controllers: [...(this.opts.controllers ?? SIM_CONTROLLERS)],
      images: DEFAULT_IMAGES,
      identity,
      leaderElection: this.opts.leaderElection === false
        ? false
        : { namespace: OPERATOR_NAMESPACE, name: LEASE_NAME },
      onStoppedLeading: (reason) => this.opts.onLeadLost?.(identity, reason),
    });
    const istiod = this.opts.istiod;
    const root = DEFAULT_MESH.rootNamespace;
    // The operator's poller, as src/cli/run.ts sets it up: only the proxies of Pods a RateLimit
    // concerns are read in depth, and its cached EnvoyFilters are the token of a change.
    const feed = istiod && source && new ProxyStatusFeed({
      istiod,
      source,
      clock,
      namespace: OPERATOR_NAMESPACE,
      token: () => manager.cache.list(RESOURCES.EnvoyFilter),
      wants: ({ namespace, name }) => {
        const pod = manager.cache.get(RESOURCES.Pod, namespace, name);
        return pod !== undefined && rateLimitsOfPod(manager.cache, root, pod).length > 0;
      },
    });
    const engine = this.opts.engine;
    const engineFeed = engine && engineSource && new EngineStatusFeed(engine, engineSource, clock);
    // The operator's cluster DNS lookups, as src/cli/run.ts starts them in a Pod: the Pod's
    // resolver is the simulated cluster DNS, asked on this replica's clock.
    const dns = new AbortController();
    const probe = new ClusterDnsProbe({
      source: lookups,
      namespace: OPERATOR_NAMESPACE,
      targets: () => kedaDnsTargets(manager.cache),
      resolve: this.opts.cluster.dns.resolverFor(clock),
      server: "the operator Pod's resolver",
      clock,
      log: this.opts.log ?? nullLogger,
    });
    this.identities.push(identity);
    this.#replicas.push({ identity, manager, client, feed, engineFeed, dns });
    manager.start().catch((err) => this.opts.onError?.(err));
    void probe.run(dns.signal);
    feed?.start();
    // The engine is read once it runs (a RateLimit with spec.global exists).
    if (engine && engineFeed) engine.onStart(() => engineFeed.start());
    return identity;
  }

  /**
   * Kills one replica at once (`identity`, else the leader, else the oldest): no graceful
   * shutdown, nothing released, nothing completes. Returns its identity.
   */
  crash(identity?: string): string | undefined {
    const r = identity !== undefined
      ? this.#replicas.find((x) => x.identity === identity)
      : this.#replicas.find((x) => x.manager.status.leading) ?? this.#replicas[0];
    if (!r) return undefined;
    this.#replicas = this.#replicas.filter((x) => x !== r);
    r.manager.abort("crash");
    r.client.kill();
    r.feed?.stop();
    r.engineFeed?.stop();
    r.dns.abort();
    return r.identity;
  }

  /** The EnvoyFilters changed: each running replica's poller looks at its cache soon. */
  filtersChanged(): void {
    for (const r of this.#replicas) r.feed?.filtersChanged();
  }

  /** Graceful stop (SIGTERM) of every replica; resolves when their Managers have stopped. */
  async stop(): Promise<void> {
    const all = this.#replicas;
    this.#replicas = [];
    for (const r of all) {
      r.feed?.stop();
      r.engineFeed?.stop();
      r.dns.abort();
    }
    await Promise.all(all.map((r) => r.manager.stop("sim end")));
  }
}
