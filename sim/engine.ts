/**
 * The global rate limit engine in the simulation (issue #43 point 6): two engine Pods
 * (envoyproxy/ratelimit, as the operator deploys it) counting in one Redis with the fixed windows
 * of the data-plane model (src/dataplane/engine.ts), each loading the snapshot of the engine
 * domains the operator's EnvoyFilters carry a short while after it changes (the xDS push), and its
 * faults, drawn from the run's one PRNG while faults are on: Redis down (every call fails, the Pods
 * turn not Ready as their readiness probe follows Redis), Redis slow (calls are counted but
 * answered after the filters' timeout), an engine Pod not Ready. The proxies of the mesh ask it
 * (an EngineClient); what the operator reads back of it is `statusObjects` (EngineStatus objects,
 * src/api/engine_status.ts), which an EngineStatusFeed publishes into an operator process.
 *
 * Nothing is scheduled, drawn or published until a RateLimit with spec.global exists: runs without
 * one replay exactly as before the engine was modelled.
 */
import {
  EngineConfig,
  engineConfigOfFilters,
  EngineModel,
  type EngineRequest,
  type EngineResult,
} from "../src/dataplane/mod.ts";
import { RESOURCES } from "../src/api/resources.ts";
import type { KubeObject } from "../src/api/object.ts";
import { enginesStatusObject, engineStatusObject } from "../src/api/engine_status.ts";
import { rlconfigLines, snapshotOf } from "../src/reconcile/ratelimit/engine_config.ts";
import type { LocalSource } from "../src/runtime/mod.ts";
import type { ClockView, SimClock, TimerHandle } from "./clock.ts";
import type { Prng } from "./prng.ts";
import type { SimCluster } from "./cluster/mod.ts";
import type { Trace } from "./trace.ts";

/** The engine's Pods (the operator's Deployment runs two). */
export const SIM_ENGINE_PODS = ["ratelimit-engine-0", "ratelimit-engine-1"] as const;

/** How often, while faults are on, a fault of the engine may start (one draw a tick). */
export const ENGINE_FAULT_TICK_MS = 10_000;
/** The chance of each fault at a tick: Redis down, Redis slow, one engine Pod not Ready. */
export const ENGINE_FAULT_CHANCE = { redisDown: 0.05, redisSlow: 0.05, podDown: 0.08 } as const;
/** How long a fault lasts, ms (log-uniform). */
export const ENGINE_FAULT_MS = { min: 1_000, max: 30_000 } as const;
/** A slow Redis's latency, ms: beyond the filters' 100 ms timeout. */
export const REDIS_SLOW_MS = { min: 150, max: 2_000 } as const;
/** The delay from a snapshot change to an engine Pod having loaded it (its xDS stream), ms. */
export const ENGINE_LOAD_MS = { min: 20, max: 1_500 } as const;

/** How a broken engine (a mutant of the mutation test) miscounts. */
export interface EngineBreakage {
  /** Each engine Pod counts in its own Redis: two Pods admit twice the limit. */
  redisPerPod?: boolean;
}

/** Settings of the simulated engine. */
export interface SimEngineOptions {
  cluster: SimCluster;
  clock: SimClock;
  /** The engine's own stream of chance (a fork of the run's PRNG). */
  prng: Prng;
  trace: Trace;
  /** True while random faults are on. */
  active: () => boolean;
  broken?: EngineBreakage;
}

/** The engine: what the proxies ask, and what its Pods say of themselves. */
export class SimEngine {
  readonly #o: SimEngineOptions;
  readonly #models: EngineModel[];
  readonly #podDown = SIM_ENGINE_PODS.map(() => false);
  /** The snapshot each Pod has loaded (its domains' /rlconfig lines), as last loaded. */
  readonly #loaded: Record<string, string[]>[] = SIM_ENGINE_PODS.map(() => ({}));
  #redisUp = true;
  #redisSlowMs = 0;
  #started = false;
  readonly #onStart: (() => void)[] = [];
  #snapshot = "[]";
  /** Bumped at every change the operator could read back. */
  version = 0;

  constructor(o: SimEngineOptions) {
    this.#o = o;
    const empty = new EngineConfig([]);
    const replicas = SIM_ENGINE_PODS.map(() => ({ config: empty, ready: true }));
    // One model holds both Pods over one Redis; broken, each Pod has a model (a Redis) of its own.
    this.#models = o.broken?.redisPerPod
      ? replicas.map((r) => new EngineModel([r]))
      : [new EngineModel(replicas)];
  }

  /** Whether Redis answers now. */
  get redisUp(): boolean {
    return this.#redisUp && this.#redisSlowMs === 0;
  }

  /** The engine Pods Ready now: not failed, and reaching Redis (their readiness probe). */
  ready(): boolean[] {
    return this.#podDown.map((down) => !down && this.#redisUp);
  }

  /** An EngineClient over the engine's Pods, each call to the next Ready one. */
  ask(request: EngineRequest, nowMs: number, timeoutMs: number): EngineResult {
    const ready = this.ready();
    const replicas = this.#models.flatMap((m) => m.replicas);
    replicas.forEach((r, i) => (r.ready = ready[i]));
    for (const m of this.#models) {
      m.redisUp = this.#redisUp;
      m.redisLatencyMs = this.#redisSlowMs;
    }
    if (this.#models.length === 1) return this.#models[0].ask(request, nowMs, timeoutMs);
    // Broken: the Pods in turn, each over its own Redis.
    const live = this.#models.filter((m) => m.replicas[0].ready);
    if (live.length === 0) return { ok: false, error: "no healthy upstream" };
    const turn = this.#turn++ % live.length;
    return live[turn].ask(request, nowMs, timeoutMs);
  }
  #turn = 0;

  /**
   * Told of every change of EnvoyFilters: when the snapshot of engine domains the operator's
   * filters carry changes, each Pod loads it after its own delay; the first RateLimit with
   * spec.global starts the engine's faults.
   */
  filtersChanged(): void {
    const filters = this.#o.cluster.store.objects(RESOURCES.EnvoyFilter);
    const domains = snapshotOf(filters);
    const text = JSON.stringify(domains);
    if (text === this.#snapshot) return;
    this.#snapshot = text;
    const { config } = engineConfigOfFilters(filters);
    const lines: Record<string, string[]> = {};
    for (const d of domains) lines[d.domain] = rlconfigLines(d);
    const replicas = this.#models.flatMap((m) => m.replicas);
    SIM_ENGINE_PODS.forEach((_, i) => {
      const delay = Math.round(this.#o.prng.logUniform(ENGINE_LOAD_MS.min, ENGINE_LOAD_MS.max));
      this.#o.clock.schedule(delay, () => {
        replicas[i].config = config;
        this.#loaded[i] = lines;
        this.version++;
      });
    });
  }

  /** True once a RateLimit with spec.global was seen: the engine runs from then on. */
  get started(): boolean {
    return this.#started;
  }

  /** Calls `fn` when the engine starts (at once if it has). */
  onStart(fn: () => void): void {
    if (this.#started) fn();
    else this.#onStart.push(fn);
  }

  /** Told of every RateLimit written: the first with spec.global starts the engine. */
  rateLimitSeen(rl: KubeObject): void {
    if (this.#started || (rl.spec as { global?: unknown } | undefined)?.global === undefined) {
      return;
    }
    this.#started = true;
    this.#startFaults();
    for (const fn of this.#onStart.splice(0)) fn();
  }

  #startFaults(): void {
    const tick = () => {
      if (this.#o.active()) this.#drawFault();
      this.#o.clock.schedule(ENGINE_FAULT_TICK_MS, tick);
    };
    this.#o.clock.schedule(ENGINE_FAULT_TICK_MS, tick);
  }

  #drawFault(): void {
    const p = this.#o.prng;
    const r = p.next();
    const c = ENGINE_FAULT_CHANCE;
    const ms = () => Math.round(p.logUniform(ENGINE_FAULT_MS.min, ENGINE_FAULT_MS.max));
    if (r < c.redisDown) {
      if (!this.#redisUp) return;
      const d = ms();
      this.#redisUp = false;
      this.#fault(`redis down for ${d} ms`, d, () => (this.#redisUp = true));
    } else if (r < c.redisDown + c.redisSlow) {
      if (this.#redisSlowMs > 0) return;
      const d = ms();
      this.#redisSlowMs = Math.round(p.logUniform(REDIS_SLOW_MS.min, REDIS_SLOW_MS.max));
      this.#fault(
        `redis slow (${this.#redisSlowMs} ms) for ${d} ms`,
        d,
        () => (this.#redisSlowMs = 0),
      );
    } else if (r < c.redisDown + c.redisSlow + c.podDown) {
      const i = p.int(0, SIM_ENGINE_PODS.length - 1);
      if (this.#podDown[i]) return;
      const d = ms();
      this.#podDown[i] = true;
      this.#fault(
        `${SIM_ENGINE_PODS[i]} not Ready for ${d} ms`,
        d,
        () => (this.#podDown[i] = false),
      );
    }
  }

  #fault(detail: string, ms: number, end: () => void): void {
    this.version++;
    this.#o.trace.phase(this.#o.clock.now(), `engine: ${detail}`);
    this.#o.clock.schedule(ms, () => {
      end();
      this.version++;
    });
  }

  /** Ends the engine's faults at once (liveness: faults off). */
  heal(): void {
    if (!this.#redisUp || this.#redisSlowMs > 0 || this.#podDown.some((d) => d)) this.version++;
    this.#redisUp = true;
    this.#redisSlowMs = 0;
    this.#podDown.fill(false);
  }

  /**
   * What the operator reads back of the engine now (src/api/engine_status.ts): its Pods listed, and
   * each Pod's readiness, Redis as its /healthcheck says, and the domains it has loaded; `since`
   * is the reading's time on the reader's clock.
   */
  statusObjects(since: string): KubeObject[] {
    const ready = this.ready();
    return [
      enginesStatusObject({ listed: true, pods: SIM_ENGINE_PODS.length }),
      ...SIM_ENGINE_PODS.map((pod, i) =>
        engineStatusObject(pod, {
          ready: ready[i],
          redis: this.#redisUp ? "Reachable" : "Unreachable",
          loaded: this.#loaded[i],
          since,
        })
      ),
    ];
  }
}

/** How often an operator process reads the engine back (its poller's period). */
export const ENGINE_READ_MS = 5_000;

/**
 * One operator process's reading of the engine: every ENGINE_READ_MS on the process's own clock
 * (a crash freezes it), the engine's EngineStatus objects published into `source` when they
 * changed since the last reading.
 */
export class EngineStatusFeed {
  #timer: TimerHandle | undefined;
  #seen = -1;
  #stopped = false;

  constructor(
    readonly engine: SimEngine,
    readonly source: LocalSource,
    readonly clock: ClockView,
  ) {}

  /** Reads at once, then every ENGINE_READ_MS. */
  start(): void {
    const round = () => {
      if (this.#stopped) return;
      if (this.engine.version !== this.#seen) {
        this.#seen = this.engine.version;
        this.source.publish(this.engine.statusObjects(new Date(this.clock.now()).toISOString()));
      }
      this.#timer = this.clock.after(ENGINE_READ_MS, round);
    };
    round();
  }

  /** Stops reading (the process ended). */
  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
  }
}
