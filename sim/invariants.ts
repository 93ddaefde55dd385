/**
 * Safety properties checked during every run: on each committed change (who changed what, and
 * what the operator says the mesh's proxies did) and after each event of the driver (the state of
 * the world). A violation is recorded with the virtual time it happened; the run fails on the
 * first one.
 */
import { RESOURCES } from "../src/api/resources.ts";
import type { Condition } from "../src/api/common.ts";
import {
  MANAGED_BY,
  MANAGED_BY_LABEL,
  MODULE_LABEL,
  SCALER_FINALIZER,
  SERVERLESS_FINALIZER,
} from "../src/reconcile/labels.ts";
import { rowOfStatus, type StateRow } from "../src/reconcile/conditions.ts";
import { RATELIMIT_STATES } from "../src/reconcile/ratelimit/mod.ts";
import { SCALER, SCALER_STATES } from "../src/reconcile/scaler/mod.ts";
import { SERVERLESS, SERVERLESS_STATES } from "../src/reconcile/serverless/mod.ts";
import { deploymentReadiness } from "../src/reconcile/module/readiness.ts";
import { DEFAULT_MODULE_NAMESPACE } from "../src/reconcile/module/lifecycle.ts";
import type { KubeObject, ResourceType } from "../src/api/object.ts";
import { type Change, isOperator, type RequestVerb, type SimCluster } from "./cluster/mod.ts";
import { specPart } from "./cluster/json.ts";
import { typeKey } from "./cluster/types.ts";
import { nonGatewaysReached } from "./blast_radius.ts";
import { deepEqual } from "../src/api/json.ts";
import { ACCEPTED_CONDITION } from "../src/reconcile/ratelimit/status.ts";
import { GENERATION_ANNOTATION } from "../src/reconcile/ratelimit/render.ts";
import { DEFAULT_PERIOD_MS } from "../src/api/istiod.ts";
import type { SimIstiod } from "./istiod.ts";
import { KEDA_CLUSTER_OBJECTS, KEDA_DEPLOYMENTS } from "../src/reconcile/scaler/names.ts";
import { DNS_PERIOD_MS, DNS_TIMEOUT_MS, DNS_TRIES } from "../src/controllers/cluster_dns.ts";

/**
 * How old what the operator says of the proxies may be when its status write lands: a round of
 * its poller at most a period before it reconciled ({@link DEFAULT_PERIOD_MS}), the slowest write the
 * faults make (15 s, faults.ts), and 5 s of slack for the requests around it.
 */
export const ACCEPTED_LAG_MS = DEFAULT_PERIOD_MS + 15_000 + 5_000;

/**
 * How late a Scaler's `Ready` may land after the aggregator stopped reporting KEDA's metrics
 * APIService Available: the slowest write the faults make (15 s, faults.ts) and 5 s of slack for
 * the requests around it.
 */
export const METRICS_LAG_MS = 15_000 + 5_000;

/** How late a module's `Ready` may land after one of its Deployments stopped being ready: as {@link METRICS_LAG_MS}. */
const ROLLOUT_LAG_MS = METRICS_LAG_MS;

/** The Deployments a served module object's `Ready` rests on, by kind. */
const MODULE_DEPLOYMENTS: Record<string, readonly string[]> = {
  Serverless: SERVERLESS.deployments,
  Scaler: SCALER.deployments,
};

/** The namespace a module object installs into. */
function moduleNamespace(module: KubeObject): string {
  return module.metadata.namespace ?? DEFAULT_MODULE_NAMESPACE;
}

/**
 * The first Deployment of `module`'s module, in its namespace, that `store` holds not ready, said
 * as `Deployment ns/name (kind: why)`; undefined when every one it holds is ready (one it does not
 * hold is for the liveness checks of what was deleted and must be restored).
 */
export function unreadyDeployment(
  store: SimCluster["store"],
  module: KubeObject,
): string | undefined {
  const namespace = moduleNamespace(module);
  for (const name of MODULE_DEPLOYMENTS[module.kind] ?? []) {
    const d = store.get(RESOURCES.Deployment, namespace, name);
    const r = d && deploymentReadiness(d);
    if (r && r.kind !== "ready") return `Deployment ${namespace}/${name} (${r.kind}: ${r.message})`;
  }
  return undefined;
}

/** When something the checker follows was last as a Ready status needs it. */
interface Seen {
  /** Since when it is so (undefined: not now). */
  since?: number;
  /** When it last was, if it is not now. */
  lastAt?: number;
  /** Why it is not now. */
  why: string;
}

/**
 * How late a Scaler's `Ready` may land after cluster DNS stopped answering: a period of the
 * operator's lookups, their tries, and what {@link METRICS_LAG_MS} allows a write.
 */
export const DNS_LAG_MS = DNS_PERIOD_MS + DNS_TRIES * DNS_TIMEOUT_MS + METRICS_LAG_MS;

/**
 * How long into a cluster DNS outage a Scaler may still show `Ready` when one operator replica led
 * throughout (no crash, restart, lease loss or clock jump since a little before it began): past
 * {@link DNS_LAG_MS}, its status write retried through the faulty API for 20 s more.
 */
export const DNS_STALE_MS = DNS_LAG_MS + 20_000;

/** What the checker asks the simulated world beyond the cluster (sim/simulation.ts gives it). */
export interface CheckedWorld {
  /** Since when cluster DNS has answered nothing, without a break; undefined while it answers. */
  dnsDownSince(): number | undefined;
  /**
   * True when no operator replica crashed, restarted, lost its Lease, was partitioned or jumped its
   * clock since `t`.
   */
  operatorSteadySince(t: number): boolean;
}

/** One broken invariant. */
export interface Violation {
  at: number;
  invariant: string;
  message: string;
}

/** The kinds with a status table, and their tables. */
export const STATUS_TABLES: readonly { type: ResourceType; table: readonly StateRow[] }[] = [
  { type: RESOURCES.Serverless, table: SERVERLESS_STATES },
  { type: RESOURCES.Scaler, table: SCALER_STATES },
  { type: RESOURCES.RateLimit, table: RATELIMIT_STATES },
];

const SINGLETONS = [RESOURCES.Serverless, RESOURCES.Scaler];
/** The types `checkState` reads (the singletons have status tables too). */
const CHECKED_TYPES = new Set(STATUS_TABLES.map((s) => typeKey(s.type)));
const MODULE_FINALIZERS: Record<string, string> = {
  [SERVERLESS_FINALIZER]: "serverless",
  [SCALER_FINALIZER]: "keda",
};

function ref(o: KubeObject): string {
  const ns = o.metadata.namespace;
  return `${o.kind} ${ns ? `${ns}/` : ""}${o.metadata.name}`;
}

/** What a user owns of an object: everything but metadata and status, plus labels and annotations. */
function userPart(o: KubeObject): unknown {
  return {
    ...specPart(o),
    labels: o.metadata.labels ?? {},
    annotations: o.metadata.annotations ?? {},
  };
}

/**
 * The rows of `table` a status shows (its state, and a condition with the row's type, status and
 * reason). A status may show several (Serverless keeps Configured beside Installed); none is invalid.
 */
export function rowsOfStatus(
  table: readonly StateRow[],
  status: { state?: string; conditions?: readonly Condition[] },
): StateRow[] {
  return table.filter((r) => rowOfStatus([r], status) !== undefined);
}

const READS = new Set<RequestVerb>(["get", "list", "watch"]);

/** Where the operator's leader-election Lease lives. */
export interface LeaseSite {
  namespace: string;
  name: string;
}

/** Watches a simulated cluster and records violations of the project's safety invariants. */
export class InvariantChecker {
  readonly violations: Violation[] = [];
  /** uid → the actor that created the object (kept after deletion). */
  readonly #creators = new Map<string, string>();
  #checkedRv = -1;
  /** APIService name → when it was Available, as the aggregator reports it. */
  readonly #apiServices = new Map<string, Seen>();
  /** Deployment `namespace/name` → when it was ready (the definition the module reducers use). */
  readonly #deployments = new Map<string, Seen>();
  /**
   * An object `checkState` reads changed since its last check, or that check found a violation:
   * otherwise the world it checks is the one it found sound, and the check is skipped (most steps
   * only renew a Lease).
   */
  #recheck = true;

  /**
   * `lease`: the leader-election Lease; when given, `checkRequest` holds every operator write to
   * it (feed it the cluster's requests). `istiod`: the mesh's proxies; when given, every status
   * the operator writes for a RateLimit is held against what they held.
   */
  constructor(
    readonly cluster: SimCluster,
    readonly lease?: LeaseSite,
    readonly istiod?: SimIstiod,
    readonly world?: CheckedWorld,
  ) {
    cluster.store.subscribe((c) => this.#onChange(c));
  }

  /**
   * A replica sends a write (other than to the election Lease itself) only while the Lease names
   * it: checked when the request is sent, so a replica that lost the Lease and still writes is
   * caught even if the write would fail. Two replicas that both think they lead fight over every
   * object; the Lease is what makes one of them the writer.
   */
  checkRequest(
    actor: string,
    verb: RequestVerb,
    type: ResourceType,
    namespace: string | undefined,
    name: string | undefined,
  ): void {
    const site = this.lease;
    if (!site || !isOperator(actor) || READS.has(verb)) return;
    if (type.kind === "Lease" && namespace === site.namespace && name === site.name) return;
    const lease = this.cluster.store.get(RESOURCES.Lease, site.namespace, site.name);
    const holder = (lease?.spec as { holderIdentity?: string } | undefined)?.holderIdentity;
    if (holder && `operator/${holder}` === actor) return;
    this.#fail(
      "writes-only-while-leading",
      `${actor} sent ${verb} ${type.kind} ${namespace ? `${namespace}/` : ""}${
        name ?? ""
      } while the Lease ${site.namespace}/${site.name} names ${holder || "no one"}`,
    );
  }

  /** True while nothing was violated. */
  get ok(): boolean {
    return this.violations.length === 0;
  }

  #fail(invariant: string, message: string): void {
    this.violations.push({ at: this.cluster.clock.now(), invariant, message });
  }

  #onChange(c: Change): void {
    if (CHECKED_TYPES.has(c.typeKey)) this.#recheck = true;
    if (c.rtype.kind === "APIService") this.#trackApiService(c);
    if (c.rtype.kind === "Deployment") this.#trackDeployment(c);
    const obj = c.object;
    const uid = obj.metadata.uid!;
    if (c.type === "ADDED") this.#creators.set(uid, c.actor);
    if (!isOperator(c.actor)) return;
    const creator = this.#creators.get(uid) ?? "unknown";
    const ownedByOperator = isOperator(creator);
    if (c.verb === "delete" && !ownedByOperator) {
      this.#fail(
        "operator-deletes-only-its-own",
        `${c.actor} deleted ${ref(obj)}, created by ${creator}`,
      );
    }
    if (
      c.type === "MODIFIED" && c.old && !ownedByOperator &&
      !deepEqual(userPart(c.old), userPart(obj))
    ) {
      this.#fail(
        "user-spec-unchanged",
        `${c.actor} changed ${ref(obj)} (created by ${creator}) outside status and finalizers`,
      );
    }
    if (c.old) this.#checkFinalizerRemoval(c.old, c.type === "DELETED" ? undefined : obj, c.actor);
    if (c.verb === "delete" && obj.kind === "EnvoyFilter") this.#checkFilterRemoval(obj, c.actor);
    if (obj.kind === "RateLimit" && c.type !== "DELETED" && obj.status !== c.old?.status) {
      this.#checkAccepted(obj, c.actor);
    }
    if (
      (obj.kind === "Scaler" || obj.kind === "Serverless") && c.type !== "DELETED" &&
      obj.status !== c.old?.status
    ) this.#checkModuleReady(obj, c.actor);
    if (obj.kind === "Scaler" && c.type !== "DELETED" && obj.status !== c.old?.status) {
      this.#checkScalerReady(obj, c.actor);
      this.#checkScalerDnsWrite(obj, c.actor);
    }
  }

  /** Records in `seen` under `key` whether it is so now (`why` not, when not). */
  #track(seen: Map<string, Seen>, key: string, why: string | undefined): void {
    const now = this.cluster.clock.now();
    const prev = seen.get(key);
    const lastAt = prev?.since !== undefined ? now : prev?.lastAt;
    seen.set(
      key,
      why === undefined ? { since: prev?.since ?? now, lastAt, why: "" } : { lastAt, why },
    );
  }

  /** Records when each APIService is Available, as the aggregator reports it. */
  #trackApiService(c: Change): void {
    const available = c.type === "DELETED" ? undefined : (c.object.status as
      | { conditions?: Condition[] }
      | undefined)?.conditions?.find((x) => x.type === "Available");
    const why = available?.status === "True"
      ? undefined
      : c.type === "DELETED"
      ? "deleted"
      : available
      ? `${available.status}/${available.reason}`
      : "no Available condition";
    this.#track(this.#apiServices, c.object.metadata.name, why);
  }

  /** Records when each Deployment is ready, as the module reducers define it. */
  #trackDeployment(c: Change): void {
    const { namespace, name } = c.object.metadata;
    const r = c.type === "DELETED" ? undefined : deploymentReadiness(c.object);
    const why = r?.kind === "ready" ? undefined : r ? `${r.kind}: ${r.message}` : "deleted";
    this.#track(this.#deployments, `${namespace}/${name}`, why);
  }

  /**
   * A served module object is written `Ready` only while each Deployment of its module in its
   * namespace is ready, or was less than {@link ROLLOUT_LAG_MS} before (the write was under way;
   * time the clock jumped over does not count): `Ready` says the module's workloads run.
   */
  #checkModuleReady(module: KubeObject, actor: string): void {
    const status = module.status as { state?: string; served?: string } | undefined;
    if (status?.state !== "Ready" || status.served !== "True") return;
    const namespace = moduleNamespace(module);
    for (const name of MODULE_DEPLOYMENTS[module.kind] ?? []) {
      const seen = this.#deployments.get(`${namespace}/${name}`);
      if (seen?.since !== undefined) continue;
      if (seen?.lastAt !== undefined && this.#ranSince(seen.lastAt) <= ROLLOUT_LAG_MS) continue;
      this.#fail(
        "module-ready-needs-rollout",
        `${actor} wrote ${ref(module)} Ready while Deployment ${namespace}/${name} is not ready (${
          seen?.why ?? "never seen"
        }) and ${
          seen?.lastAt === undefined ? "never was" : `was not for ${this.#ago(seen.lastAt)}`
        }`,
      );
      return;
    }
  }

  /**
   * A Scaler is written `Ready` only while the aggregator reports the APIService of KEDA's metrics
   * server, pointing at the Scaler's namespace, Available, or did so less than
   * {@link METRICS_LAG_MS} before (the write was under way; time the clock jumped over does not
   * count): KEDA whose metrics API cannot be reached does not do its job, and `Ready` would hide
   * it (issue 44).
   */
  #checkScalerReady(scaler: KubeObject, actor: string): void {
    if ((scaler.status as { state?: string } | undefined)?.state !== "Ready") return;
    const name = KEDA_CLUSTER_OBJECTS.apiService;
    const api = this.cluster.store.get(RESOURCES.APIService, undefined, name);
    const service = (api?.spec as { service?: { name?: string; namespace?: string } } | undefined)
      ?.service;
    const points = service?.name === KEDA_DEPLOYMENTS.metricServer &&
      service.namespace === scaler.metadata.namespace;
    const seen = this.#apiServices.get(name);
    if (points && seen?.since !== undefined) return;
    // Available less than the lag before: a write under way, also when the APIService has been
    // deleted since (sweep seed 4304484: deleted 24 ms before the status write landed).
    const recent = seen?.lastAt !== undefined && this.#ranSince(seen.lastAt) <= METRICS_LAG_MS;
    if ((points || !api) && recent) return;
    this.#fail(
      "scaler-ready-needs-metrics-api",
      `${actor} wrote ${ref(scaler)} Ready while APIService ${name} ${
        !api
          ? "does not exist"
          : !points
          ? `points at ${service?.namespace}/${service?.name}`
          : `is not Available (${seen?.why ?? "never judged"}) and ${
            seen?.lastAt === undefined ? "never was" : `was not for ${this.#ago(seen.lastAt)}`
          }`
      }`,
    );
  }

  /**
   * A Scaler is written `Ready` only while cluster DNS answers, or stopped less than
   * {@link DNS_LAG_MS} before, not counting time the clock jumped over: KEDA's metrics server
   * reaches KEDA's operator by name, so KEDA does not serve metrics without DNS, and `Ready` would
   * hide it (issue 44).
   */
  #checkScalerDnsWrite(scaler: KubeObject, actor: string): void {
    if ((scaler.status as { state?: string } | undefined)?.state !== "Ready") return;
    const since = this.world?.dnsDownSince();
    if (since === undefined) return;
    // The lag is the operator's lookup period and tries, counted in time its timers could fire: a
    // clock jump (a paused VM, an NTP step) passes with no lookup and no timeout (seed 5204852).
    if (this.#ranSince(since) <= DNS_LAG_MS) return;
    this.#fail(
      "scaler-ready-needs-cluster-dns",
      `${actor} wrote ${ref(scaler)} Ready while cluster DNS has answered nothing for ${
        this.#ago(since)
      }`,
    );
  }

  /**
   * Virtual milliseconds that ran since `t`, not counting time the clock jumped over: a lag that
   * allows for a write under way or a lookup's period is time the operator's timers could fire in,
   * and no timer fires inside a jump (a paused VM, an NTP step).
   */
  #ranSince(t: number): number {
    return this.cluster.clock.now() - t - this.cluster.clock.jumpedSince(t);
  }

  /** How long ago `t` was, for a message: "N ms", and how much of it was a clock jump. */
  #ago(t: number): string {
    const jumped = this.cluster.clock.jumpedSince(t);
    return `${this.cluster.clock.now() - t} ms${
      jumped > 0 ? ` (${jumped} ms of it a clock jump)` : ""
    }`;
  }

  /**
   * Checked {@link DNS_STALE_MS} into a cluster DNS outage (chaos.ts schedules it): no Scaler shows
   * `Ready` then, unless the operator was disrupted meanwhile (a replica that just took over may
   * not have looked DNS up yet) or the outage ended or began again since.
   */
  checkScalerDuringDnsOutage(): void {
    const since = this.world?.dnsDownSince();
    const now = this.cluster.clock.now();
    if (since === undefined || now - since < DNS_STALE_MS) return;
    if (!this.world!.operatorSteadySince(since - DNS_LAG_MS)) return;
    for (const scaler of this.cluster.store.objects(RESOURCES.Scaler)) {
      if ((scaler.status as { state?: string } | undefined)?.state !== "Ready") continue;
      this.#fail(
        "scaler-ready-needs-cluster-dns",
        `${ref(scaler)} still shows Ready ${now - since} ms into a cluster DNS outage, the ` +
          `operator undisturbed since before it began`,
      );
    }
  }

  /**
   * What the operator says the proxies did with a RateLimit's filter is what they did: when it
   * writes `Accepted=True`, every proxy its filter reaches held, at some moment of the last
   * {@link ACCEPTED_LAG_MS} of running time (a clock jump inside it widens it), the RateLimit's
   * filter (by owner uid) rendered from the generation the status says is enforced
   * (`enforcedGeneration`), among the filters of the push it had acknowledged, which the proxy
   * model knows exactly; when it writes `Accepted=False` (ProxyRejected), the message names a proxy
   * that was rejecting in that time. The lag is what the operator's knowledge may have (its
   * poller's period, a slow write); a Pod younger than that is not judged, as the operator may not
   * know it yet.
   */
  #checkAccepted(rl: KubeObject, actor: string): void {
    const istiod = this.istiod;
    const conditions = (rl.status as { conditions?: Condition[] } | undefined)?.conditions;
    const accepted = conditions?.find((x) => x.type === ACCEPTED_CONDITION);
    if (!istiod || !accepted) return;
    const rejected = accepted.status === "False" && accepted.reason === "ProxyRejected";
    if (accepted.status !== "True" && !rejected) return;
    const { namespace, name } = rl.metadata;
    const filter = this.cluster.store.get(RESOURCES.EnvoyFilter, namespace, name);
    if (!filter || filter.metadata.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY) return;
    const now = this.cluster.clock.now();
    // The lag is running time: a clock jump inside it (no poll, no push in it) widens the window.
    const from = this.cluster.clock.ranFrom(ACCEPTED_LAG_MS);
    const reached = istiod.reachedBy(filter);
    const within = `in the last ${ACCEPTED_LAG_MS / 1000} s the clock ran${
      now - from > ACCEPTED_LAG_MS
        ? ` (${now - from - ACCEPTED_LAG_MS} ms of clock jumps inside)`
        : ""
    }`;
    if (rejected) {
      const named = reached.filter((p) => accepted.message.includes(`${p.pod.name} rejected the`));
      if (!named.some((p) => p.rejectingWithin(from, now))) {
        this.#fail(
          "rejected-names-a-rejecting-proxy",
          `${actor} says a proxy rejected ${ref(rl)}'s filter, but ${
            named.length === 0
              ? "names no proxy of a Pod the filter reaches"
              : `none it names was rejecting ${within} (${
                named.map((p) => `${p.key}: ${p.standing}`).join(", ")
              })`
          }: ${accepted.message}`,
        );
      }
      return;
    }
    // The generation the status is about: the one it says is enforced, else the filter's own.
    const claimed = (rl.status as { enforcedGeneration?: number }).enforcedGeneration;
    const generation = claimed !== undefined
      ? String(claimed)
      : filter.metadata.annotations?.[GENERATION_ANNOTATION] ?? "";
    const key = `${namespace}/${name}`;
    for (const p of reached) {
      if (p.createdAt > from) continue;
      if (p.heldGenerationWithin(key, rl.metadata.uid, generation, from, now)) continue;
      this.#fail(
        "accepted-means-held",
        `${actor} says ${
          ref(rl)
        } is Accepted, but the proxy of Pod ${p.key} (${p.standing}) did not hold EnvoyFilter ${key} rendered from generation ${generation}${
          claimed !== undefined ? ", the one its status says is enforced," : ""
        } ${within}`,
      );
      return;
    }
  }

  /**
   * The operator removes a RateLimit's EnvoyFilter only when the RateLimit is going, an older
   * RateLimit of the namespace may claim its Pods, or (in the root namespace) it reaches a Pod that
   * is not a gateway: a refused update must never drop the limit
   * of the last good generation (docs/design.md). Whether the older one really selects the same Pods
   * is the reducer's business; without an older one there is no reason at all.
   */
  #checkFilterRemoval(filter: KubeObject, actor: string): void {
    const { namespace, name } = filter.metadata;
    const owner = filter.metadata.ownerReferences?.find((o) => o.kind === "RateLimit");
    const rl = this.cluster.store.get(RESOURCES.RateLimit, namespace, name);
    if (!rl || rl.metadata.deletionTimestamp || (owner && owner.uid !== rl.metadata.uid)) return;
    // A root-namespace filter that reaches a workload must go, whatever else holds.
    const selector = (filter.spec as { workloadSelector?: { labels?: Record<string, string> } })
      ?.workloadSelector?.labels;
    if (nonGatewaysReached(this.cluster.store, namespace, selector, true).length > 0) return;
    const created = rl.metadata.creationTimestamp ?? "";
    const older = this.cluster.store.objects(RESOURCES.RateLimit, namespace).some((p) =>
      p.metadata.name !== name && !p.metadata.deletionTimestamp &&
      ((p.metadata.creationTimestamp ?? "") < created ||
        ((p.metadata.creationTimestamp ?? "") === created && p.metadata.name < name))
    );
    if (!older) {
      this.#fail(
        "last-good-kept",
        `${actor} deleted ${ref(filter)} while ${
          ref(rl)
        } exists and no older RateLimit claims its Pods`,
      );
    }
  }

  /** A module finalizer leaves a served module object only once none of the module's objects is left. */
  #checkFinalizerRemoval(before: KubeObject, after: KubeObject | undefined, actor: string): void {
    const served = (before.status as { served?: string } | undefined)?.served === "True";
    if (!served) return;
    for (const [finalizer, module] of Object.entries(MODULE_FINALIZERS)) {
      const had = before.metadata.finalizers?.includes(finalizer);
      const has = after?.metadata.finalizers?.includes(finalizer) ?? false;
      if (!had || has) continue;
      const left = this.installedObjects(module);
      if (left.length > 0) {
        this.#fail(
          "finalizer-after-cleanup",
          `${actor} removed ${finalizer} from ${
            ref(before)
          } while ${left.length} installed object(s) remain, e.g. ${ref(left[0])}`,
        );
      }
    }
  }

  /**
   * Objects the operator installed for `module` (`serverless`, `keda`, `ratelimit`) that still
   * exist: the module's labels, created by the operator (a user's object with the labels is not).
   */
  installedObjects(module: string): KubeObject[] {
    const store = this.cluster.store;
    return store.types.all().flatMap((t) =>
      store.objects(t).filter((o) =>
        o.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY &&
        o.metadata.labels?.[MODULE_LABEL] === module &&
        isOperator(store.creatorOf(o.metadata.uid!) ?? "")
      )
    );
  }

  /** Checks the state of the world; cheap when nothing changed since the last check. */
  checkState(): void {
    const store = this.cluster.store;
    if (store.rv === this.#checkedRv) return;
    this.#checkedRv = store.rv;
    if (!this.#recheck) return;
    const known = this.violations.length;
    for (const type of SINGLETONS) {
      const served = store.objects(type).filter((o) =>
        (o.status as { served?: string } | undefined)?.served === "True"
      );
      if (served.length > 1) {
        this.#fail(
          "one-served-singleton",
          `${served.length} served ${type.kind} objects: ${served.map(ref).join(", ")}`,
        );
      }
    }
    for (const { type, table } of STATUS_TABLES) {
      for (const o of store.objects(type)) {
        const status = o.status as { state?: string; conditions?: Condition[] } | undefined;
        if (status === undefined || Object.keys(status).length === 0) continue;
        if (rowsOfStatus(table, status).length === 0) {
          const conds = (status.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}`)
            .join(", ");
          this.#fail(
            "status-is-a-table-row",
            `${ref(o)} has state ${
              JSON.stringify(status.state)
            } with conditions [${conds}]: not a row of the ${type.kind} table`,
          );
        }
      }
    }
    this.#recheck = this.violations.length > known;
  }
}
