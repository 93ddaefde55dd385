/**
 * What the world must look like once the operator has converged after a generated workload
 * (liveness): the outcome of every object follows from how it was generated (its validity label),
 * its age and its peers, as docs/design.md decides; the first difference is returned. A refused
 * RateLimit may still enforce its last good generation: the status history says which. A limit in
 * force is Accepted once the mesh's proxies (sim/istiod.ts) all hold it.
 */
import { RESOURCES } from "../src/api/resources.ts";
import { SCALER_MODULE } from "../src/controllers/scaler.ts";
import { SERVERLESS_MODULE } from "../src/controllers/serverless.ts";
import type { Condition } from "../src/api/common.ts";
import type { KubeObject, ResourceType } from "../src/api/object.ts";
import { claimName } from "../src/reconcile/module/claim.ts";
import { ownerLabelValue } from "../src/reconcile/labels.ts";
import { rowsOfStatus, STATUS_TABLES, unreadyDeployment } from "./invariants.ts";
import { OPERATOR_NAMESPACE } from "./operator.ts";
import { offset } from "./trace.ts";
import type { Simulation } from "./simulation.ts";
import { VALIDITY_LABEL } from "./workload.ts";
import { GENERATION_ANNOTATION } from "../src/reconcile/ratelimit/render.ts";
import { nonGatewaysReached } from "./blast_radius.ts";
import { modeAndRateProblem } from "./oracle_rates.ts";
import { ACCEPTED_CONDITION } from "../src/reconcile/ratelimit/status.ts";

interface ModuleRule {
  type: ResourceType;
  module: string;
  /** States a served object with a valid spec may show, and the reason its row has. */
  ready: string[];
  readyReason: string;
  invalidReason: string;
  duplicateReason: string;
  /** User objects that block deletion (the controller's own list). */
  blockers: readonly ResourceType[];
}

const MODULES: ModuleRule[] = [
  {
    type: RESOURCES.Serverless,
    module: "serverless",
    ready: ["Ready"],
    readyReason: "Installed",
    invalidReason: "ConfigurationCheckErr",
    duplicateReason: "ServerlessDuplicated",
    blockers: SERVERLESS_MODULE.userTypes,
  },
  {
    type: RESOURCES.Scaler,
    module: "keda",
    // Warning with Verified (part of the spec dropped), not MetricsAPIUnavailable: once faults
    // stop the aggregator reaches KEDA's metrics server.
    ready: ["Ready", "Warning"],
    readyReason: "Verified",
    invalidReason: "ValidationErr",
    duplicateReason: "KedaDuplicated",
    blockers: SCALER_MODULE.userTypes,
  },
];

type Status = {
  state?: string;
  served?: string;
  observedGeneration?: number;
  conditions?: Condition[];
} | undefined;

function ref(o: KubeObject): string {
  return `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`;
}

function show(s: Status): string {
  const conds = (s?.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}`).join(", ");
  return `state ${s?.state ?? "(none)"}, served ${s?.served ?? "(none)"}, conditions [${conds}]`;
}

function hasReason(s: Status, reason: string): boolean {
  return (s?.conditions ?? []).some((c) => c.reason === reason);
}

/**
 * The status must be computed from the current generation: some table row it shows is decided by a
 * condition of the current generation (older conditions may stay beside it: docs/design.md calls them out
 * of date, which their observedGeneration says).
 */
function stale(o: KubeObject, s: Status): string | undefined {
  const gen = o.metadata.generation;
  if (!s?.state) return `${ref(o)}: no status yet`;
  if (s.observedGeneration !== undefined) {
    return s.observedGeneration === gen
      ? undefined
      : `${ref(o)}: status (${
        show(s)
      }) is for generation ${s.observedGeneration}, the object is at ${gen}`;
  }
  const table = STATUS_TABLES.find((t) => t.type.kind === o.kind)?.table ?? [];
  const current = rowsOfStatus(table, s).some((row) =>
    (s.conditions ?? []).some((c) =>
      c.type === row.type && c.reason === row.reason &&
      (c.observedGeneration === undefined || c.observedGeneration === gen)
    )
  );
  return current
    ? undefined
    : `${ref(o)}: no condition of generation ${gen} decides its status (${show(s)})`;
}

function byAge(a: KubeObject, b: KubeObject): number {
  const ta = a.metadata.creationTimestamp ?? "";
  const tb = b.metadata.creationTimestamp ?? "";
  return ta < tb ? -1 : ta > tb ? 1 : a.metadata.name < b.metadata.name ? -1 : 1;
}

function judgeModules(sim: Simulation): string | undefined {
  const store = sim.cluster.store;
  for (const m of MODULES) {
    const objs = store.objects(m.type);
    const served = objs.filter((o) => (o.status as Status)?.served === "True");
    for (const o of objs) {
      const s = o.status as Status;
      if (o.metadata.deletionTimestamp) {
        // While deletion is blocked only the Deleted condition is kept current.
        const blocked = m.blockers.some((t) =>
          store.types.serves(t) && store.objects(t).length > 0
        );
        if (!blocked) return `${ref(o)}: still being deleted though nothing blocks it (${show(s)})`;
        const deleted = s?.conditions?.find((c) => c.type === "Deleted");
        if (s?.state !== "Error" || deleted?.reason !== "DeletionErr") {
          return `${ref(o)}: deletion is blocked by user objects, expected Error/DeletionErr, got ${
            show(s)
          }`;
        }
        if (deleted.observedGeneration !== o.metadata.generation) {
          return `${
            ref(o)
          }: condition Deleted is for generation ${deleted.observedGeneration}, the object is at ${o.metadata.generation}`;
        }
        continue;
      }
      const problem = stale(o, s);
      if (problem) return problem;
      const valid = o.metadata.labels?.[VALIDITY_LABEL] !== "invalid";
      if (s?.served === "True") {
        // A rollout may be under way when faults stop (a Deployment someone deleted, back with new
        // Pods): the module is not Ready before it ends, and the run has not converged.
        const unready = valid ? unreadyDeployment(store, o) : undefined;
        if (unready) return `${ref(o)}: valid and served, but ${unready} is not rolled out yet`;
        if (valid && !(m.ready.includes(s.state ?? "") && hasReason(s, m.readyReason))) {
          return `${ref(o)}: valid and served, expected state ${
            m.ready.join(" or ")
          } with reason ${m.readyReason}, got ${show(s)}`;
        }
        if (!valid && !(s.state === "Error" && hasReason(s, m.invalidReason))) {
          return `${ref(o)}: invalid and served, expected Error/${m.invalidReason}, got ${show(s)}`;
        }
      } else if (!(s?.state === "Error" && hasReason(s, m.duplicateReason))) {
        return `${ref(o)}: not served, expected Error/${m.duplicateReason}, got ${show(s)}`;
      }
    }
    if (objs.length > 0 && served.length !== 1) {
      return `${m.type.kind}: ${served.length} served objects among ${objs.length}`;
    }
    const claimMissing = served.length === 1 && !served[0].metadata.deletionTimestamp &&
      claimProblem(sim, m.module, served[0]);
    if (claimMissing) return claimMissing;
    if (objs.length === 0) {
      const left = sim.checker.installedObjects(m.module);
      if (left.length > 0) {
        return `${m.type.kind}: none left, but ${left.length} installed object(s) remain, e.g. ${
          ref(left[0])
        }`;
      }
    }
  }
  return undefined;
}

function judgeRateLimits(sim: Simulation): string | undefined {
  const store = sim.cluster.store;
  const filters = store.types.serves(RESOURCES.EnvoyFilter)
    ? store.objects(RESOURCES.EnvoyFilter)
    : [];
  // First the blast radius: a filter of the root namespace reaching a workload throttles it.
  for (const f of filters) {
    const selector = (f.spec as { workloadSelector?: { labels?: Record<string, string> } })
      ?.workloadSelector?.labels;
    const strays = nonGatewaysReached(store, f.metadata.namespace, selector);
    if (strays.length > 0) {
      return `EnvoyFilter ${f.metadata.namespace}/${f.metadata.name} in the mesh's root namespace reaches ${
        strays.join(", ")
      }, which ${strays.length === 1 ? "is not an ingress gateway" : "are not ingress gateways"}`;
    }
  }
  const limits = store.objects(RESOURCES.RateLimit).filter((o) => !o.metadata.deletionTimestamp);
  const groups = new Map<string, KubeObject[]>();
  for (const rl of limits) {
    const key = `${rl.metadata.namespace} ${
      JSON.stringify((rl.spec as { selectorLabels: unknown }).selectorLabels)
    }`;
    groups.set(key, [...(groups.get(key) ?? []), rl]);
  }
  /** `namespace/name` → the generation its filter must have been rendered from. */
  const applied = new Map<string, number | undefined>();
  for (const group of groups.values()) {
    group.sort(byAge);
    for (const [i, rl] of group.entries()) {
      const s = rl.status as Status;
      const problem = stale(rl, s);
      if (problem) return problem;
      const valid = rl.metadata.labels?.[VALIDITY_LABEL] !== "invalid";
      const selector = (rl.spec as { selectorLabels?: Record<string, string> }).selectorLabels;
      const meshWide = nonGatewaysReached(store, rl.metadata.namespace, selector).length > 0;
      const want = !valid ? "InvalidSpec" : meshWide ? "MeshWide" : i > 0 ? "Conflict" : "Applied";
      if (!hasReason(s, want)) return `${ref(rl)}: expected reason ${want}, got ${show(s)}`;
      const key = `${rl.metadata.namespace}/${rl.metadata.name}`;
      if (want === "Applied") applied.set(key, rl.metadata.generation);
      else {
        const kept = keptGeneration(sim, rl, i);
        if (typeof kept === "string") return kept;
        if (kept !== undefined) applied.set(key, kept);
      }
    }
  }
  for (const [key, generation] of applied) {
    const f = filters.find((f) => `${f.metadata.namespace}/${f.metadata.name}` === key);
    if (!f) return `EnvoyFilter ${key}: missing for an enforced RateLimit`;
    const rendered = f.metadata.annotations?.[GENERATION_ANNOTATION];
    if (rendered !== String(generation)) {
      return `EnvoyFilter ${key}: rendered from generation ${rendered}, the status says ${generation}`;
    }
    const rl = limits.find((o) => `${o.metadata.namespace}/${o.metadata.name}` === key);
    const problem = rl && modeAndRateProblem(rl, f);
    if (problem) return problem;
  }
  for (const f of filters) {
    const key = `${f.metadata.namespace}/${f.metadata.name}`;
    if (!applied.has(key)) {
      return `EnvoyFilter ${key}: exists, but no RateLimit ${key} enforces it`;
    }
  }
  return undefined;
}

/**
 * The generation a refused RateLimit (the `i`-th oldest of those selecting its Pods) still
 * enforces, per its status; a message when that cannot be: only the oldest may hold the Pods,
 * and only an earlier generation of the same object generated valid can be kept.
 */
function keptGeneration(sim: Simulation, rl: KubeObject, i: number): number | string | undefined {
  const g = (rl.status as { enforcedGeneration?: number } | undefined)?.enforcedGeneration;
  if (g === undefined) return undefined;
  if (i > 0) return `${ref(rl)}: keeps generation ${g} though an older RateLimit selects its Pods`;
  const labels = sim.generationLabels.get(`${rl.metadata.uid}/${g}`);
  if (g >= (rl.metadata.generation ?? 0) || labels?.[VALIDITY_LABEL] !== "valid") {
    return `${
      ref(rl)
    }: says generation ${g} is enforced, but that generation was not a valid earlier one (${
      JSON.stringify(labels ?? null)
    })`;
  }
  return g;
}

function judgeWorkloads(sim: Simulation): string | undefined {
  for (const [ns, name] of [["demo", "httpbin"], ["mesh-system", "mesh-ingressgateway"]]) {
    const d = sim.cluster.store.get(RESOURCES.Deployment, ns, name);
    if ((d?.status as { readyReplicas?: number } | undefined)?.readyReplicas !== 1) {
      return `Deployment ${ns}/${name}: not ready yet`;
    }
  }
  return undefined;
}

/** A served module object holds its module's claim Lease (deleted by someone else: made again). */
function claimProblem(sim: Simulation, module: string, served: KubeObject): string | undefined {
  const name = claimName(module);
  const claim = sim.cluster.store.get(RESOURCES.Lease, OPERATOR_NAMESPACE, name);
  const holder = (claim?.spec as { holderIdentity?: string } | undefined)?.holderIdentity;
  if (claim && holder === served.metadata.uid) return undefined;
  return `${ref(served)} is served, but the claim Lease ${OPERATOR_NAMESPACE}/${name} ${
    claim ? `names ${holder ?? "no one"}` : "is missing"
  }`;
}

/**
 * What someone else deleted of a module's install is back while the module object it was
 * installed for is still served, valid and not being deleted (the operator still wants it).
 */
function judgeRestored(sim: Simulation): string | undefined {
  const store = sim.cluster.store;
  for (const d of sim.ownedDeletions) {
    const m = MODULES.find((x) => x.module === d.module);
    if (!m || !d.owner) continue; // EnvoyFilters and claims: judged with their owners above
    const owner = store.objects(m.type).find((o) =>
      ownerLabelValue(o.metadata) === d.owner && !o.metadata.deletionTimestamp &&
      (o.status as Status)?.served === "True" && o.metadata.labels?.[VALIDITY_LABEL] !== "invalid"
    );
    if (!owner) continue;
    const type = store.types.byKind(d.apiVersion, d.kind);
    const back = type && store.get(type, d.namespace, d.name);
    if (!back || back.metadata.deletionTimestamp) {
      return `${d.kind} ${
        d.namespace ? `${d.namespace}/` : ""
      }${d.name}: deleted by someone else at ${offset(d.at)} and not restored, though ${
        ref(owner)
      } is served`;
    }
  }
  return undefined;
}

/**
 * Every RateLimit whose filter is in force and held by every proxy it reaches (connected, its last
 * answer an ACK, the filter's limits in what it holds) is Accepted. With `waitForProxies` (the
 * sweep, where faults stop and every proxy connects and takes istiod's next push), a proxy that
 * does not hold them yet is itself a difference; without (a scenario, which may leave a proxy
 * rejecting another team's filter on purpose), such a RateLimit is not judged.
 */
export function acceptedViolation(sim: Simulation, waitForProxies = true): string | undefined {
  const store = sim.cluster.store;
  if (!store.types.serves(RESOURCES.EnvoyFilter)) return undefined;
  for (const rl of store.objects(RESOURCES.RateLimit)) {
    if (rl.metadata.deletionTimestamp) continue;
    const { namespace, name } = rl.metadata;
    const filter = store.get(RESOURCES.EnvoyFilter, namespace, name);
    const reached = filter ? sim.istiod.reachedBy(filter) : [];
    if (!filter || reached.length === 0) continue;
    const waiting = reached.find((p) =>
      p.standing !== "accepted" || p.limits !== sim.istiod.limitsOf(filter, p)
    );
    if (waiting && !waitForProxies) continue;
    if (waiting) {
      return `the proxy of Pod ${waiting.key} is ${waiting.standing} and does not hold EnvoyFilter ${namespace}/${name}'s limits yet`;
    }
    const s = rl.status as Status;
    const accepted = s?.conditions?.find((c) => c.type === ACCEPTED_CONDITION);
    if (accepted?.status !== "True") {
      return `${ref(rl)}: every proxy it reaches holds its limits, expected Accepted=True, got ${
        show(s)
      }`;
    }
  }
  return undefined;
}

/** The first way the world differs from the converged outcome; undefined when it is converged. */
export function violationOf(sim: Simulation): string | undefined {
  return judgeWorkloads(sim) ?? judgeModules(sim) ?? judgeRateLimits(sim) ??
    acceptedViolation(sim) ??
    judgeRestored(sim);
}
