/**
 * A tiny model of the cluster for the module reducers' tests: the module object, its peers and the
 * installed objects, and `carryOut`, which does what the runtime does with a Plan (apply as a
 * merge, delete, finalizers, status) and can mark Deployments rolled out.
 */
import { type KubeObject, objectKey, type ResourceType } from "../../src/runtime/cluster.ts";
import type { CacheReader } from "../../src/runtime/controller_spec.ts";
import { identity } from "../../src/reconcile/module/install_diff.ts";
import { canonicalQuantity } from "../../src/reconcile/keda/quantity.ts";
import { type Plan, refOf } from "../../src/reconcile/plan.ts";
import { type ClaimInput, claimLease } from "../../src/reconcile/module/claim.ts";
import { asPeer, servedPeer } from "../../src/reconcile/module/singleton.ts";

const defaultNormalize = (obj: KubeObject) => apiServerNormalize(obj, canonicalQuantity);

/** The observed state a module reducer reads. */
export interface World {
  /** The reconciled module object; undefined once it is gone. */
  object: KubeObject | undefined;
  /** The other objects of the same kind. */
  others: KubeObject[];
  installed: KubeObject[];
  /**
   * The module's claim Lease. Undefined stands for the claim the first passes made: held by the
   * peer the reducer picks (see `claimOf`); null is no claim at all.
   */
  claim?: KubeObject | null;
}

type Json = unknown;

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

/** Server-side apply as a merge: objects merge key by key, anything else is replaced. */
export function merge(observed: Json, desired: Json): Json {
  if (
    desired === null || typeof desired !== "object" || Array.isArray(desired) ||
    observed === null || typeof observed !== "object" || Array.isArray(observed)
  ) {
    return structuredClone(desired);
  }
  const out: Record<string, Json> = { ...(observed as Record<string, Json>) };
  for (const [k, v] of Object.entries(desired as Record<string, Json>)) {
    out[k] = merge(out[k], v);
  }
  return out;
}

function specOf(o: KubeObject | undefined): string {
  return JSON.stringify(o?.spec ?? null);
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

/** `w` with its module object being deleted (a deletionTimestamp set). */
export function deleting(w: World): World {
  const object = structuredClone(w.object!);
  object.metadata.deletionTimestamp = "2026-01-01T00:00:00Z";
  return { ...w, object };
}

/** Options of `carryOut`. */
export interface CarryOutOptions {
  /** Mark every applied Deployment as rolled out (default true). */
  ready?: boolean;
  /** What the fake API server does to an applied object (default `apiServerNormalize`; null: nothing). */
  normalize?: ((obj: KubeObject) => KubeObject) | null;
}

function applyOne(
  installed: KubeObject[],
  desired: KubeObject,
  opts: CarryOutOptions,
): KubeObject[] {
  const id = identity(refOf(desired));
  const i = installed.findIndex((o) => identity(refOf(o)) === id);
  const prev = i >= 0 ? installed[i] : undefined;
  let next = merge(prev ?? {}, desired) as KubeObject;
  next = opts.normalize === null ? next : (opts.normalize ?? defaultNormalize)(next);
  const generation = (prev?.metadata.generation ?? 0) + (specOf(prev) === specOf(next) ? 0 : 1);
  next.metadata = {
    ...next.metadata,
    generation: Math.max(generation, 1),
    uid: prev?.metadata.uid ?? `uid-${id}`,
  };
  delete next.metadata.deletionTimestamp;
  if (next.kind === "Deployment" && (opts.ready ?? true)) {
    next.status = rolledOut(next.metadata.generation!);
  }
  const out = [...installed];
  if (i >= 0) out[i] = next;
  else out.push(next);
  return out;
}

/** Does what the runtime does with `plan`, and returns the world after it. Never mutates `world`. */
export function carryOut(world: World, plan: Plan, opts: CarryOutOptions = {}): World {
  let installed = world.installed;
  let claim = world.claim;
  for (const obj of plan.create ?? []) {
    if (obj.kind !== "Lease") throw new Error(`carryOut: unexpected create of ${obj.kind}`);
    if (claim !== null) throw new Error("carryOut: the claim exists (409 AlreadyExists)");
    claim = structuredClone(obj);
  }
  if (plan.delete.some((r) => r.kind === "Lease")) claim = null;
  for (const obj of plan.apply) installed = applyOne(installed, obj, opts);
  const gone = new Set(plan.delete.map(identity));
  installed = installed.filter((o) => !gone.has(identity(refOf(o))));
  let object = world.object ? structuredClone(world.object) : undefined;
  if (object) {
    const finalizers = new Set(object.metadata.finalizers ?? []);
    if (plan.finalizer?.add && !object.metadata.deletionTimestamp) {
      finalizers.add(plan.finalizer.add);
    }
    if (plan.status) object.status = structuredClone(plan.status);
    if (plan.finalizer?.remove) finalizers.delete(plan.finalizer.remove);
    object.metadata.finalizers = [...finalizers];
    if (object.metadata.deletionTimestamp && finalizers.size === 0) object = undefined;
  }
  return { object, others: world.others, installed, ...(claim !== undefined ? { claim } : {}) };
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

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === "object" && !Array.isArray(v);
const each = (v: unknown, f: (o: Obj) => void) => Array.isArray(v) && v.filter(isObj).forEach(f);

/**
 * Some of what a real API server does to an object it stores: defaults (ports' protocol, a
 * Service's type, imagePullPolicy, a CRD's conversion, a webhook's matchPolicy, fieldRef's
 * apiVersion), canonical quantities, empty env values dropped. Rendered objects must survive it
 * unchanged as far as they go, or the next reconcile would apply them again.
 */
export function apiServerNormalize(
  obj: KubeObject,
  canonical: (q: string) => string | undefined,
): KubeObject {
  const o = structuredClone(obj) as Obj & KubeObject;
  const spec = isObj(o.spec) ? o.spec : undefined;
  if (o.kind === "Deployment" && spec) {
    spec.strategy ??= {
      type: "RollingUpdate",
      rollingUpdate: { maxSurge: "25%", maxUnavailable: "25%" },
    };
    spec.progressDeadlineSeconds ??= 600;
    const pod = isObj(spec.template) && isObj(spec.template.spec) ? spec.template.spec : {};
    pod.restartPolicy ??= "Always";
    each(pod.containers, (c) => {
      c.imagePullPolicy ??= "IfNotPresent";
      c.terminationMessagePath ??= "/dev/termination-log";
      each(c.ports, (p) => (p.protocol ??= "TCP"));
      for (const list of ["limits", "requests"]) {
        const l = isObj(c.resources) ? c.resources[list] : undefined;
        if (isObj(l)) { for (const k of Object.keys(l)) l[k] = canonical(String(l[k])) ?? l[k]; }
      }
      each(c.env, (e) => {
        if (e.value === "") delete e.value;
        const from = isObj(e.valueFrom) ? e.valueFrom : {};
        if (isObj(from.fieldRef)) from.fieldRef.apiVersion ??= "v1";
        if (isObj(from.resourceFieldRef)) {
          from.resourceFieldRef.divisor = canonical(String(from.resourceFieldRef.divisor ?? "0")) ??
            "0";
        }
      });
    });
  }
  if (o.kind === "Service" && spec) {
    spec.type ??= "ClusterIP";
    spec.sessionAffinity ??= "None";
    each(spec.ports, (p) => {
      p.protocol ??= "TCP";
      p.targetPort ??= p.port;
    });
  }
  if (o.kind === "CustomResourceDefinition" && spec) spec.conversion ??= { strategy: "None" };
  if (o.kind === "ValidatingWebhookConfiguration") {
    each(o.webhooks, (w) => {
      w.matchPolicy ??= "Equivalent";
      w.timeoutSeconds ??= 10;
      w.namespaceSelector ??= {};
      w.objectSelector ??= {};
      each(w.rules, (r) => (r.scope ??= "*"));
    });
  }
  return o;
}

/** True when `plan` writes nothing on `w`: no creates, applies, deletes, status change or missing finalizer. */
export function isQuiet(w: World, plan: Plan): boolean {
  return (plan.create ?? []).length === 0 && plan.apply.length === 0 && plan.delete.length === 0 &&
    JSON.stringify(plan.status) === JSON.stringify(w.object?.status) &&
    (!plan.finalizer?.add || (w.object?.metadata.finalizers ?? []).includes(plan.finalizer.add)) &&
    (!plan.finalizer?.remove ||
      !(w.object?.metadata.finalizers ?? []).includes(plan.finalizer.remove));
}

/** Reconciles with `reduce` and carries out each Plan until one writes nothing (at most `max` passes). */
export function convergeWith(
  reduce: (w: World) => Plan,
  w: World,
  opts: CarryOutOptions = {},
  max = 6,
): { world: World; plan: Plan; passes: number } {
  let cur = w;
  for (let pass = 1; pass <= max; pass++) {
    const plan = reduce(cur);
    if (isQuiet(cur, plan)) return { world: cur, plan, passes: pass };
    cur = carryOut(cur, plan, opts);
    if (!cur.object) return { world: cur, plan, passes: pass };
  }
  throw new Error(`no fixpoint after ${max} passes`);
}
