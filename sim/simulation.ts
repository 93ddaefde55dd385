/**
 * One simulated run: the cluster, the operator process, faults, invariants, the data-plane mesh,
 * istiod and its proxies, and the trace, all on one virtual clock and one seed. Scenarios and the seed sweep drive it; it knows
 * the phases every run goes through: warm-up (the mesh comes up), the run itself (faults active),
 * liveness (faults off; the operator must converge), and a quiet period (no operator writes while
 * nothing changes).
 */
import { RESOURCES } from "../src/api/resources.ts";
import {
  DEFAULT_BEHAVIOUR,
  DEFAULT_MESH,
  type EnvoyBehaviour,
  Mesh,
  meshPodOf,
  type MeshRequest,
  type MeshResponse,
} from "../src/dataplane/mod.ts";
import { DEFAULT_WATCH_IDLE_MS, type Logger } from "../src/runtime/mod.ts";
import type { KubeObject } from "../src/api/object.ts";
import { SIM_EPOCH, SimClock } from "./clock.ts";
import { Driver, settle } from "./driver.ts";
import { type Change, isOperator, type SimClient, SimCluster } from "./cluster/mod.ts";
import { type FaultConfig, FaultInjector } from "./faults.ts";
import { InvariantChecker } from "./invariants.ts";
import { SimIstiod } from "./istiod.ts";
import { StatusRecord } from "./status_record.ts";
import {
  LEASE_NAME,
  OPERATOR_NAMESPACE,
  type OperatorOptions,
  OperatorProcess,
} from "./operator.ts";
import { type OwnedDeletion, scheduleSwarm } from "./chaos.ts";
import { Prng } from "./prng.ts";
import { EscapedRejection, Unfinished, ViolationStop } from "./run_errors.ts";
import { offset, Trace } from "./trace.ts";
import { type EngineBreakage, SimEngine } from "./engine.ts";
import { GLOBAL_WINDOW, GlobalWindows } from "./global_windows.ts";

/** Virtual time before the epoch in which the initial world settles (gateway Pods ready). */
export const WARMUP_MS = 60_000;
/**
 * No operator write for this long counts as settled: longer than the watchdog of a silent watch,
 * since a watch stalled by a fault is pending work until the watchdog restarts it (seeds 240 and
 * 100055 wrote in the quiet period what such a watch brought 65 and 80 s after the last change).
 */
export const IDLE_MS = DEFAULT_WATCH_IDLE_MS + 10_000;
/** The longest a new Pod takes to become ready without a fault (the default delay's bound). */
export const POD_READY_MAX_MS = 5_000;
/** A quiet period: long enough to include the runtime's resync (10 min, jittered). */
export const QUIET_MS = 11 * 60_000;

/** Options of a run. */
export interface SimulationOptions {
  seed: number;
  faults: FaultConfig;
  log?: Logger;
  /** The Envoy of the mesh's proxies; default DEFAULT_ENVOY. */
  envoy?: EnvoyBehaviour;
  /**
   * The operator under test: its controllers (a mutation test wraps the real ones), leader
   * election, and replicas (default 1 + the fault mix's standbys).
   */
  operator?: Pick<OperatorOptions, "controllers" | "leaderElection" | "replicas">;
  /** Objects the user made before the operator starts (say, a copy carrying the operator's labels). */
  userObjects?: readonly KubeObject[];
  /** A broken rate limit engine (the mutation test's); default the engine as it counts. */
  engine?: EngineBreakage;
}

/** A run in progress. */
export class Simulation {
  readonly prng: Prng;
  readonly clock: SimClock;
  readonly driver: Driver;
  readonly cluster: SimCluster;
  readonly injector: FaultInjector;
  readonly operator: OperatorProcess;
  readonly checker: InvariantChecker;
  readonly mesh: Mesh;
  /** istiod and the mesh's proxies: what they hold, what the operator is told of them. */
  readonly istiod: SimIstiod;
  /** The global rate limit engine the proxies ask. */
  readonly engine: SimEngine;
  /** The global limits' windows, checked on every response. */
  readonly globalWindows = new GlobalWindows();
  readonly trace = new Trace();
  readonly user: SimClient;
  readonly #statuses = new StatusRecord();
  /** Every status each Serverless, Scaler and RateLimit had, by `Kind namespace/name`, in order. */
  readonly statusHistory = this.#statuses.history;
  /** The labels each of those objects had at each generation, by `uid/generation`. */
  readonly generationLabels = this.#statuses.generationLabels;
  /** Errors the runtime threw (a Manager's start() rejected). */
  readonly runtimeErrors: string[] = [];
  /** Promise rejections nobody handled while this run executed (`reportRun` collects them). */
  readonly escaped: unknown[] = [];
  /** Operator-created objects someone else deleted (the swarm's ownedDeletes), in order. */
  readonly ownedDeletions: OwnedDeletion[] = [];
  #lastOperatorActivity = 0;
  #meshDirty = true;

  constructor(readonly opts: SimulationOptions) {
    this.prng = new Prng(opts.seed);
    this.mesh = new Mesh({
      envoy: opts.envoy ?? DEFAULT_BEHAVIOUR,
      engine: { ask: (request, nowMs, timeoutMs) => this.engine.ask(request, nowMs, timeoutMs) },
    });
    this.clock = new SimClock(SIM_EPOCH - WARMUP_MS);
    const clock = this.clock;
    this.injector = new FaultInjector(opts.faults, this.prng.fork("faults"), () => clock.now());
    this.injector.active = false;
    const pods = this.prng.fork("pods");
    this.cluster = new SimCluster({
      clock,
      prng: this.prng.fork("cluster"),
      faults: this.injector,
      historySize: opts.faults.historySize,
      deployments: {
        createFailure: (d, creator) => this.injector.createFailure(d, creator),
        readyDelayMs: (d) =>
          this.injector.readyDelayMs(d) ?? pods.logUniform(500, POD_READY_MAX_MS),
      },
      aggregator: {
        discoveryError: (ns, name, url) => this.injector.discoveryError(ns, name, url),
      },
      dns: { down: () => this.injector.clusterDnsDown() },
    });
    this.injector.onTimedEnd = (at) =>
      clock.schedule(at - clock.now(), () => this.cluster.deployments.resyncAll());
    this.istiod = new SimIstiod({
      cluster: this.cluster,
      prng: this.prng.fork("istiod"),
      envoy: this.mesh.envoy,
      rootNamespace: DEFAULT_MESH.rootNamespace,
      trace: this.trace,
      active: () => this.injector.active,
      rates: () => opts.faults,
    });
    this.engine = new SimEngine({
      cluster: this.cluster,
      clock,
      prng: this.prng.fork("engine"),
      trace: this.trace,
      active: () => this.injector.active,
      ...(opts.engine ? { broken: opts.engine } : {}),
    });
    this.checker = new InvariantChecker(
      this.cluster,
      {
        namespace: OPERATOR_NAMESPACE,
        name: LEASE_NAME,
      },
      this.istiod,
      {
        dnsDownSince: () => this.injector.clusterDnsDownSince(),
        operatorSteadySince: (t) => this.operatorSteadySince(t),
      },
    );
    this.cluster.onRequest = (actor, verb, type, namespace, name) =>
      this.checker.checkRequest(actor, verb, type, namespace, name);
    this.driver = new Driver(clock, { onStep: () => this.#afterStep() });
    this.operator = new OperatorProcess({
      ...opts.operator,
      replicas: opts.operator?.replicas ?? 1 + opts.faults.standbys,
      cluster: this.cluster,
      prng: this.prng.fork("operator"),
      istiod: this.istiod,
      engine: this.engine,
      log: opts.log,
      onError: (err) =>
        this.runtimeErrors.push(err instanceof Error ? err.stack ?? err.message : String(err)),
      // Its own renewals failing (API faults) end a term as surely as an injected fault does.
      onLeadLost: (identity, reason) =>
        this.trace.phase(
          this.clock.now(),
          `lead lost: ${identity} stopped leading (${reason})`,
          true,
        ),
    });
    this.user = this.cluster.client("user", {
      manager: "kubectl",
      faultFree: true,
      latency: () => 1,
    });
    this.cluster.log.subscribe((r) => {
      this.trace.write(r);
      if (isOperator(r.actor) && r.kind !== "Lease") this.#lastOperatorActivity = r.at;
    });
    this.cluster.store.subscribe((c) => this.#observe(c));
    this.istiod.onFilters = () => this.operator.filtersChanged();
  }

  /**
   * True when the timeline shows no crash, restart, lease loss, lost lead, partition or clock jump
   * since virtual time `t`: the same replica led throughout, without a break.
   */
  operatorSteadySince(t: number): boolean {
    return !this.trace.disturbedSince(t);
  }

  /** Milliseconds since the epoch (scenario time). */
  get now(): number {
    return this.clock.now() - SIM_EPOCH;
  }

  /** Lets the initial world settle, then starts the operator at the epoch with faults active. */
  async boot(): Promise<void> {
    await this.operator.preload();
    await this.driver.runUntil(SIM_EPOCH);
    for (const obj of this.opts.userObjects ?? []) {
      const type = this.cluster.store.types.byKind(obj.apiVersion, obj.kind);
      if (!type) throw new Error(`userObjects: ${obj.apiVersion} ${obj.kind} is not served`);
      this.cluster.store.create(type, obj, { name: "user", manager: "kubectl" });
    }
    this.operator.start();
    this.injector.active = true;
  }

  /** Runs until scenario time `t` (ms since the epoch). */
  runUntil(t: number): Promise<void> {
    return this.driver.runUntil(SIM_EPOCH + t);
  }

  /**
   * Awaits `p` while driving virtual time (at most `limitMs`); throws Unfinished when `p` is still
   * pending then, saying what the clock still had to fire.
   */
  async drive<T>(p: Promise<T>, limitMs = 120_000): Promise<T> {
    let done = false;
    const settled = p.finally(() => (done = true));
    settled.catch(() => {});
    await this.driver.runUntilTrue(() => done, this.clock.now() + limitMs);
    if (!done) {
      const next = this.clock.nextAt();
      throw new Unfinished(
        `request did not finish within ${limitMs} ms of virtual time (${this.clock.pending} ` +
          `timer(s) pending${next === undefined ? "" : `, next at ${offset(next)}`})`,
      );
    }
    return await settled;
  }

  /** Throws the first promise rejection that escaped this run (after letting pending ones land). */
  async checkEscaped(): Promise<void> {
    await settle();
    this.#throwEscaped();
  }

  #throwEscaped(): void {
    if (this.escaped.length === 0) return;
    const reason = this.escaped[0];
    const err = new EscapedRejection(
      `unhandled promise rejection: ${reason instanceof Error ? reason.message : String(reason)}`,
    );
    if (reason instanceof Error && reason.stack) err.stack = `${err.name}: ${reason.stack}`;
    throw err;
  }

  /**
   * Crashes an operator replica now (`identity`, else the leader) and has the Deployment start a new
   * one after `restartAfterMs`.
   */
  crash(restartAfterMs: number, identity?: string, why?: string): void {
    const crashed = this.operator.crash(identity);
    if (crashed === undefined) return;
    this.trace.lifecycle(this.clock.now(), "crash", why ? `${crashed} ${why}` : crashed);
    this.clock.schedule(restartAfterMs, () => {
      // Liveness may have started the replacement already.
      for (const identity of this.operator.fill()) {
        this.trace.lifecycle(this.clock.now(), "restart", identity);
      }
    });
  }

  /**
   * Schedules the swarm's crashes and clock jumps, and its plan crashes, lost leases and deletions
   * of owned objects (chaos.ts), at random times before scenario time `until`.
   */
  scheduleSwarm(until: number): void {
    scheduleSwarm(this, until);
  }

  /**
   * Ends random faults: Deployments heal, istiod is reachable, every proxy connects and takes the
   * next push, the aggregator reaches every Service; the operator must now converge.
   */
  startLiveness(): void {
    this.injector.active = false;
    this.injector.clearDeployments();
    // Pods a fault made slow (up to 15 minutes) are ready within the default delay's bound.
    this.cluster.deployments.hasten(POD_READY_MAX_MS);
    this.istiod.heal();
    this.engine.heal();
    this.cluster.deployments.resyncAll();
    this.cluster.aggregator.resync();
    this.operator.fill();
    this.trace.phase(this.clock.now(), "liveness");
  }

  /** Runs until the operator made no write (leases aside) for IDLE_MS; false if not within `limitMs`. */
  settle(limitMs: number): Promise<boolean> {
    this.#lastOperatorActivity = Math.max(this.#lastOperatorActivity, this.clock.now());
    return this.driver.runUntilTrue(
      () => this.clock.now() - this.#lastOperatorActivity >= IDLE_MS,
      this.clock.now() + limitMs,
    );
  }

  /**
   * Runs quiet periods until one passes with no change made by anyone but the operator; returns the
   * operator's writes (leases aside) in that period: there must be none.
   */
  async quiet(periodMs = QUIET_MS, maxPeriods = 4): Promise<{ writes: string[]; quiet: boolean }> {
    for (let i = 0; i < maxPeriods; i++) {
      const mark = this.cluster.log.records.length;
      const meshMark = this.istiod.changes;
      const worldMark = this.cluster.store.worldChanges;
      await this.driver.runFor(periodMs);
      const records = this.cluster.log.records.slice(mark);
      // What istiod says of the proxies changing is a change the operator may report; so is one
      // the cluster's own controllers made (a Deployment becoming Available), which no write
      // request of the log shows.
      const external = this.istiod.changes !== meshMark ||
        this.cluster.store.worldChanges !== worldMark ||
        records.some((r) => !isOperator(r.actor) && r.outcome === "changed" && r.kind !== "Lease");
      if (external) continue;
      const writes = this.cluster.log.operatorWritesSince(mark).map((r) =>
        `${offset(r.at)} ${r.verb} ${r.kind} ${
          r.namespace ? `${r.namespace}/` : ""
        }${r.name} (${r.outcome})`
      );
      return { writes, quiet: true };
    }
    return { writes: [], quiet: false };
  }

  /** Sends a request into the mesh now; its global part is checked against the user's limits. */
  send(req: MeshRequest): MeshResponse {
    this.#syncMesh();
    const now = this.clock.now();
    const r = this.mesh.send(req, now);
    const broken = this.globalWindows.check(r, now);
    if (broken) {
      this.checker.violations.push({ at: now, invariant: GLOBAL_WINDOW, message: broken });
      throw new ViolationStop(`invariant ${GLOBAL_WINDOW} broken at ${offset(now)}: ${broken}`);
    }
    return r;
  }

  /** Operator writes so far (leases aside). */
  get operatorWrites(): number {
    return this.cluster.log.operatorWritesSince(0).length;
  }

  #afterStep(): void {
    this.#throwEscaped();
    this.checker.checkState();
    if (this.runtimeErrors.length > 0) {
      throw new ViolationStop(`runtime error: ${this.runtimeErrors[0]}`);
    }
    if (!this.checker.ok) {
      const v = this.checker.violations[0];
      throw new ViolationStop(`invariant ${v.invariant} broken at ${offset(v.at)}: ${v.message}`);
    }
  }

  #observe(c: Change): void {
    const kind = c.rtype.kind;
    if (kind === "EnvoyFilter" || kind === "Pod" || kind === "VirtualService") {
      this.#meshDirty = true;
      // The proxies take the new config at once: time 0 of their buckets is this write.
      this.#syncMesh();
    }
    if (kind === "EnvoyFilter") this.engine.filtersChanged();
    if (kind === "RateLimit" && c.object) {
      this.globalWindows.observe(c.object);
      this.engine.rateLimitSeen(c.object);
    }
    this.#statuses.observe(c, this.trace, this.clock.now());
  }

  #syncMesh(): void {
    if (!this.#meshDirty) return;
    this.#meshDirty = false;
    const store = this.cluster.store;
    const filters = store.types.serves(RESOURCES.EnvoyFilter)
      ? store.objects(RESOURCES.EnvoyFilter)
      : [];
    const vsType = store.types.byKind("networking.istio.io/v1", "VirtualService");
    const routes = vsType && store.types.serves(vsType) ? store.objects(vsType) : [];
    this.mesh.sync(
      [...filters, ...routes],
      store.objects(RESOURCES.Pod).map(meshPodOf),
      this.clock.now(),
    );
  }
}
