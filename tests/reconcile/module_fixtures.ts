/**
 * What the module reducers' tests build their inputs from: the World a reducer observes (its object,
 * peers, installed objects and claim), module objects and claims as the API server returns them, and
 * a CacheReader over a fixed list of objects. Plans are carried out on the simulator's store by
 * plans_on_sim_store.ts.
 */
import { type KubeObject, objectKey, type ResourceType } from "../../src/api/object.ts";
import type { CacheReader } from "../../src/runtime/controller_spec.ts";
import type { Plan } from "../../src/reconcile/plan.ts";
import { type ClaimInput, claimLease } from "../../src/reconcile/module/claim.ts";
import { asPeer, servedPeer } from "../../src/reconcile/module/singleton.ts";

/** The module a module object's kind belongs to (the claim's name). */
export function moduleOfKind(kind: string): "serverless" | "keda" {
  if (kind === "Serverless") return "serverless";
  if (kind === "Scaler") return "keda";
  throw new Error(`not a module kind: ${kind}`);
}

/** The observed state a module reducer reads. */
export interface World {
  /** The reconciled module object; undefined once it is gone. */
  object: KubeObject | undefined;
  /** The other objects of the same kind. */
  others: KubeObject[];
  installed: KubeObject[];
  /**
   * The module's claim Lease. Undefined stands for the claim the first passes made: held by the
   * peer the reducer picks (see `claimOf`); null is no claim at all. A World read back from the
   * store after a Plan (plans_on_sim_store.ts) has the stored Lease or null.
   */
  claim?: KubeObject | null;
}

/** A module object (`Serverless`, `Scaler`) as the API server returns it: `default` in platform-system. */
export function moduleObject(
  kind: string,
  spec: Record<string, unknown> = {},
  meta: Partial<KubeObject["metadata"]> = {},
): KubeObject {
  const name = meta.name ?? "default";
  const namespace = meta.namespace ?? "platform-system";
  return {
    apiVersion: "operator.platform-project.io/v1alpha1",
    kind,
    metadata: {
      name,
      namespace,
      uid: `uid-${namespace}-${name}`,
      generation: 1,
      creationTimestamp: "2025-12-01T00:00:00Z",
      ...meta,
    },
    spec,
  };
}

/** The claim Lease of `module` held by `holder`, as the API server stores it. */
export function heldClaim(module: "serverless" | "keda", holder: KubeObject): KubeObject {
  const lease = claimLease({ namespace: "platform-system", module }, holder.metadata);
  return { ...lease, metadata: { ...lease.metadata, uid: `uid-claim-${module}` } };
}

/**
 * The claim input of `module` held by whatever object `raw` is (junk included): what the reducer
 * sees once a pass has claimed for it, so a test can look at the passes after the claim.
 */
export function claimHeldBy(module: "serverless" | "keda", raw: unknown): ClaimInput {
  const site = { namespace: "platform-system", module } as const;
  const peer = asPeer(raw);
  return peer ? { ...site, observed: heldClaim(module, peer as unknown as KubeObject) } : site;
}

/** The claim input of a world (see `World.claim`). */
export function claimOf(module: "serverless" | "keda", w: World): ClaimInput {
  const site = { namespace: "platform-system", module } as const;
  if (w.claim === null) return site;
  if (w.claim) return { ...site, observed: w.claim };
  const pool = [...(w.object ? [w.object] : []), ...w.others];
  const holder = servedPeer(pool.map(asPeer).filter((p) => p !== undefined));
  const raw = holder && pool.find((o) => objectKey(o) === objectKey(holder));
  return raw ? { ...site, observed: heldClaim(module, raw) } : site;
}

/** True when `plan` only claims: creates or deletes the claim Lease, and writes no status. */
export function isClaimingPlan(plan: Plan): boolean {
  const writes = [...(plan.create ?? []), ...plan.delete];
  return plan.status === undefined && plan.apply.length === 0 && writes.length === 1 &&
    writes.every((o) => o.kind === "Lease") && plan.finalizer === undefined;
}

/** A Deployment status as the controller writes it once the rollout is complete. */
export function rolledOut(generation: number): Record<string, unknown> {
  return {
    observedGeneration: generation,
    replicas: 1,
    updatedReplicas: 1,
    readyReplicas: 1,
    availableReplicas: 1,
    conditions: [
      { type: "Available", status: "True", reason: "MinimumReplicasAvailable" },
      { type: "Progressing", status: "True", reason: "NewReplicaSetAvailable" },
    ],
  };
}

/** An APIService's status once the aggregator's checks passed (kube-aggregator's words). */
export function aggregatorAvailable(): Record<string, unknown> {
  return {
    conditions: [{
      type: "Available",
      status: "True",
      reason: "Passed",
      message: "all checks passed",
      lastTransitionTime: "2026-01-01T00:00:00Z",
    }],
  };
}

/** `w` with its module object being deleted (a deletionTimestamp set). */
export function deleting(w: World): World {
  const object = structuredClone(w.object!);
  object.metadata.deletionTimestamp = "2026-01-01T00:00:00Z";
  return { ...w, object };
}

/** A cache over a fixed list of objects, typed by apiVersion and kind. */
export function fakeCache(objects: readonly KubeObject[]): CacheReader {
  const of = (type: ResourceType) =>
    objects.filter((o) =>
      o.kind === type.kind &&
      o.apiVersion === (type.group ? `${type.group}/${type.version}` : type.version)
    ).sort((a, b) => objectKey(a).localeCompare(objectKey(b)));
  return {
    list: (type, namespace) =>
      of(type).filter((o) => namespace === undefined || o.metadata.namespace === namespace),
    get: (type, namespace, name) =>
      of(type).find((o) =>
        o.metadata.name === name && (o.metadata.namespace ?? undefined) === namespace
      ),
  };
}
