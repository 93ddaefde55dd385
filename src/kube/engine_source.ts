/**
 * Reads back the global rate limit engine (issue #43 point 4): finds its Pods and asks each, by
 * Pod IP, `/healthcheck` (whether it reaches Redis) and `/rlconfig` (what it has loaded), and
 * publishes the answers as EngineStatus objects (src/api/engine_status.ts) into a LocalSource the
 * runtime watches, as IstiodPoller (istiod_source.ts) does for istiod. Only what changed becomes a
 * watch event, so at rest the RateLimit controller hears nothing.
 *
 * The Pods (`EnginePods`) are one list and watch of the Pods labelled GLOBAL_ENGINE_LABELS in the
 * engine's namespace, kept as little as reading them needs (`ENGINE_POD_PROJECTION`): the operator's
 * own Pod cache keeps neither a Pod's IP nor its conditions. Asked: every Pod that has an IP and is
 * neither terminating (its engine fails `/healthcheck` once it got SIGTERM, and the Service no
 * longer sends it calls) nor finished, Ready or not: a Pod that is not Ready because its engine
 * lost Redis says so, which is the news.
 *
 * A round every `periodMs` (5 s); after `nudge()` (the engines' snapshot changed, or an engine ACKed
 * a push: run.ts wires the xDS server's `onLoaded` to it) one at once and
 * {@link ENGINE_SETTLE_ROUNDS} more a `followUpMs` apart, so a push is seen loaded within a round
 * trip of the engines' ACK; at once when the Pods change. A Pod that does not answer is asked again
 * after a backoff that doubles from the period to {@link MAX_POD_BACKOFF_MS} (its last reading,
 * with why it failed, stays published), and at once when it changes (new IP, Ready). Nothing here
 * throws.
 */
import {
  domainsChanged,
  ENGINE_STATUS,
  ENGINES_STATUS_NAME,
  enginesStatusObject,
  type EngineStatusFields,
  engineStatusObject,
  MAX_RLCONFIG_BYTES,
  parseRlconfig,
  podIp,
  podIsReady,
  podUrl,
  type ReadFailure,
  redisOfHealth,
} from "../api/engine_status.ts";
import { GLOBAL_ENGINE_LABELS, GLOBAL_ENGINE_SERVICE } from "../api/global_engine.ts";
import { isObject, type JsonObject } from "../api/json.ts";
import { cacheMeta, type KubeObject, type Projection } from "../api/object.ts";
import { RESOURCES } from "../api/resources.ts";
import { kubeTime } from "../api/time.ts";
import {
  CacheStore,
  type Clock,
  type Cluster,
  CollectedGauge,
  describeFailure,
  forwardingTo,
  type LocalSource,
  type Logger,
  type Metrics,
  type Random,
  type Sample,
  Watcher,
} from "../runtime/mod.ts";
import { describe } from "./errors.ts";
import { readBounded } from "./bounded_read.ts";

/** Default period between two rounds. */
export const ENGINE_PERIOD_MS = 5_000;
/** Default wait between the rounds that follow a nudge. */
export const ENGINE_FOLLOW_UP_MS = 1_000;
/** Rounds a follow-up apart after a nudge (the engines load a push within milliseconds). */
export const ENGINE_SETTLE_ROUNDS = 3;
/** Longest wait before a Pod that does not answer is asked again. */
export const MAX_POD_BACKOFF_MS = 60_000;
/** Deadline of one request, body included. */
export const ENGINE_TIMEOUT_MS = 2_000;

/** The label selector of the engine's Pods (`k=v,...`). */
export const ENGINE_POD_SELECTOR = Object.entries(GLOBAL_ENGINE_LABELS)
  .map(([k, v]) => `${k}=${v}`).sort().join(",");

/**
 * What the engine's Pod watch keeps of a Pod: the metadata the cache reads, its IP, its phase and
 * its Ready condition.
 */
export const ENGINE_POD_PROJECTION: Projection = {
  name: "engine.pod",
  keep(pod: KubeObject): KubeObject {
    const s = isObject(pod.status) ? pod.status : {};
    const status: JsonObject = {
      ...(typeof s.phase === "string" ? { phase: s.phase } : {}),
      ...(typeof s.podIP === "string" ? { podIP: s.podIP } : {}),
      ...(podIsReady(pod) ? { conditions: [{ type: "Ready", status: "True" }] } : {}),
    };
    return {
      apiVersion: pod.apiVersion,
      kind: pod.kind,
      metadata: cacheMeta(pod),
      status,
    };
  },
};

/** What is known of the engine's Pods now. */
export type EnginePodsView =
  /** Not listed yet: nothing to say. */
  | { state: "listing" }
  /** They cannot be listed: why. */
  | { state: "failed"; reason: string; message: string }
  /** Listed: the Pods (any state; the poller picks those to ask). */
  | { state: "listed"; pods: readonly KubeObject[] };

/** Why the engine's Pods are not known: their list fails. */
export const PODS_UNKNOWN = "PodsUnknown";

/** Settings of {@link EnginePods}. */
export interface EnginePodsOptions {
  cluster: Cluster;
  clock: Clock;
  random: Random;
  log: Logger;
  metrics?: Metrics;
  /** While true, list and watch failures log at debug (the startup checks say what is wrong). */
  quiet?: () => boolean;
  /** Called when the cached Pods change. */
  onChange?: () => void;
}

/** The engine's Pods: `run` lists and watches, `view` says what is known. */
export class EnginePods {
  readonly #store = new CacheStore(RESOURCES.Pod, ENGINE_POD_SELECTOR, ENGINE_POD_PROJECTION);
  readonly #watcher: Watcher;
  /** The last list's failure, until a list succeeds. */
  #failure: string | undefined;

  /** The watch; nothing is asked before `run`. */
  constructor(o: EnginePodsOptions) {
    const cluster: Cluster = {
      ...forwardingTo(o.cluster),
      list: async (type, opts) => {
        try {
          const page = await o.cluster.list(type, opts);
          this.#failure = undefined;
          return page;
        } catch (err) {
          this.#failure = describeFailure("list", type, err).replace(/; retrying$/, "");
          throw err;
        }
      },
    };
    this.#watcher = new Watcher({
      cluster,
      clock: o.clock,
      random: o.random,
      log: o.log,
      metrics: o.metrics,
      type: RESOURCES.Pod,
      namespace: GLOBAL_ENGINE_SERVICE.namespace,
      labelSelector: ENGINE_POD_SELECTOR,
      quiet: o.quiet,
    }, (ev) => {
      if (this.#store.handle(ev).length > 0) o.onChange?.();
    });
  }

  /** Lists and watches until `signal` aborts. */
  run(signal: AbortSignal): Promise<void> {
    return this.#watcher.run(signal);
  }

  /** The Pods now (see {@link EnginePodsView}). */
  view(): EnginePodsView {
    if (!this.#store.synced) {
      if (this.#failure === undefined) return { state: "listing" };
      return {
        state: "failed",
        reason: PODS_UNKNOWN,
        message:
          `the engine's Pods (${ENGINE_POD_SELECTOR} in namespace ${GLOBAL_ENGINE_SERVICE.namespace}) are not known: ${this.#failure}`,
      };
    }
    return { state: "listed", pods: this.#store.list(GLOBAL_ENGINE_SERVICE.namespace) };
  }
}

/** Where one Pod's engine answers. */
export interface EngineUrls {
  /** `/healthcheck` on its HTTP port. */
  health: string;
  /** `/rlconfig` on its debug port. */
  rlconfig: string;
}

/** The URLs of a Pod at its IP, on the engine's ports. */
export function engineUrlsOf(ip: string): EngineUrls {
  return {
    health: `${podUrl(ip, GLOBAL_ENGINE_SERVICE.httpPort)}/healthcheck`,
    rlconfig: `${podUrl(ip, GLOBAL_ENGINE_SERVICE.debugPort)}/rlconfig`,
  };
}

/** Settings of the poller. */
export interface EnginePollOptions {
  /** The engine's Pods as known now; looked at each round, without a request. */
  pods: () => EnginePodsView;
  /** Where the EngineStatus objects go; its type must be ENGINE_STATUS. */
  source: LocalSource;
  clock: Clock;
  log: Logger;
  /** Where the engine gauges go, when given. */
  metrics?: Metrics;
  /** Period between two rounds; default {@link ENGINE_PERIOD_MS}. */
  periodMs?: number;
  /** Wait between the rounds after a nudge; default {@link ENGINE_FOLLOW_UP_MS}. */
  followUpMs?: number;
  /** Deadline of one request; default {@link ENGINE_TIMEOUT_MS}. */
  timeoutMs?: number;
  /** Where a Pod answers, from its IP; default {@link engineUrlsOf} (tests map to loopback). */
  urlsOf?: (ip: string, pod: KubeObject) => EngineUrls;
  /** The fetch to use (tests). */
  fetch?: typeof fetch;
  /**
   * A cheap token of what may change what the engines hold (the operator's EnvoyFilters as its
   * cache has them), looked at every `followUpMs` between rounds without a request: when it
   * changes, the poller is nudged (`nudge`).
   */
  changed?: () => unknown;
}

/** One HTTP answer, or why there was none. */
type Answer = { status: number; body: string } | { failure: string };

/** What the poller keeps of a Pod between rounds. */
interface Kept {
  fields: EngineStatusFields;
  /** The fields without `since`, as JSON: an equal reading keeps its time. */
  reading: string;
  /** What the Pod was asked as (IP and readiness): a change asks it at once. */
  as: string;
  /** Rounds in a row it did not answer. */
  failures: number;
  /** Not asked again before this (the poller's clock). */
  nextAt: number;
}

/** The outcome of a round: whether every Pod asked answered. */
export interface EngineRoundResult {
  ok: boolean;
}

/** Polls the engine's Pods; `round` is one round, `run` rounds until stopped. */
export class EnginePoller {
  readonly #o: EnginePollOptions;
  readonly #kept = new Map<string, Kept>();
  /** Wakes a sleeping `run`. */
  #wake: (() => void) | undefined;
  #nudged = false;
  /** A round is due at once (a nudge or the Pods changed while a round ran). */
  #due = false;
  #lastFailure = "";
  /** True once the Pods were listed. */
  #listed = false;
  /** The engine gauges, read from the last published fields. */
  readonly pods = new CollectedGauge(
    "platform_operator_engine_pods",
    "The global rate limit engine's Pods by their Ready condition and whether their engine reaches Redis (its /healthcheck), as the operator reads them.",
  );
  readonly domains = new CollectedGauge(
    "platform_operator_engine_domains_loaded",
    "RateLimit domains each engine Pod has loaded, read from its /rlconfig.",
  );

  /** A poller; nothing is asked before `round` or `run`. */
  constructor(opts: EnginePollOptions) {
    if (opts.source.type !== ENGINE_STATUS) throw new Error("the source must hold EngineStatus");
    this.#o = opts;
    this.pods.collect = () => this.#podSamples();
    this.domains.collect = () =>
      [...this.#kept].filter(([, k]) => k.fields.loaded !== undefined).map((
        [pod, k],
      ): Sample => [{ pod }, Object.keys(k.fields.loaded!).length]);
    opts.metrics?.add(this.pods);
    opts.metrics?.add(this.domains);
  }

  /** Every combination of readiness and Redis, counted (0 included, so alerts see a zero). */
  #podSamples(): Sample[] {
    // Nothing is said before the Pods were listed once: no series, rather than a false zero.
    if (!this.#listed) return [];
    const counts = new Map<string, number>();
    for (const ready of ["true", "false"]) {
      for (const redis of ["Reachable", "Unreachable", "Unknown"]) {
        counts.set(`${ready} ${redis}`, 0);
      }
    }
    for (const { fields } of this.#kept.values()) {
      const k = `${fields.ready} ${fields.redis}`;
      counts.set(k, counts.get(k)! + 1);
    }
    return [...counts].map(([k, n]): Sample => {
      const [ready, redis] = k.split(" ");
      return [{ ready, redis }, n];
    });
  }

  /** The engines' configuration changed: read them again now, and a few times a second apart. */
  nudge(): void {
    this.#nudged = true;
    this.podsChanged();
  }

  /** The Pods changed: read them now. */
  podsChanged(): void {
    this.#due = true;
    this.#wake?.();
  }

  async #get(url: string, maxBytes: number): Promise<Answer> {
    const timeoutMs = this.#o.timeoutMs ?? ENGINE_TIMEOUT_MS;
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const res = await (this.#o.fetch ?? fetch)(url, { signal });
      const body = await readBounded(res, maxBytes);
      if (body === undefined) {
        return { failure: `GET ${url}: the answer is over ${maxBytes} bytes` };
      }
      return { status: res.status, body: new TextDecoder().decode(body) };
    } catch (e) {
      return {
        failure: `GET ${url}: ${signal.aborted ? `no answer in ${timeoutMs} ms` : describe(e)}`,
      };
    }
  }

  /** Asks one Pod; `answered` is false when some request had no answer. */
  async #read(
    pod: KubeObject,
  ): Promise<{ fields: Omit<EngineStatusFields, "since">; answered: boolean }> {
    const ready = podIsReady(pod);
    const ip = podIp(pod);
    if (ip === undefined) {
      return {
        fields: {
          ready,
          redis: "Unknown",
          error: { reason: "NoAddress", message: "the Pod has no IP yet" },
        },
        answered: true,
      };
    }
    const urls = (this.#o.urlsOf ?? engineUrlsOf)(ip, pod);
    const [health, rl] = await Promise.all([
      this.#get(urls.health, 1024),
      this.#get(urls.rlconfig, MAX_RLCONFIG_READ),
    ]);
    let error: ReadFailure | undefined;
    const fail = (reason: string, message: string) => error ??= { reason, message };
    let redis: EngineStatusFields["redis"] = "Unknown";
    if ("failure" in health) fail("Unreachable", health.failure);
    else {
      redis = redisOfHealth(health.status, health.body);
      if (redis === "Unknown") {
        fail("BadAnswer", `GET ${urls.health}: HTTP ${health.status} ${cutBody(health.body)}`);
      }
    }
    let loaded: Record<string, string[]> | undefined;
    if ("failure" in rl) fail("Unreachable", rl.failure);
    else if (rl.status !== 200) fail("BadAnswer", `GET ${urls.rlconfig}: HTTP ${rl.status}`);
    else {
      const parsed = parseRlconfig(rl.body);
      if (parsed.ok) loaded = parsed.domains;
      else fail("Unreadable", `GET ${urls.rlconfig}: ${parsed.reason}`);
    }
    return {
      fields: { ready, redis, ...(loaded ? { loaded } : {}), ...(error ? { error } : {}) },
      answered: !("failure" in health) && !("failure" in rl),
    };
  }

  /** One round: the Pods asked (those not backing off), the answers published. */
  async round(): Promise<EngineRoundResult> {
    const o = this.#o;
    const view = o.pods();
    if (view.state === "listing") return { ok: true };
    if (view.state === "failed") {
      const said = `${view.reason} ${view.message}`;
      if (said !== this.#lastFailure) o.log.warn("the engine's Pods cannot be listed", view);
      this.#lastFailure = said;
      // What was read of the Pods stays; the engine's own status says they may be stale.
      const kept = o.source.list().items.filter((x) => x.metadata.name !== ENGINES_STATUS_NAME);
      o.source.publish([
        ...kept,
        enginesStatusObject({ listed: false, reason: view.reason, message: view.message }),
      ]);
      return { ok: false };
    }
    if (this.#lastFailure !== "") o.log.info("the engine's Pods are listed again");
    this.#listed = true;
    this.#lastFailure = "";
    const asked = view.pods.filter((p) => {
      const phase = isObject(p.status) ? p.status.phase : undefined;
      return p.metadata.deletionTimestamp === undefined && phase !== "Succeeded" &&
        phase !== "Failed";
    });
    const names = new Set(asked.map((p) => p.metadata.name));
    for (const name of this.#kept.keys()) if (!names.has(name)) this.#kept.delete(name);
    const now = o.clock.now();
    let ok = true;
    await Promise.all(asked.map(async (pod) => {
      const name = pod.metadata.name;
      const as = `${podIp(pod) ?? ""} ${podIsReady(pod)}`;
      const before = this.#kept.get(name);
      if (before && before.as === as && before.nextAt > now) return;
      const { fields, answered } = await this.#read(pod);
      const reading = JSON.stringify(fields);
      const failures = answered ? 0 : (before?.failures ?? 0) + 1;
      const period = o.periodMs ?? ENGINE_PERIOD_MS;
      const wait = failures === 0
        ? 0
        : Math.min(MAX_POD_BACKOFF_MS, period * 2 ** Math.min(failures - 1, 20));
      if (!answered) ok = false;
      this.#said(name, before?.fields, fields);
      this.#kept.set(name, {
        fields: before?.reading === reading
          ? before.fields
          : { ...fields, since: kubeTime(o.clock.now()), ...changedOnly(before?.fields, fields) },
        reading,
        as,
        failures,
        nextAt: o.clock.now() + wait,
      });
    }));
    const objects: KubeObject[] = [...this.#kept].map(([name, k]) =>
      engineStatusObject(name, k.fields)
    );
    objects.push(enginesStatusObject({ listed: true, pods: this.#kept.size }));
    o.source.publish(objects);
    return { ok };
  }

  /** Logs what changed in a Pod's reading that an operator acts on. */
  #said(
    pod: string,
    before: EngineStatusFields | undefined,
    now: Omit<EngineStatusFields, "since">,
  ): void {
    const log = this.#o.log;
    if (now.redis === "Unreachable" && before?.redis !== "Unreachable") {
      log.warn("an engine Pod cannot reach Redis", { pod });
    } else if (now.redis === "Reachable" && before?.redis === "Unreachable") {
      log.info("an engine Pod reaches Redis again", { pod });
    }
    const was = before?.error?.reason;
    if (now.error && now.error.reason !== was) {
      log.warn("an engine Pod could not be read", { pod, ...now.error });
    } else if (!now.error && was !== undefined) log.info("an engine Pod is read again", { pod });
  }

  /**
   * Rounds until `signal` aborts: a period apart; after a nudge at once and ENGINE_SETTLE_ROUNDS more a
   * follow-up apart; at once when the Pods change.
   */
  async run(signal: AbortSignal): Promise<void> {
    const o = this.#o;
    const period = o.periodMs ?? ENGINE_PERIOD_MS;
    const followUp = o.followUpMs ?? ENGINE_FOLLOW_UP_MS;
    const token = () => {
      try {
        return o.changed?.();
      } catch {
        return undefined;
      }
    };
    let seen = token();
    let settle = 0;
    while (!signal.aborted) {
      if (this.#nudged) {
        this.#nudged = false;
        settle = ENGINE_SETTLE_ROUNDS;
      }
      this.#due = false;
      try {
        await this.round();
      } catch (err) {
        // Nothing in a round is meant to throw; if something does, say it and keep polling.
        o.log.error("reading the engine back failed", { error: describe(err) });
      }
      if (this.#due) continue;
      const wait = settle > 0 ? followUp : period;
      if (settle > 0) settle--;
      // Slept in steps of followUp when there is a token to look at, woken by a nudge at once.
      for (let slept = 0; slept < wait && !this.#due;) {
        const step = o.changed ? Math.min(followUp, wait - slept) : wait - slept;
        const woken = new AbortController();
        this.#wake = () => woken.abort();
        try {
          await o.clock.sleep(step, AbortSignal.any([signal, woken.signal]));
        } catch {
          if (signal.aborted) return;
        } finally {
          this.#wake = undefined;
        }
        slept += step;
        const now = token();
        if (now !== seen) {
          seen = now;
          this.nudge();
        }
      }
    }
  }
}

/**
 * `{changed}` when only the loaded lines of some domains differ between two readings (the
 * RateLimit controller then wakes only theirs), else nothing.
 */
function changedOnly(
  before: EngineStatusFields | undefined,
  now: Omit<EngineStatusFields, "since">,
): { changed?: string[] } {
  if (!before?.loaded || !now.loaded) return {};
  if (before.ready !== now.ready || before.redis !== now.redis) return {};
  if (JSON.stringify(before.error) !== JSON.stringify(now.error)) return {};
  return { changed: domainsChanged(before.loaded, now.loaded) };
}

/** Most bytes of `/rlconfig` read: the parser's bound and one more, so that it says so. */
const MAX_RLCONFIG_READ = MAX_RLCONFIG_BYTES + 1;

function cutBody(body: string): string {
  const one = body.replace(/\s+/g, " ").trim();
  return one.length > 200 ? one.slice(0, 200) + "…" : one;
}

/** Settings of {@link startEngineStatus}. */
export interface EngineStatusOptions {
  /** Where to list and watch the engine's Pods. */
  cluster: Cluster;
  /** Where the EngineStatus objects go (a LocalSource of ENGINE_STATUS). */
  source: LocalSource;
  clock: Clock;
  random: Random;
  log: Logger;
  metrics?: Metrics;
  /** While true, list and watch failures log at debug. */
  quiet?: () => boolean;
  /** A token of what may change what the engines hold (see EnginePollOptions.changed). */
  changed?: () => unknown;
  /** Stops the watch and the poller. */
  signal: AbortSignal;
}

/**
 * Starts reading the engine back: the Pod watch and the poller, until `signal` aborts. Returns
 * the poller, whose `nudge()` the engines' configuration server calls when the snapshot changes.
 */
export function startEngineStatus(o: EngineStatusOptions): EnginePoller {
  // The poller looks at the Pods only once it runs, after both exist.
  const poller = new EnginePoller({
    pods: () => pods.view(),
    source: o.source,
    clock: o.clock,
    log: o.log,
    metrics: o.metrics,
    changed: o.changed,
  });
  const pods = new EnginePods({
    cluster: o.cluster,
    clock: o.clock,
    random: o.random,
    log: o.log,
    metrics: o.metrics,
    quiet: o.quiet,
    onChange: () => poller.podsChanged(),
  });
  void pods.run(o.signal);
  void poller.run(o.signal);
  return poller;
}
