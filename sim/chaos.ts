/**
 * Faults that hit the operator as a whole rather than one request, scheduled by the swarm at random
 * times of the safety phase: crashes and clock jumps, a crash right after one of its Plan writes
 * (the Plan half carried out), a lost leader Lease (the leader's Lease requests fail for longer
 * than its renew deadline), someone else deleting an object the operator created, in the mesh
 * another team's EnvoyFilter that the proxies refuse and istiod unreachable for the operator, and
 * the aggregator unable to reach KEDA's metrics server (DNS or kube-proxy down).
 */
import { RESOURCES } from "../src/api/resources.ts";
import { ALL_CONTROLLERS } from "../src/controllers/registry.ts";
import {
  MANAGED_BY,
  MANAGED_BY_LABEL,
  MODULE_LABEL,
  OWNER_LABEL,
} from "../src/reconcile/labels.ts";
import { isOperator, type SimClient, type SimCluster, type WriteRecord } from "./cluster/mod.ts";
import { SIM_EPOCH, type SimClock } from "./clock.ts";
import type { FaultConfig, FaultInjector } from "./faults.ts";
import type { SimIstiod } from "./istiod.ts";
import { DNS_STALE_MS, type InvariantChecker } from "./invariants.ts";
import type { KubeObject } from "../src/api/object.ts";
import { LEASE_NAME, OPERATOR_NAMESPACE, type OperatorProcess } from "./operator.ts";
import type { Trace } from "./trace.ts";
import type { Prng } from "./prng.ts";

/** What the chaos schedule drives of a simulation (simulation.ts's Simulation is one). */
interface ChaosTarget {
  readonly prng: Prng;
  readonly clock: SimClock;
  readonly cluster: SimCluster;
  readonly injector: FaultInjector;
  readonly operator: OperatorProcess;
  readonly trace: Trace;
  readonly opts: { readonly faults: FaultConfig };
  readonly ownedDeletions: OwnedDeletion[];
  readonly istiod: SimIstiod;
  readonly checker: InvariantChecker;
  crash(restartAfterMs: number, identity?: string, why?: string): void;
}

/** Who applies the broken EnvoyFilters of the brokenFilters fault. */
export const OTHER_TEAM = "other-team";

/**
 * Another team's EnvoyFilter on the demo workload's inbound routes (or, with `gateway`, on the
 * ingress gateway's routes) merging `rate_limits: [{actions: []}]` into them: Kyma api-gateway#2380's
 * shape, which Envoy refuses (RateLimit.actions: min_items 1), so the proxies reject every push
 * that carries it and keep their previous config.
 */
export function brokenFilter(name: string, gateway: boolean): KubeObject {
  return {
    apiVersion: "networking.istio.io/v1alpha3",
    kind: "EnvoyFilter",
    metadata: { name, namespace: gateway ? "mesh-system" : "demo" },
    spec: {
      workloadSelector: { labels: { app: gateway ? "mesh-ingressgateway" : "httpbin" } },
      configPatches: [{
        applyTo: "HTTP_ROUTE",
        match: {
          context: gateway ? "GATEWAY" : "SIDECAR_INBOUND",
          routeConfiguration: { vhost: { route: { action: "ROUTE" } } },
        },
        patch: { operation: "MERGE", value: { route: { rate_limits: [{ actions: [] }] } } },
      }],
    },
  };
}

/** An operator-created object someone else deleted. */
export interface OwnedDeletion {
  /** Virtual epoch ms of the delete. */
  at: number;
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
  /** MODULE_LABEL and OWNER_LABEL of the object, when it belongs to a module object's install. */
  module?: string;
  owner?: string;
}

/** True for a write the operator makes to carry out a Plan (not its election Lease, not an Event). */
export function isPlanWrite(r: WriteRecord): boolean {
  return isOperator(r.actor) && r.outcome === "changed" && r.kind !== "Event" &&
    !(r.kind === "Lease" && r.namespace === OPERATOR_NAMESPACE && r.name === LEASE_NAME);
}

/**
 * Schedules the swarm's crashes and clock jumps, and its plan crashes, lost leases and deletions
 * of owned objects, at random times before scenario time `until`.
 */
export function scheduleSwarm(sim: ChaosTarget, until: number): void {
  const r = sim.prng.fork("swarm-schedule");
  for (let i = 0; i < sim.opts.faults.crashes; i++) {
    const at = r.int(1_000, Math.max(1_001, until));
    const restart = r.logUniform(500, 20_000);
    sim.clock.schedule(SIM_EPOCH + at - sim.clock.now(), () => {
      if (sim.injector.active && sim.operator.manager) sim.crash(restart);
    });
  }
  for (let i = 0; i < sim.opts.faults.clockJumps; i++) {
    const at = r.int(1_000, Math.max(1_001, until));
    const by = r.logUniform(1_000, 120_000);
    sim.clock.schedule(SIM_EPOCH + at - sim.clock.now(), () => {
      if (!sim.injector.active) return;
      phase(sim, `clock jumps ${by} ms`, true);
      sim.clock.jump(by);
    });
  }
  scheduleChaos(sim, until, sim.prng.fork("chaos-schedule"));
}

/**
 * Schedules the swarm's plan crashes, lease losses, owned-object deletions, istiod outages, broken
 * filters and metrics outages before `until`.
 */
export function scheduleChaos(sim: ChaosTarget, until: number, r: Prng): void {
  const f = sim.opts.faults;
  const at = () => r.int(1_000, Math.max(1_001, until));
  for (let i = 0; i < f.planCrashes; i++) {
    // Counted in Plan writes, not time: the operator is idle most of a run, and a crash while it
    // is idle is just a crash. Mostly early (the first installs), sometimes late.
    const nth = r.logUniform(1, 60);
    const restart = r.logUniform(500, 20_000);
    armPlanCrash(sim, nth, restart);
  }
  for (let i = 0; i < f.leaseLoss; i++) {
    const when = at();
    const forMs = r.logUniform(8_000, 40_000);
    // Half the windows cut the holder off the API server altogether (a partition, as the real
    // node's showed: every request and watch), the others its Lease requests only. Forked, so the
    // other kinds keep their draws.
    const whole = sim.prng.fork(`partition/${i}`).chance(0.5);
    schedule(sim, when, () => whole ? partitionLeader(sim, forMs) : loseLease(sim, forMs));
  }
  let chaos: SimClient | undefined;
  for (let i = 0; i < f.ownedDeletes; i++) {
    const when = at();
    const pick = r.fork(`owned-delete/${i}`);
    schedule(sim, when, () => {
      chaos ??= sim.cluster.client("chaos", { faultFree: true, latency: () => 1 });
      deleteOwned(sim, chaos, pick);
    });
  }
  for (let i = 0; i < f.istiodOutages; i++) {
    const when = at();
    const forMs = r.logUniform(5_000, 120_000);
    schedule(sim, when, () => {
      sim.istiod.unreachable(sim.clock.now() + forMs);
      phase(sim, `istiod unreachable for the operator for ${forMs} ms`);
    });
  }
  let team: SimClient | undefined;
  for (let i = 0; i < f.brokenFilters; i++) {
    const when = at();
    const forMs = r.logUniform(5_000, 90_000);
    const obj = brokenFilter(`${OTHER_TEAM}-${i}`, r.chance(0.5));
    schedule(sim, when, () => {
      team ??= sim.cluster.client(OTHER_TEAM, { faultFree: true, latency: () => 1 });
      const { namespace, name } = obj.metadata;
      phase(sim, `${OTHER_TEAM} applies a broken EnvoyFilter ${namespace}/${name} for ${forMs} ms`);
      const client = team;
      client.apply(RESOURCES.EnvoyFilter, obj, { fieldManager: OTHER_TEAM, force: true })
        .catch(() => {});
      sim.clock.schedule(forMs, () => {
        client.delete(RESOURCES.EnvoyFilter, namespace, name).catch(() => {});
      });
    });
  }
  // Drawn after the older kinds, so an old seed keeps its old schedule of those.
  for (let i = 0; i < f.metricsOutages; i++) {
    const when = at();
    const forMs = r.logUniform(5_000, 120_000);
    schedule(sim, when, () => {
      sim.injector.cutMetricsPath(sim.clock.now() + forMs);
      sim.cluster.aggregator.resync();
      sim.clock.schedule(forMs, () => sim.cluster.aggregator.resync());
      phase(sim, `the aggregator cannot reach KEDA's metrics server for ${forMs} ms`);
    });
  }
  for (let i = 0; i < f.dnsOutages; i++) {
    const when = at();
    const forMs = r.logUniform(5_000, 120_000);
    schedule(sim, when, () => {
      const since = sim.clock.now();
      sim.injector.cutClusterDns(since + forMs);
      phase(sim, `cluster DNS answers nothing for ${forMs} ms`);
      // The Scaler must have left Ready by then, if its leader led throughout.
      sim.clock.schedule(DNS_STALE_MS, () => sim.checker.checkScalerDuringDnsOutage());
    });
  }
  for (let i = 0; i < f.listOutages; i++) {
    const when = at();
    const forMs = r.logUniform(5_000, 180_000);
    const kind = r.pick(WATCHED_KINDS);
    schedule(sim, when, () => {
      sim.injector.failLists(kind, sim.clock.now() + forMs);
      phase(sim, `every list of ${kind} fails for ${forMs} ms`);
    });
  }
}

/** The kinds the operator's controllers watch (primaries and watches), each once, in their order. */
const WATCHED_KINDS: readonly string[] = [
  ...new Set(
    ALL_CONTROLLERS.flatMap((c) => [c.primary, ...c.watches.map((w) => w.type)].map((t) => t.kind)),
  ),
];

function schedule(sim: ChaosTarget, at: number, fn: () => void): void {
  sim.clock.schedule(SIM_EPOCH + at - sim.clock.now(), () => {
    if (sim.injector.active) fn();
  });
}

function phase(sim: Pick<ChaosTarget, "trace" | "clock">, detail: string, disturbs = false): void {
  sim.trace.phase(sim.clock.now(), detail, disturbs);
}

/** Crashes the replica that makes the `nth` Plan write from now, as soon as that write has landed. */
function armPlanCrash(sim: ChaosTarget, nth: number, restartAfterMs: number): void {
  let left = nth;
  const stop = sim.cluster.log.subscribe((w) => {
    if (!sim.injector.active) return stop();
    if (!isPlanWrite(w) || --left > 0) return;
    stop();
    const identity = w.actor.slice("operator/".length);
    const what = `${w.verb} ${w.kind} ${w.namespace ? `${w.namespace}/` : ""}${w.name}`;
    // Before its answer (at least 1 ms away) reaches the replica: it never learns it succeeded.
    sim.clock.schedule(0, () => {
      if (!sim.operator.running.includes(identity)) return;
      sim.crash(restartAfterMs, identity, `right after ${what}`);
    });
  });
}

/** The running replica that holds the election Lease now, if any. */
function leaseHolder(sim: PartitionTarget): string | undefined {
  const lease = sim.cluster.store.get(RESOURCES.Lease, OPERATOR_NAMESPACE, LEASE_NAME);
  const holder = (lease?.spec as { holderIdentity?: string } | undefined)?.holderIdentity;
  return holder && sim.operator.running.includes(holder) ? holder : undefined;
}

/** What a partition of the leader touches. */
export type PartitionTarget = Pick<
  ChaosTarget,
  "cluster" | "clock" | "injector" | "operator" | "trace"
>;

/**
 * The election Lease's holder is cut off the API server for `forMs` (a network partition): its
 * requests go unanswered and its open watches fall silent, so it must step down, and a standby
 * takes over. Returns the holder (undefined when no running replica holds the Lease).
 */
export function partitionLeader(sim: PartitionTarget, forMs: number): string | undefined {
  const holder = leaseHolder(sim);
  if (!holder) return undefined;
  const actor = `operator/${holder}`;
  sim.injector.cutOff(actor, sim.clock.now() + forMs, "none");
  for (const w of sim.cluster.watches) if (w.actor === actor) w.stream.stall();
  phase(sim, `partition: ${holder} cannot reach the API server for ${forMs} ms`, true);
  return holder;
}

/** The election Lease's holder cannot reach it for `forMs`: it must step down. */
function loseLease(sim: ChaosTarget, forMs: number): void {
  const holder = leaseHolder(sim);
  if (!holder) return;
  sim.injector.loseLease(
    `operator/${holder}`,
    OPERATOR_NAMESPACE,
    LEASE_NAME,
    sim.clock.now() + forMs,
  );
  phase(sim, `lease lost: ${holder} cannot reach its Lease for ${forMs} ms`, true);
}

/** Someone else deletes one object the operator created (chosen by `r` among those existing now). */
function deleteOwned(sim: ChaosTarget, chaos: SimClient, r: Prng): void {
  const store = sim.cluster.store;
  const candidates = store.types.all().flatMap((type) =>
    type.kind === "Event"
      ? []
      : store.objects(type).filter((o) =>
        o.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY && !o.metadata.deletionTimestamp &&
        isOperator(store.creatorOf(o.metadata.uid!) ?? "")
      ).map((obj) => ({ type, obj }))
  );
  if (candidates.length === 0) return;
  const { type, obj } = r.pick(candidates);
  const { namespace, name, labels } = obj.metadata;
  sim.ownedDeletions.push({
    at: sim.clock.now(),
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    ...(namespace ? { namespace } : {}),
    name,
    ...(labels?.[MODULE_LABEL] ? { module: labels[MODULE_LABEL] } : {}),
    ...(labels?.[OWNER_LABEL] ? { owner: labels[OWNER_LABEL] } : {}),
  });
  phase(sim, `someone else deletes ${obj.kind} ${namespace ? `${namespace}/` : ""}${name}`);
  chaos.delete(type, namespace, name).catch(() => {});
}
