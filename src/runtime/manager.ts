/**
 * The Manager wires the runtime together: watchers fill the caches, change events become keys in
 * one work queue a controller, the queue calls each controller's pure `reconcile`, and the runner
 * carries out the Plan. Leader election decides whether this replica writes; a standby keeps its
 * caches warm. It touches the world only through the `Cluster` port, the `Clock` and the `Random`,
 * so the simulator can run it on virtual time and replay a seed byte for byte.
 */
import type { ApplyOutcome } from "../reconcile/plan.ts";
import { Cache, type CacheChange, type Store, typeId } from "./cache.ts";
import type { Clock, Random } from "./clock.ts";
import { type Cluster, type KubeObject, objectKey, type ResourceType } from "./cluster.ts";
import type { CacheReader, ControllerSpec, ModuleImages } from "./controller.ts";
import { classifyError, errorMessage } from "./errors.ts";
import type { ManagerStatus } from "./health.ts";
import { LeaderElector } from "./leader.ts";
import type { Logger } from "./log.ts";
import { instrumentCluster, Metrics } from "./metrics.ts";
import { WorkQueue, type WorkResult } from "./queue.ts";
import { Runner } from "./runner.ts";
import { Watcher } from "./watcher.ts";

export type { ManagerStatus } from "./health.ts";

/** Lease settings of leader election (client-go's names and meaning). */
export interface LeaderElectionOptions {
  /** Namespace of the coordination.k8s.io/v1 Lease, e.g. `platform-system`. */
  namespace: string;
  /** Name of the Lease, e.g. `platform-operator`. */
  name: string;
  /** How long a lease is valid after its last renewal, as seen by a standby; default 10 000. */
  leaseDurationMs?: number;
  /** The leader stops writing when it could not renew for this long; default 7 000 (< leaseDurationMs). */
  renewDeadlineMs?: number;
  /** Pause between acquire or renew attempts; default 2 000. */
  retryPeriodMs?: number;
}

/** Everything a Manager needs; all I/O and all chance come in here. */
export interface ManagerOptions {
  /** The API (live adapter or simulator), unwrapped: the manager counts calls into its metrics. */
  cluster: Cluster;
  clock: Clock;
  random: Random;
  log: Logger;
  /** Metrics to record into; a fresh set is made when absent (see `Manager.metrics`). */
  metrics?: Metrics;
  controllers: ControllerSpec[];
  images: ModuleImages;
  /** This replica's name (the pod name): the Lease holder identity and the Events' reporting instance. */
  identity: string;
  /** `false` runs as the only replica: it leads at once (tests, the simulator, local runs). */
  leaderElection: false | LeaderElectionOptions;
  /** Every primary is reconciled again after this long, as a safety net; default 600 000 (10 min). */
  resyncPeriodMs?: number;
  /** Reconciles of one controller running at once (never two of one key); default 2. */
  concurrency?: number;
  /** Server-side timeout of each watch request; default 300. */
  watchTimeoutSeconds?: number;
  /** A watch that delivers no event or bookmark for this long is aborted and restarted; default 90 000. */
  watchIdleMs?: number;
  /** Page size of the initial list; default 500. */
  pageSize?: number;
}

/** One controller's runtime parts. */
interface ControllerRuntime {
  spec: ControllerSpec;
  runner: Runner;
  log: Logger;
  /** Outcome of the last Plan per key, fed to the next reconcile. */
  outcomes: Map<string, ApplyOutcome>;
  /** Type ids of the primary and every watched type. */
  reads: Set<string>;
}

/** The work of one leadership term. */
interface Term {
  signal: AbortSignal;
  queues: Map<string, WorkQueue>;
}

/** The operator runtime of one replica. */
export class Manager {
  readonly #o: ManagerOptions;
  readonly #cluster: Cluster;
  readonly #metrics: Metrics;
  readonly #cache = new Cache();
  readonly #watchers: { watcher: Watcher; store: Store; required: boolean }[] = [];
  readonly #controllers: ControllerRuntime[];
  readonly #watchStop = new AbortController();
  readonly #electorStop = new AbortController();
  readonly #solo = new AbortController();
  #elector: LeaderElector | undefined;
  #tasks: Promise<void>[] = [];
  #electorTask: Promise<void> = Promise.resolve();
  #leadSignal: AbortSignal | undefined;
  #term: Term | undefined;
  #draining: Promise<void> | undefined;
  #state: "new" | "running" | "stopping" | "stopped" = "new";
  #resolveDone!: () => void;
  readonly #done = new Promise<void>((r) => this.#resolveDone = r);

  constructor(opts: ManagerOptions) {
    this.#o = opts;
    this.#metrics = opts.metrics ?? new Metrics();
    this.#cluster = instrumentCluster(opts.cluster, this.#metrics);
    this.#controllers = opts.controllers.map((spec) => this.#controller(spec));
    this.#planWatches();
  }

  #controller(spec: ControllerSpec): ControllerRuntime {
    const log = this.#o.log.child({ controller: spec.name });
    const runner = new Runner({
      cluster: this.#cluster,
      cache: this.#cache,
      clock: this.#o.clock,
      random: this.#o.random,
      log,
      metrics: this.#metrics,
      controller: spec.name,
      identity: this.#o.identity,
    });
    const reads = new Set([typeId(spec.primary), ...spec.watches.map((w) => typeId(w.type))]);
    return { spec, runner, log, outcomes: new Map(), reads };
  }

  /** One watcher a (type, selector): a watch is required if any controller requires it. */
  #planWatches(): void {
    const wanted = new Map<string, { type: ResourceType; selector?: string; required: boolean }>();
    for (const c of this.#o.controllers) {
      for (const w of [{ type: c.primary, optional: false }, ...c.watches]) {
        const id = `${typeId(w.type)}|${"labelSelector" in w ? w.labelSelector ?? "" : ""}`;
        const selector = "labelSelector" in w ? w.labelSelector : undefined;
        const prev = wanted.get(id);
        wanted.set(id, {
          type: w.type,
          selector,
          required: (prev?.required ?? false) || !w.optional,
        });
      }
    }
    for (const { type, selector, required } of wanted.values()) {
      const store = this.#cache.store(type, selector);
      const watcher = new Watcher({
        cluster: this.#cluster,
        clock: this.#o.clock,
        random: this.#o.random,
        log: this.#o.log,
        metrics: this.#metrics,
        type,
        labelSelector: selector,
        optional: !required,
        pageSize: this.#o.pageSize,
        timeoutSeconds: this.#o.watchTimeoutSeconds,
        idleMs: this.#o.watchIdleMs,
      }, (ev) => {
        for (const change of store.handle(ev)) this.#dispatch(type, change);
        if (ev.type === "init-done") this.#maybeBeginWork();
      });
      this.#watchers.push({ watcher, store, required });
    }
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
    for (const w of this.#watchers) this.#tasks.push(w.watcher.run(this.#watchStop.signal));
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
        onStartedLeading: (signal) => this.#onLeading(signal),
        onStoppedLeading: () => this.#endTerm(),
      });
      this.#electorTask = this.#elector.run(this.#electorStop.signal);
    } else {
      this.#metrics.leader.set({}, 1);
      this.#onLeading(this.#solo.signal);
    }
    return this.#done;
  }

  /**
   * Graceful stop (SIGTERM): take no new work, let in-flight reconciles finish, release the lease
   * so a standby takes over at once, stop the watches. Resolves when done; `start()` resolves too.
   */
  async stop(reason = "stop requested"): Promise<void> {
    if (this.#state !== "running") {
      if (this.#state === "new") this.#finish();
      return this.#done;
    }
    this.#state = "stopping";
    this.#o.log.info("stopping: finishing in-flight reconciles", { reason });
    await this.#drain();
    this.#electorStop.abort();
    await this.#electorTask;
    await this.#elector?.release();
    this.#solo.abort();
    this.#metrics.leader.set({}, 0);
    this.#watchStop.abort();
    await Promise.all(this.#tasks);
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
    const term = this.#term;
    this.#term = undefined;
    for (const q of term?.queues.values() ?? []) void q.shutdown();
    this.#resolveDone();
  }

  #finish(): void {
    this.#state = "stopped";
    this.#resolveDone();
  }

  /** Health, readiness and progress. */
  get status(): ManagerStatus {
    const healthy = this.#state === "running";
    const synced = this.#synced();
    const leading = healthy && (this.#elector ? this.#elector.leading : !this.#solo.signal.aborted);
    const standbyOk = this.#elector?.healthy ?? false;
    let queued = 0;
    let inFlight = 0;
    for (const q of this.#term?.queues.values() ?? []) {
      queued += q.depth;
      inFlight += q.active;
    }
    return {
      healthy,
      ready: healthy && synced && (leading || standbyOk),
      leading,
      synced,
      queued,
      inFlight,
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

  #synced(): boolean {
    return this.#watchers.every((w) => !w.required || w.store.synced);
  }

  #onLeading(signal: AbortSignal): void {
    this.#leadSignal = signal;
    this.#maybeBeginWork();
  }

  /** Starts the queues once leading and synced, after the previous term has drained. */
  #maybeBeginWork(): void {
    const signal = this.#leadSignal;
    if (this.#state !== "running" || this.#term || !signal || signal.aborted || !this.#synced()) {
      return;
    }
    if (this.#draining) {
      this.#draining.then(() => this.#maybeBeginWork());
      return;
    }
    const queues = new Map<string, WorkQueue>();
    const term: Term = { signal, queues };
    for (const ctl of this.#controllers) {
      const name = ctl.spec.name;
      queues.set(
        name,
        new WorkQueue({
          clock: this.#o.clock,
          random: this.#o.random,
          concurrency: this.#o.concurrency ?? 2,
          onDepth: (d) => this.#metrics.queueDepth.set({ controller: name }, d),
        }, (key) => this.#reconcile(ctl, key, signal)),
      );
    }
    this.#term = term;
    this.#o.log.info("caches synced and leading: reconciling");
    this.#enqueueAll(term);
    void this.#resync(term);
  }

  #enqueueAll(term: Term): void {
    for (const ctl of this.#controllers) {
      const q = term.queues.get(ctl.spec.name)!;
      for (const obj of this.#cache.list(ctl.spec.primary)) q.add(objectKey(obj));
    }
  }

  /** The safety net: every primary again every resync period, jittered by up to 10%. */
  async #resync(term: Term): Promise<void> {
    const period = this.#o.resyncPeriodMs ?? 600_000;
    while (this.#term === term) {
      try {
        await this.#o.clock.sleep(period * (1 + 0.1 * this.#o.random.next()), term.signal);
      } catch {
        return;
      }
      if (this.#term === term) this.#enqueueAll(term);
    }
  }

  #endTerm(): void {
    const term = this.#term;
    this.#leadSignal = undefined;
    if (!term) return;
    void this.#drain();
  }

  /** Ends the current term: queues stop taking work and in-flight reconciles finish. */
  #drain(): Promise<void> {
    const term = this.#term;
    if (!term) return this.#draining ?? Promise.resolve();
    this.#term = undefined;
    const draining = Promise.all([...term.queues.values()].map((q) => q.shutdown())).then(() => {
      if (this.#draining === draining) this.#draining = undefined;
      for (const ctl of this.#controllers) {
        this.#metrics.queueDepth.set({ controller: ctl.spec.name }, 0);
      }
    });
    this.#draining = draining;
    return draining;
  }

  /** Turns a cache change into queue keys: the primary's own key, and whatever `triggers` says. */
  #dispatch(type: ResourceType, change: CacheChange): void {
    const term = this.#term;
    if (!term) return; // a standby or a manager still syncing queues everything when it starts
    const id = typeId(type);
    for (const ctl of this.#controllers) {
      if (!ctl.reads.has(id)) continue;
      const q = term.queues.get(ctl.spec.name)!;
      if (typeId(ctl.spec.primary) === id) q.add(objectKey(change.object));
      const objects = change.type === "apply" && change.old
        ? [change.object, change.old]
        : [change.object];
      for (const obj of objects) {
        for (const key of this.#triggers(ctl, type, obj)) q.add(key);
      }
    }
  }

  #triggers(ctl: ControllerRuntime, type: ResourceType, obj: KubeObject): string[] {
    try {
      return ctl.spec.triggers(type, obj, this.#cache);
    } catch (err) {
      ctl.log.error("triggers failed", { error: err, object: objectKey(obj), kind: obj.kind });
      return [];
    }
  }

  async #reconcile(ctl: ControllerRuntime, key: string, signal: AbortSignal): Promise<WorkResult> {
    const controller = ctl.spec.name;
    const started = this.#o.clock.now();
    const finish = (result: string, work: WorkResult, failed: boolean): WorkResult => {
      this.#metrics.reconcileTotal.inc({ controller, result });
      if (failed) this.#metrics.reconcileErrors.inc({ controller });
      this.#metrics.reconcileDuration.observe(
        { controller },
        (this.#o.clock.now() - started) / 1000,
      );
      return work;
    };
    if (signal.aborted) return { type: "terminal" };
    const { primary } = ctl.spec;
    const slash = key.indexOf("/");
    const [namespace, name] = primary.namespaced && slash >= 0
      ? [key.slice(0, slash), key.slice(slash + 1)]
      : [undefined, key];
    const observed = this.#cache.get(primary, namespace, name);
    const lastOutcome = ctl.outcomes.get(key);
    let plan;
    try {
      plan = ctl.spec.reconcile(key, this.#cache, {
        now: this.#o.clock.now(),
        lastOutcome,
        images: this.#o.images,
      });
    } catch (err) {
      const terminal = classifyError(err) === "terminal";
      ctl.log.error("reconcile failed", { key, error: errorMessage(err), retry: !terminal });
      return finish("error", terminal ? { type: "terminal" } : { type: "retry" }, true);
    }
    if (!plan || !observed) {
      ctl.outcomes.delete(key);
      return finish("success", { type: "done" }, false);
    }
    const r = await ctl.runner.run(primary, observed, plan, lastOutcome, signal);
    if (r.outcome) ctl.outcomes.set(key, r.outcome);
    const failed = r.outcome?.ok === false;
    const result = r.work.type === "done"
      ? r.work.requeueAfterMs !== undefined ? "requeue_after" : "success"
      : failed || r.work.type === "retry"
      ? "error"
      : "requeue";
    ctl.log.debug("reconciled", {
      key,
      writes: r.writes,
      result,
      ms: this.#o.clock.now() - started,
    });
    return finish(result, r.work, failed);
  }
}
