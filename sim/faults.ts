/**
 * Fault injection, swarm style (TigerBeetle's VOPR, FoundationDB's BUGGIFY): the seed picks which
 * fault kinds are on in a run and how often they fire, so different seeds stress different mixes.
 * Random faults hit only operator replicas and only while the injector is active (the safety
 * phase); targeted faults from scenario steps hit whoever matches them, until used up or cleared.
 */
import type { KubeObject, ResourceType } from "../src/api/object.ts";
import {
  type ApiErrorRule,
  injectedError,
  matchesTarget,
  sameTarget,
  type Target,
} from "./fault_rules.ts";
import {
  type FaultSource,
  isOperator,
  type RequestFault,
  type RequestVerb,
  type WatchFault,
} from "./cluster/mod.ts";
import type { Prng } from "./prng.ts";

export { type ApiErrorRule, injectedError, matchesTarget, type Target } from "./fault_rules.ts";

/** The fault mix of a run. Probabilities are per request, per watch, or per Deployment. */
export interface FaultConfig {
  /** 409 Conflict on update, patch and apply requests. */
  conflict: number;
  /** 429 TooManyRequests with Retry-After. */
  throttle: number;
  /** 500 InternalError. */
  serverError: number;
  /** No answer (code 0); the server may or may not have done it. */
  timeout: number;
  /** A watch ends early (connection dropped). */
  watchDrop: number;
  /** A watch stays open and sends nothing, forever. */
  watchStall: number;
  /** A watch gets a 410 Gone ERROR event. */
  watchGone: number;
  /** How a too-old watch version is reported: an ERROR event or a thrown 410. */
  goneAs: "event" | "throw";
  /** Watch events retained per type (smaller gives more 410s on re-watch). */
  historySize: number;
  /** Operator crashes during the safety phase. */
  crashes: number;
  /** An operator-created Deployment cannot create Pods for a while (ReplicaFailure). */
  replicaFailure: number;
  /** A Deployment's Pods take minutes to become ready. */
  slowDeployment: number;
  /** Forward jumps of the clock during the safety phase. */
  clockJumps: number;
  /** An operator write takes 1–15 s to answer, and lands when it answers. */
  slowWrite: number;
  /** Crashes right after the n-th Plan write lands (n log-uniform in 1–60; the Plan half done). */
  planCrashes: number;
  /**
   * Windows (8–40 s, longer than the renew deadline) in which the leader's Lease requests fail;
   * half of them partitions: all its requests unanswered, its watches silent (sim/chaos.ts).
   */
  leaseLoss: number;
  /** Standby operator replicas beside the leader (a 2-replica Deployment has 1). */
  standbys: number;
  /** Deletions of operator-created objects by someone else during the safety phase. */
  ownedDeletes: number;
  /** A proxy rejects (NACKs) a push istiod sends it; per push. */
  proxyRejects: number;
  /** A new mesh Pod's proxy never connects to istiod (until faults stop); per proxy. */
  proxyNeverConnects: number;
  /**
   * Another team's EnvoyFilter that the proxies refuse (Kyma api-gateway#2380's empty
   * `actions`), on the demo workload or the gateway, for 5–90 s: times.
   */
  brokenFilters: number;
  /** Windows (5–120 s) in which the operator cannot reach istiod: times. */
  istiodOutages: number;
  /**
   * Windows (5–120 s) in which the API server's aggregator cannot reach KEDA's metrics server
   * (cluster DNS or kube-proxy down): its APIService turns `FailedDiscoveryCheck`. Times.
   */
  metricsOutages: number;
  /**
   * Windows (5–120 s) in which cluster DNS answers nothing (CoreDNS scaled to 0 or crashing):
   * names such as the one KEDA's metrics server dials do not resolve, while the aggregator, which
   * dials Service addresses, still reaches KEDA. Times.
   */
  dnsOutages: number;
  /**
   * Windows (5–180 s) in which every list the operator makes of one kind it watches fails with a
   * 500 (a broken conversion webhook, etcd timing out on that kind's keys); watches already open
   * go on. Times.
   */
  listOutages: number;
}

/** No faults at all. */
export const NO_FAULTS: FaultConfig = {
  conflict: 0,
  throttle: 0,
  serverError: 0,
  timeout: 0,
  watchDrop: 0,
  watchStall: 0,
  watchGone: 0,
  goneAs: "event",
  historySize: 500,
  crashes: 0,
  replicaFailure: 0,
  slowDeployment: 0,
  clockJumps: 0,
  slowWrite: 0,
  planCrashes: 0,
  leaseLoss: 0,
  standbys: 0,
  ownedDeletes: 0,
  proxyRejects: 0,
  proxyNeverConnects: 0,
  brokenFilters: 0,
  istiodOutages: 0,
  metricsOutages: 0,
  dnsOutages: 0,
  listOutages: 0,
};

/** Draws a fault mix: each kind is on in some seeds (most in half), at a rate drawn for the run. */
export function swarm(prng: Prng): FaultConfig {
  const on = (lo: number, hi: number) => (prng.chance(0.5) ? prng.uniform(lo, hi) : 0);
  return {
    conflict: on(0.01, 0.15),
    throttle: on(0.01, 0.1),
    serverError: on(0.01, 0.1),
    timeout: on(0.005, 0.05),
    watchDrop: on(0.05, 0.5),
    watchStall: on(0.02, 0.2),
    watchGone: on(0.05, 0.3),
    goneAs: prng.chance(0.5) ? "event" : "throw",
    historySize: prng.chance(0.5) ? prng.int(5, 50) : 500,
    crashes: prng.chance(0.5) ? prng.int(1, 3) : 0,
    replicaFailure: on(0.1, 0.5),
    slowDeployment: on(0.1, 0.5),
    clockJumps: prng.chance(0.3) ? prng.int(1, 3) : 0,
    // Drawn after the older kinds, so an old seed keeps its old mix of those.
    slowWrite: on(0.01, 0.1),
    planCrashes: prng.chance(0.4) ? prng.int(1, 3) : 0,
    leaseLoss: prng.chance(0.4) ? prng.int(1, 2) : 0,
    standbys: prng.chance(0.5) ? 1 : 0,
    ownedDeletes: prng.chance(0.5) ? prng.int(1, 4) : 0,
    // The mesh's faults (issue 42), drawn last for the same reason.
    proxyRejects: on(0.05, 0.4),
    proxyNeverConnects: on(0.2, 1),
    brokenFilters: prng.chance(0.4) ? prng.int(1, 3) : 0,
    istiodOutages: prng.chance(0.4) ? prng.int(1, 2) : 0,
    // The aggregator's (issue 44), drawn last for the same reason.
    metricsOutages: prng.chance(0.4) ? prng.int(1, 2) : 0,
    // Cluster DNS (issue 44), drawn last for the same reason.
    dnsOutages: prng.chance(0.4) ? prng.int(1, 2) : 0,
    // One kind unlistable for a while, drawn last for the same reason.
    listOutages: prng.chance(0.4) ? prng.int(1, 2) : 0,
  };
}

const WRITES = new Set<RequestVerb>(["update", "patch", "apply", "applyStatus"]);
const ANY_WRITE = new Set<RequestVerb>([...WRITES, "create", "delete"]);

/** A window in which one replica's requests on its leader-election Lease fail. */
interface LeaseOutage {
  actor: string;
  namespace: string;
  name: string;
  until: number;
}

/**
 * A window in which operator replica `actor` (every replica when undefined) cannot reach the API
 * server: partitioned (`none`: no answer) or the server down (`refused`).
 */
interface Cut {
  actor?: string;
  until: number;
  answer: "none" | "refused";
}

/** Decides faults for requests, watches and Deployments. */
export class FaultInjector implements FaultSource {
  /** Random faults fire only while active (the safety phase). */
  active = true;
  /** Told when a timed Deployment fault ends, so the Deployment controller looks again then. */
  onTimedEnd?: (atMs: number) => void;
  readonly rules: ApiErrorRule[] = [];
  readonly #failing = new Map<string, { until: number; message: string }>();
  readonly #slow = new Map<string, boolean>();
  readonly #targetedFailures: { target: Target; message: string }[] = [];
  readonly #targetedSlow: { target: Target; delayMs: number }[] = [];
  readonly #api: Prng;
  readonly #watches: Prng;
  readonly #deploys: Prng;
  readonly #slowWrites: Prng;
  readonly #leases: Prng;
  readonly #outages: LeaseOutage[] = [];
  readonly #cuts: Cut[] = [];
  readonly #listOutages: { kind: string; until: number }[] = [];
  /** Until when the aggregator cannot reach the Services' Pods (virtual time). */
  #unreachableUntil = 0;
  /** Until when cluster DNS answers nothing, and since when (virtual time). */
  #dnsDownUntil = 0;
  #dnsDownSince = 0;

  constructor(readonly config: FaultConfig, prng: Prng, readonly now: () => number) {
    this.#api = prng.fork("api");
    this.#watches = prng.fork("watches");
    this.#deploys = prng.fork("deployments");
    this.#slowWrites = prng.fork("slow-writes");
    this.#leases = prng.fork("lease-outages");
  }

  /**
   * Makes every request of `actor` on the Lease `namespace/name` fail (a 500 or no answer) until
   * virtual time `until`, while random faults are active: the holder cannot renew and must step down.
   */
  loseLease(actor: string, namespace: string, name: string, until: number): void {
    this.#outages.push({ actor, namespace, name, until });
  }

  /**
   * Cuts operator replica `actor` (every replica when undefined) off the API server until virtual
   * time `until`, while active, watches included: partitioned (`none`: each request goes
   * unanswered, nothing is done, the client gives up after 1 to 5 s) or the server down
   * (`refused`: each request refused at once). Open watches are the caller's to stall or end.
   */
  cutOff(actor: string | undefined, until: number, answer: Cut["answer"]): void {
    this.#cuts.push({ ...(actor ? { actor } : {}), until, answer });
  }

  /** Makes every list of `kind` by the operator fail until virtual time `until`, while active. */
  failLists(kind: string, until: number): void {
    this.#listOutages.push({ kind, until });
  }

  /** Makes the aggregator's discovery checks fail until virtual time `until`, while active. */
  cutMetricsPath(until: number): void {
    this.#unreachableUntil = Math.max(this.#unreachableUntil, until);
  }

  /** Makes cluster DNS answer nothing until virtual time `until`, while active. */
  cutClusterDns(until: number): void {
    if (!this.clusterDnsDown()) this.#dnsDownSince = this.now();
    this.#dnsDownUntil = Math.max(this.#dnsDownUntil, until);
  }

  /** Whether cluster DNS answers nothing now. */
  clusterDnsDown(): boolean {
    return this.active && this.now() < this.#dnsDownUntil;
  }

  /** Since when cluster DNS has answered nothing, without a break; undefined while it answers. */
  clusterDnsDownSince(): number | undefined {
    return this.clusterDnsDown() ? this.#dnsDownSince : undefined;
  }

  /** AggregatorBehaviour: the error of a discovery request to `url` now, if it cannot be reached. */
  discoveryError(_namespace: string, _name: string, url: string): string | undefined {
    if (!this.active || this.now() >= this.#unreachableUntil) return undefined;
    return `Get "${url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`;
  }

  /** FaultSource: the fault for one request, if any. */
  request(
    actor: string,
    verb: RequestVerb,
    type: ResourceType,
    namespace: string | undefined,
    name: string | undefined,
  ): RequestFault | undefined {
    const what = `${type.plural} "${name ?? ""}"`;
    const rule = this.rules.find((r) =>
      r.count > 0 && (r.verb === undefined || r.verb === verb) &&
      matchesTarget(r.target, type.kind, namespace, name)
    );
    if (rule) {
      rule.count--;
      return {
        kind: "error",
        error: injectedError(rule.code, what, rule.retryAfterSeconds, rule.message),
      };
    }
    if (!this.active || !isOperator(actor)) return undefined;
    const cut = this.#cuts.find((c) =>
      c.until > this.now() && (c.actor === undefined || c.actor === actor)
    );
    if (cut?.answer === "refused") {
      return {
        kind: "error",
        error: injectedError(503, what, undefined, "dial tcp: connect: connection refused"),
      };
    }
    if (cut) return { kind: "timeout", executed: false, afterMs: this.#leases.int(1_000, 5_000) };
    if (verb === "watch") return undefined;
    if (
      verb === "list" &&
      this.#listOutages.some((o) => o.kind === type.kind && o.until > this.now())
    ) {
      return {
        kind: "error",
        error: injectedError(
          500,
          what,
          undefined,
          `conversion webhook for ${type.group}/${type.version}, Kind=${type.kind} failed: ` +
            `Post "https://webhook.invalid/convert": context deadline exceeded`,
        ),
      };
    }
    const outage = this.#outages.find((o) =>
      o.actor === actor && o.until > this.now() && type.kind === "Lease" &&
      o.namespace === namespace && o.name === name
    );
    if (outage) {
      return this.#leases.chance(0.5)
        ? {
          kind: "error",
          error: injectedError(500, what, undefined, "etcdserver: request timed out"),
        }
        : { kind: "timeout", executed: false, afterMs: this.#leases.int(1_000, 5_000) };
    }
    const c = this.config;
    const r = this.#api;
    if (WRITES.has(verb) && r.chance(c.conflict)) {
      return { kind: "error", error: injectedError(409, what) };
    }
    if (r.chance(c.throttle)) {
      return { kind: "error", error: injectedError(429, what, r.int(1, 5)) };
    }
    if (r.chance(c.serverError)) return { kind: "error", error: injectedError(500, what) };
    if (r.chance(c.timeout)) {
      return { kind: "timeout", executed: r.chance(0.5), afterMs: r.int(5_000, 30_000) };
    }
    const slow = this.#slowWrites;
    if (ANY_WRITE.has(verb) && slow.chance(c.slowWrite)) {
      return { kind: "slow", delayMs: slow.logUniform(1_000, 15_000) };
    }
    return undefined;
  }

  /** FaultSource: the fault for one new watch, if any. */
  watch(actor: string, _type: ResourceType): WatchFault | undefined {
    if (!this.active || !isOperator(actor)) return undefined;
    const c = this.config;
    const r = this.#watches;
    const after = () => r.logUniform(100, 120_000);
    if (r.chance(c.watchStall)) return { kind: "stall", afterMs: after() };
    if (r.chance(c.watchDrop)) return { kind: "drop", afterMs: after() };
    if (r.chance(c.watchGone)) return { kind: "gone", afterMs: after() };
    return undefined;
  }

  /** FaultSource: how too-old watch versions are reported. */
  goneAs(): "event" | "throw" {
    return this.config.goneAs;
  }

  /** Makes Pods of matching Deployments fail to be created until cleared. */
  failDeployments(target: Target, message: string): void {
    this.#targetedFailures.push({ target, message });
  }

  /** Makes Pods of matching Deployments take `delayMs` to become ready. */
  slowDeployments(target: Target, delayMs: number): void {
    this.#targetedSlow.push({ target, delayMs });
  }

  /** Ends targeted Deployment faults matching `target` (all when undefined). */
  clearDeployments(target?: Target): void {
    const keep = <T extends { target: Target }>(list: T[]) => {
      const left = list.filter((f) => target !== undefined && !sameTarget(f.target, target));
      list.splice(0, list.length, ...left);
    };
    keep(this.#targetedFailures);
    keep(this.#targetedSlow);
  }

  /** DeploymentBehaviour: the creation error while Pods of `d` cannot be created. */
  createFailure(d: KubeObject, creator: string | undefined): string | undefined {
    const { namespace, name, uid } = d.metadata;
    const targeted = this.#targetedFailures.find((f) =>
      matchesTarget(f.target, "Deployment", namespace, name)
    );
    if (targeted) return targeted.message;
    if (!this.active || !creator || !isOperator(creator)) return undefined;
    let f = this.#failing.get(uid!);
    if (!f) {
      const fails = this.#deploys.chance(this.config.replicaFailure);
      f = {
        until: fails ? this.now() + this.#deploys.int(10_000, 120_000) : 0,
        message:
          `pods "${name}-" is forbidden: exceeded quota: compute-resources, requested: pods=1, used: pods=10, limited: pods=10`,
      };
      this.#failing.set(uid!, f);
      if (fails) this.onTimedEnd?.(f.until);
    }
    return this.now() < f.until ? f.message : undefined;
  }

  /** DeploymentBehaviour: readiness delay of a new Pod of `d`, or undefined for the default. */
  readyDelayMs(d: KubeObject): number | undefined {
    const { namespace, name, uid } = d.metadata;
    const targeted = this.#targetedSlow.find((f) =>
      matchesTarget(f.target, "Deployment", namespace, name)
    );
    if (targeted) return targeted.delayMs;
    if (!this.active) return undefined;
    let slow = this.#slow.get(uid!);
    if (slow === undefined) {
      this.#slow.set(uid!, slow = this.#deploys.chance(this.config.slowDeployment));
    }
    return slow ? this.#deploys.logUniform(30_000, 900_000) : undefined;
  }
}
