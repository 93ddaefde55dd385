/**
 * The simulated cluster: the API server (store, lists, watches, the aggregator's APIService
 * checks), the built-in controllers (Deployments and Pods, garbage collection, CRD and namespace
 * lifecycle), the write log, and
 * clients for the processes that talk to it. Everything runs on one SimClock and draws chance from
 * forks of one Prng.
 */
import type { ClockView, SimClock } from "../clock.ts";
import type { Prng } from "../prng.ts";
import { bootstrap } from "./bootstrap.ts";
import {
  type FaultSource,
  type Latency,
  type OpenWatch,
  type RequestListener,
  SimClient,
} from "./client.ts";
import { type DeploymentBehaviour, DeploymentController } from "./deployments.ts";
import { type AggregatorBehaviour, AggregatorController } from "./aggregator.ts";
import { type ClusterDnsBehaviour, SimClusterDns } from "./dns.ts";
import { BackgroundControllers } from "./gc.ts";
import { Lister } from "./list.ts";
import { Store } from "./store.ts";
import { WriteLog } from "./writelog.ts";

export { SimClient } from "./client.ts";
export type {
  FaultSource,
  OpenWatch,
  RequestFault,
  RequestListener,
  RequestVerb,
  WatchFault,
} from "./client.ts";
export type { DeploymentBehaviour } from "./deployments.ts";
export type { AggregatorBehaviour } from "./aggregator.ts";
export type { ClusterDnsBehaviour } from "./dns.ts";
export type { Change, ChangeType, WriteVerb } from "./history.ts";
export { type Actor, CRD_CLEANUP_FINALIZER, Store } from "./store.ts";
export { isOperator, WriteLog, type WriteRecord } from "./writelog.ts";
export { GATEWAY_NAME, INITIAL_NAMESPACES, MESH_NAMESPACE } from "./bootstrap.ts";

/** Options of a simulated cluster. */
export interface SimClusterOptions {
  clock: SimClock;
  prng: Prng;
  /** Injected API and watch faults; none when absent. */
  faults?: FaultSource;
  /** Pod readiness and ReplicaFailure decisions; defaults draw a 0.5–5 s readiness delay. */
  deployments?: Partial<DeploymentBehaviour>;
  /** Whether the aggregator's discovery checks fail; default they pass once a Pod is ready. */
  aggregator?: Partial<AggregatorBehaviour>;
  /** Whether cluster DNS answers; default it always does, in 1–20 ms. */
  dns?: Partial<ClusterDnsBehaviour>;
  /** Events retained per type before a watch from an older version gets 410. Default 500. */
  historySize?: number;
  /** Skip creating the initial namespaces, CRDs and mesh (tests of the bare API server). */
  empty?: boolean;
}

/** An in-memory Kubernetes cluster on virtual time. */
export class SimCluster {
  readonly store: Store;
  readonly lister: Lister;
  readonly log = new WriteLog();
  /** Watches open now, by any client. */
  readonly watches = new Set<OpenWatch>();
  readonly deployments: DeploymentController;
  /** The aggregator: APIServices' Available condition. */
  readonly aggregator: AggregatorController;
  /** Cluster DNS: Service names as a Pod's resolver gets them. */
  readonly dns: SimClusterDns;
  readonly background: BackgroundControllers;
  readonly clock: SimClock;
  readonly prng: Prng;
  faults?: FaultSource;
  /** Told of every request any client sends, when it sends it (the invariant checker listens). */
  onRequest?: RequestListener;

  constructor(opts: SimClusterOptions) {
    this.clock = opts.clock;
    this.prng = opts.prng;
    this.faults = opts.faults;
    this.store = new Store(() => this.clock.now(), opts.prng.fork("names"), opts.historySize);
    this.lister = new Lister(this.store);
    const pods = opts.prng.fork("pods");
    const control = opts.prng.fork("control-plane");
    this.deployments = new DeploymentController(this.store, this.clock, {
      readyDelayMs: () => pods.logUniform(500, 5_000),
      createFailure: () => undefined,
      reactionMs: () => control.logUniform(5, 100),
      ...opts.deployments,
    });
    // Its own stream, so that runs without an APIService draw as before.
    const aggregator = opts.prng.fork("aggregator");
    this.aggregator = new AggregatorController(this.store, this.clock, {
      discoveryError: () => undefined,
      reactionMs: () => aggregator.logUniform(5, 200),
      ...opts.aggregator,
    });
    // Its own stream too, so that runs asking no names draw as before.
    const dns = opts.prng.fork("dns");
    this.dns = new SimClusterDns(this.store, {
      down: () => false,
      answerMs: () => dns.logUniform(1, 20),
      ...opts.dns,
    });
    this.background = new BackgroundControllers(
      this.store,
      this.clock,
      () => control.logUniform(5, 200),
    );
    if (!opts.empty) bootstrap(this.store);
  }

  /**
   * A client for one process. Its requests are subject to this cluster's faults unless `faultFree`;
   * its latency is drawn from its own stream (forked by actor name).
   */
  client(
    actor: string,
    opts: { manager?: string; faultFree?: boolean; latency?: Latency; clock?: ClockView } = {},
  ): SimClient {
    const server = {
      store: this.store,
      lister: this.lister,
      log: this.log,
      faults: opts.faultFree ? undefined : this,
      watches: this.watches,
      onRequest:
        ((actor, verb, type, namespace, name) =>
          this.onRequest?.(actor, verb, type, namespace, name)) as RequestListener,
    };
    return new SimClient(
      server,
      { name: actor, manager: opts.manager ?? actor },
      opts.clock ?? this.clock.view(),
      this.prng.fork(`client/${actor}`),
      opts.latency,
    );
  }

  /** FaultSource: forwards to the current fault injector (it may be swapped between phases). */
  request(...args: Parameters<FaultSource["request"]>): ReturnType<FaultSource["request"]> {
    return this.faults?.request(...args);
  }

  /** FaultSource: forwards to the current fault injector. */
  watch(...args: Parameters<FaultSource["watch"]>): ReturnType<FaultSource["watch"]> {
    return this.faults?.watch(...args);
  }

  /** FaultSource: how this run reports too-old watch versions. */
  goneAs(): "event" | "throw" {
    return this.faults?.goneAs() ?? "event";
  }
}
