/**
 * The Manager wires the runtime together: watchers fill the caches, change events become keys in
 * one work queue a controller, the queue calls each controller's pure `reconcile`, and the runner
 * carries out the Plan. Leader election decides whether this replica writes; a standby keeps its
 * caches warm. It touches the world only through the `Cluster` port, the `Clock` and the `Random`,
 * so the simulator can run it on virtual time and replay a seed byte for byte.
 */
import { Cache, isCrdType, WatchSet } from "./cache/mod.ts";
import { EventRecorder } from "./events.ts";
import type { Cluster } from "./cluster.ts";
import type { KubeObject, ResourceType } from "../api/object.ts";
import type { CacheChange, CacheReader, ControllerSpec } from "./controller_spec.ts";
import type { ManagerStatus } from "./health.ts";
import { LeaderElector, type TermStart } from "./leader.ts";
import { listAfterFirstRead, mustRelist } from "./list_timing.ts";
import { Metrics } from "./metrics.ts";
import { instrumentCluster } from "./instrumented_cluster.ts";
import { withLocalTypes } from "./local_types.ts";
import { ControllerLoop, declaredWrites } from "./controller_loop.ts";
import { Runner } from "./runner.ts";
import { type ManagerOptions, operatorNamespace } from "./manager_options.ts";
import { Terms } from "./term.ts";

export {
  DEFAULT_NAMESPACE,
  type LeaderElectionOptions,
  type ManagerOptions,
  operatorNamespace,
} from "./manager_options.ts";

/** Longest wait for each shutdown step that depends on the API (elector, lease release, watches). */
const STOP_WAIT_MS = 5_000;

/** Longest wait on shutdown for queued Events to be written (they are best-effort). */
const EVENT_FLUSH_WAIT_MS = 2_000;

/** The operator runtime of one replica. */
export class Manager {
  readonly #o: ManagerOptions;
  readonly #cluster: Cluster;
  readonly #metrics: Metrics;
  readonly #cache = new Cache();
  readonly #watches: WatchSet;
  readonly #controllers: ControllerLoop[];
  /** Every controller's Events, written off the reconciles' path. */
  readonly #events: EventRecorder;
  readonly #watchStop = new AbortController();
  readonly #electorStop = new AbortController();
  readonly #solo = new AbortController();
  #elector: LeaderElector | undefined;
  /** How many reads of the Lease had been answered when the watches opened. */
  #listedAfterRead: number | undefined;
  #tasks: Promise<void>[] = [];
  #electorTask: Promise<void> = Promise.resolve();
  readonly #terms: Terms;
  #state: "new" | "running" | "stopping" | "stopped" = "new";
  #held: boolean;
  #resolveDone!: () => void;
  readonly #done = new Promise<void>((r) => this.#resolveDone = r);
  #listed!: () => void;
  /** Settles once the watches have sent their first lists, or the manager stopped before. */
  readonly listing: Promise<void> = new Promise<void>((r) => this.#listed = r);

  constructor(opts: ManagerOptions) {
    this.#o = opts;
    this.#held = opts.held ?? false;
    this.#metrics = opts.metrics ?? new Metrics();
    this.#cluster = withLocalTypes(
      instrumentCluster(opts.cluster, this.#metrics),
      opts.localSources ?? [],
    );
    this.#events = new EventRecorder({
      cluster: this.#cluster,
      clock: opts.clock,
      log: opts.log,
      identity: opts.identity,
      metrics: this.#metrics,
      // Reconciles at work (running or waiting): their writes go first.
      busy: () => {
        const term = this.#terms.current;
        return term !== undefined && term.queued + term.inFlight > 0;
      },
    });
    // Indexes first: the stores the watches fill must keep them from their first event.
    for (const spec of opts.controllers) {
      for (const ix of spec.indexes ?? []) this.#cache.addIndex(ix.type, ix.name, ix.keys);
    }
    this.#controllers = opts.controllers.map((spec) => this.#controller(spec));
    this.#terms = new Terms(
      this.#controllers,
      {
        clock: opts.clock,
        random: opts.random,
        metrics: this.#metrics,
        concurrency: opts.concurrency,
        resyncPeriodMs: opts.resyncPeriodMs,
        // Events wait while reconciles work: a queue run empty may let them go.
        onIdle: () => this.#events.wake(),
      },
      opts.log,
      () => this.#state === "running" && !this.#held,
      (ctl) => this.#watches.readyFor((type) => ctl.reads(type)),
    );
    this.#watches = new WatchSet({
      cluster: this.#cluster,
      clock: opts.clock,
      random: opts.random,
      log: opts.log,
      metrics: this.#metrics,
      cache: this.#cache,
      controllers: opts.controllers,
      namespace: operatorNamespace(opts),
      pageSize: opts.pageSize,
      timeoutSeconds: opts.watchTimeoutSeconds,
      idleMs: opts.watchIdleMs,
      quiet: () => this.#held,
      onChange: (type, change) => this.#dispatch(type, change),
      onLiveness: (type) => this.#livenessChanged(type),
      onListed: () => this.#terms.maybeBegin(),
      onScopesReady: (primary, keys) => this.#terms.current?.requeueKeys(primary, keys),
    });
  }

  #controller(spec: ControllerSpec): ControllerLoop {
    const log = this.#o.log.child({ controller: spec.name });
    const { clock, random, identity } = this.#o;
    const runner = new Runner({
      cluster: this.#cluster,
      cache: declaredWrites(this.#cache, spec),
      clock,
      random,
      log,
      metrics: this.#metrics,
      controller: spec.name,
      identity,
      events: this.#events,
      onWrite: (type, written, changes) => this.#onWrite(type, written, changes),
      ...(this.#o.leaderElection ? { writeBoundMs: () => this.#elector?.termLeftMs ?? 0 } : {}),
    });
    return new ControllerLoop({
      spec,
      cache: this.#cache,
      runner,
      clock,
      log,
      metrics: this.#metrics,
      images: this.#o.images,
      namespace: operatorNamespace(this.#o),
      scopesReady: (key) => this.#watches.scopesReady(spec.primary, key),
    });
  }

  /**
   * Starts watching, campaigning for the lease and (while leading and synced) reconciling.
   * Resolves when the manager has stopped (after `stop` or `abort`). Call once.
   */
  start(): Promise<void> {
    if (this.#state !== "new") throw new Error("Manager.start: already started");
    this.#state = "running";
    this.#o.log.info("starting", {
      identity: this.#o.identity,
      controllers: this.#o.controllers.map((c) => c.name).join(","),
      leaderElection: this.#o.leaderElection ? "on" : "off",
    });
    const le = this.#o.leaderElection;
    if (le) {
      this.#elector = new LeaderElector({
        cluster: this.#cluster,
        clock: this.#o.clock,
        random: this.#o.random,
        log: this.#o.log,
        metrics: this.#metrics,
        identity: this.#o.identity,
        ...le,
        onStartedLeading: (signal, term) => this.#onLeading(signal, term),
        onStoppedLeading: (reason) => {
          this.#o.onStoppedLeading?.(reason);
          this.#terms.unlead();
        },
      });
      this.#electorTask = this.#elector.run(this.#electorStop.signal);
      listAfterFirstRead(this.#elector, this.#o.clock, (afterRead) => {
        this.#listedAfterRead = afterRead;
        this.#openWatches();
      });
    } else {
      this.#openWatches();
      this.#metrics.leader.set({}, 1);
      this.#onLeading(this.#solo.signal, { takeover: false, read: 0 });
    }
    return this.#done;
  }

  /** Lets a manager started `held` reconcile (once leading and synced) and report ready. */
  release(): void {
    if (!this.#held) return;
    this.#held = false;
    this.#terms.maybeBegin();
  }

  /** Opens the watches (called once by start; not after a stop has begun). */
  #openWatches(): void {
    if (this.#state === "running") this.#tasks.push(...this.#watches.run(this.#watchStop.signal));
    this.#listed();
  }

  /**
   * Graceful stop (SIGTERM): take no new work, let in-flight reconciles finish and their Events be
   * written (for a bounded time), release the lease
   * so a standby takes over at once, stop the watches. Resolves when done; `start()` resolves too.
   */
  async stop(reason = "stop requested"): Promise<void> {
    if (this.#state !== "running") {
      if (this.#state === "new") this.#finish();
      return this.#done;
    }
    this.#state = "stopping";
    this.#o.log.info("stopping: finishing in-flight reconciles", { reason });
    const drained = await this.#within(this.#terms.drain(), STOP_WAIT_MS, "in-flight reconciles");
    // Still leading here, so the queued Events' lease signal has not aborted them; no reconcile
    // runs any more, so those held back go now.
    this.#events.wake();
    await this.#within(this.#events.flush(), EVENT_FLUSH_WAIT_MS, "queued Events");
    this.#electorStop.abort();
    // A request that hangs must not hold up a shutdown the kubelet will cut short anyway.
    await this.#within(this.#electorTask, STOP_WAIT_MS, "leader election");
    if (!drained) await this.#waitOutTerm();
    await this.#within(
      this.#elector?.release() ?? Promise.resolve(),
      STOP_WAIT_MS,
      "lease release",
    );
    this.#solo.abort();
    this.#metrics.leader.set({}, 0);
    this.#watchStop.abort();
    await this.#within(Promise.all(this.#tasks), STOP_WAIT_MS, "watches");
    this.#o.log.info("stopped", { reason });
    this.#finish();
    return this.#done;
  }

  /**
   * Stops at once, as a crash looks to the cluster: in-flight work is abandoned before its next
   * write, nothing is released (the lease expires on its own). For the simulator's crash faults.
   */
  abort(reason = "aborted"): void {
    if (this.#state === "stopped") return;
    this.#state = "stopped";
    this.#elector?.abandon(reason);
    this.#solo.abort();
    this.#electorStop.abort();
    this.#watchStop.abort();
    this.#terms.abandon();
    this.#events.discard();
    this.#resolveDone();
  }

  /** Waits for `task`, but at most `ms` on the Clock. */
  /** Waits for `task` at most `ms`; true when it settled in time. */
  async #within(task: Promise<unknown>, ms: number, what: string): Promise<boolean> {
    const timeout = new AbortController();
    const late = this.#o.clock.sleep(ms, timeout.signal).then(() => true, () => false);
    const timedOut = await Promise.race([task.then(() => false, () => false), late]);
    timeout.abort();
    if (timedOut) this.#o.log.warn(`stopping: gave up waiting for ${what}`, { waitedMs: ms });
    return !timedOut;
  }

  /**
   * A reconcile that outlived the drain may still have a write in flight, bounded only by the
   * term's end (each write's server-side timeout is the term's time left): handing the Lease over
   * before then could let it land in the next leader's term. So the Lease is released only once
   * the term is over; by then the renew deadline has ended it, and the Lease expires on its own.
   */
  async #waitOutTerm(): Promise<void> {
    const left = this.#elector?.termLeftMs ?? 0;
    if (left <= 0) return;
    this.#o.log.warn(
      "stopping: a write may still be in flight; the lease goes when this term ends",
      { waitMs: left },
    );
    await this.#o.clock.sleep(left);
  }

  #finish(): void {
    this.#listed();
    this.#state = "stopped";
    this.#resolveDone();
  }

  /** Health, readiness and progress. */
  get status(): ManagerStatus {
    const healthy = this.#state === "running";
    const synced = this.#watches.synced;
    const leading = healthy && (this.#elector ? this.#elector.leading : !this.#solo.signal.aborted);
    const standbyOk = this.#elector?.healthy ?? false;
    return {
      healthy,
      ready: healthy && !this.#held && synced && (leading || standbyOk),
      leading,
      synced,
      queued: this.#terms.current?.queued ?? 0,
      inFlight: this.#terms.current?.inFlight ?? 0,
    };
  }

  /** The watch caches (read-only, frozen objects). */
  get cache(): CacheReader {
    return this.#cache;
  }

  /** The metrics this manager records into; `metrics.render()` is the /metrics body. */
  get metrics(): Metrics {
    return this.#metrics;
  }

  /** A term begins: from new lists when it is taken on a read after they were sent (list_timing.ts). */
  #onLeading(signal: AbortSignal, term: TermStart): void {
    if (mustRelist(term, this.#listedAfterRead)) this.#watches.relist();
    this.#terms.lead(signal);
  }

  /** What a write of this replica got back from the API, and what caching it changed. */
  #onWrite(type: ResourceType, written: KubeObject, changes: CacheChange[]): void {
    if (isCrdType(type)) this.#watches.kickWatchesOf(written);
    this.#watches.written(type, changes);
    this.#watches.reconsider();
    for (const change of changes) this.#dispatch(type, change);
  }

  /**
   * A watch became live or stopped being live. What its controllers decided from "not known" may
   * change now, and an empty list brings no change events: queue every primary that reads it.
   */
  #livenessChanged(type: ResourceType): void {
    this.#terms.current?.requeueReaders(type);
  }

  /** Turns a cache change into queue keys. */
  #dispatch(type: ResourceType, change: CacheChange): void {
    // A standby or a manager still syncing queues everything when its term begins.
    this.#terms.current?.dispatch(type, change);
  }
}
