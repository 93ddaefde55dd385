/**
 * Carries out a module reducer's Plans synchronously on the simulator's API server: each pass loads
 * a World into a fresh sim/cluster Store (bootstrapped as a simulation starts, with its background
 * controllers), makes the Plan's writes with the verbs the runtime uses (create, finalizer JSON
 * patches, server-side apply with force, delete with a uid precondition, status apply), lets the
 * control plane's background work settle (CRDs established, cleanup, garbage collection) and reads
 * the World back. The store's write verbs are synchronous; only its clients are async.
 *
 * Two things are this helper's and not the simulator's: what it sends is first defaulted as a real
 * API server would (api_defaults.ts; the simulator stores what it gets), and it marks the applied
 * Deployments rolled out as the Deployment controller would once their Pods are ready, and the
 * applied APIServices Available as the aggregator would once their Service answers.
 */
import { FIELD_MANAGER, MANAGED_BY, MANAGED_BY_LABEL } from "../../src/reconcile/labels.ts";
import { canonicalQuantity } from "../../src/api/quantity.ts";
import { claimRef } from "../../src/reconcile/module/claim.ts";
import { identity } from "../../src/reconcile/module/install_diff.ts";
import { type ObjectRef, type Plan, refOf } from "../../src/reconcile/plan.ts";
import { addFinalizerOps, removeFinalizerOps } from "../../src/runtime/finalizers.ts";
import type { KubeObject, ResourceType } from "../../src/api/object.ts";
import { RESOURCES } from "../../src/api/resources.ts";
import { SimClock } from "../../sim/clock.ts";
import { Prng } from "../../sim/prng.ts";
import { bootstrap } from "../../sim/cluster/bootstrap.ts";
import { BackgroundControllers } from "../../sim/cluster/gc.ts";
import { type Actor, Store } from "../../sim/cluster/store.ts";
import { apiServerDefaults } from "./api_defaults.ts";
import {
  aggregatorAvailable,
  claimOf,
  moduleOfKind,
  rolledOut,
  type World,
} from "./module_fixtures.ts";

/** Options of `carryOut`. */
export interface CarryOutOptions {
  /** Mark every applied Deployment as rolled out and APIService Available (default true). */
  ready?: boolean;
}

const OPERATOR: Actor = { name: "operator/test", manager: FIELD_MANAGER };
const USER: Actor = { name: "user", manager: "kubectl" };
const KCM: Actor = { name: "kube-controller-manager", manager: "kube-controller-manager" };
const AGGREGATOR: Actor = { name: "kube-apiserver", manager: "kube-apiserver" };
/** The time the store's clock starts at: the fixtures' NOW (2026-01-01T00:00:00Z). */
const START = Date.UTC(2026, 0, 1);

const defaults = (obj: KubeObject) => apiServerDefaults(obj, canonicalQuantity);

/** What a World's object carried that the store assigns itself on create (uid, generation, ...). */
interface Seeded {
  meta: KubeObject["metadata"];
  /** The store's generation right after loading. */
  generation: number;
}

/** A fresh simulator store, and the work that settles its background controllers. */
class Server {
  readonly clock = new SimClock(START);
  readonly store = new Store(() => this.clock.now(), new Prng(13));
  readonly seeded = new Map<string, Seeded>();

  constructor() {
    new BackgroundControllers(this.store, this.clock, () => 0);
    bootstrap(this.store);
    this.settle();
  }

  /** Runs the control plane's background work that is due (it is scheduled without delay). */
  settle(): void {
    for (let fn = this.clock.popDue(START); fn; fn = this.clock.popDue(START)) fn();
  }

  type(obj: { apiVersion: string; kind: string }): ResourceType {
    const type = this.store.types.byKind(obj.apiVersion, obj.kind);
    if (!type) throw new Error(`the simulator does not serve ${obj.kind} of ${obj.apiVersion}`);
    return type;
  }

  get(ref: ObjectRef | KubeObject): KubeObject | undefined {
    const r = "metadata" in ref ? refOf(ref) : ref;
    return this.store.types.byKind(r.apiVersion, r.kind) &&
      this.store.get(this.type(r), r.namespace, r.name);
  }

  /** Creates the namespace `name` unless it exists. */
  namespace(name: string | undefined): void {
    if (!name || this.store.get(RESOURCES.Namespace, undefined, name)) return;
    const ns = { apiVersion: "v1", kind: "Namespace", metadata: { name } };
    this.store.create(RESOURCES.Namespace, ns, USER);
  }

  /** Stores `obj` as `actor` created it, its status written through the status subresource. */
  load(obj: KubeObject, actor: Actor, by: "create" | "apply"): void {
    const type = this.type(obj);
    this.namespace(obj.metadata.namespace);
    const { uid: _u, resourceVersion: _r, generation: _g, creationTimestamp: _c, ...meta } =
      obj.metadata;
    const { deletionTimestamp: _d, managedFields: _m, ...kept } = meta;
    const subresource = this.store.types.hasStatus(type);
    const { status, ...main } = obj;
    const body = { ...(subresource ? main : obj), metadata: kept } as KubeObject;
    let stored = by === "create"
      ? this.store.create(type, body, actor).obj
      : this.store.apply(type, body, actor, true).obj;
    // A Deployment's status is its controller's, a CRD's the simulator's CRD controller's (it is
    // established again as the store settles), anything else's the operator's (applied).
    if (subresource && status !== undefined && obj.kind !== "CustomResourceDefinition") {
      stored = obj.kind === "Deployment"
        ? this.store.update(type, { ...stored, status }, KCM, "status").obj
        : this.store.apply(type, statusBody(stored, status), OPERATOR, true, "status").obj;
    }
    if (obj.metadata.deletionTimestamp) {
      stored = this.store.delete(type, kept.namespace, kept.name, {}, USER).obj;
    }
    this.settle();
    const after = this.get(stored);
    if (after) {
      this.seeded.set(identity(refOf(obj)), {
        meta: obj.metadata,
        generation: after.metadata.generation ?? 1,
      });
    }
  }

  /** The stored object as the World knew it: the identity and generation count it was loaded with. */
  read(ref: ObjectRef | KubeObject): KubeObject | undefined {
    const stored = this.get(ref);
    if (!stored) return undefined;
    const out = structuredClone(stored) as KubeObject;
    const seed = this.seeded.get(identity("metadata" in ref ? refOf(ref) : ref));
    if (!seed) return out;
    const m = out.metadata;
    for (const k of ["uid", "creationTimestamp", "deletionTimestamp"] as const) {
      if (seed.meta[k] !== undefined && m[k] !== undefined) m[k] = seed.meta[k];
    }
    if (seed.meta.generation !== undefined && m.generation !== undefined) {
      m.generation = seed.meta.generation + m.generation - seed.generation;
    }
    return out;
  }
}

function loadWorld(server: Server, world: World): void {
  for (const o of [...(world.object ? [world.object] : []), ...world.others]) {
    server.load(o, USER, "create");
  }
  const claim = world.object ? claimOf(moduleOfKind(world.object.kind), world).observed : undefined;
  if (claim) server.load(claim as KubeObject, OPERATOR, "create");
  for (const o of world.installed) server.load(o, OPERATOR, "apply");
}

/** Deletes `ref` as the runtime does: skipped when absent or being deleted, refused when not ours. */
function deleteOne(server: Server, ref: ObjectRef): void {
  const live = server.get(ref);
  if (!live || live.metadata.deletionTimestamp) return;
  if (live.metadata.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY) {
    throw new Error(`a Plan deletes ${identity(ref)}, which the operator did not create`);
  }
  server.store.delete(server.type(ref), ref.namespace, ref.name, {
    propagationPolicy: "Background",
    preconditions: { uid: live.metadata.uid! },
  }, OPERATOR);
}

/** The body of a status apply to `obj`: its identity and `status`, as the runtime sends it. */
function statusBody(obj: KubeObject, status: unknown): KubeObject {
  const { apiVersion, kind, metadata: { name, namespace } } = obj;
  return { apiVersion, kind, metadata: namespace ? { name, namespace } : { name }, status };
}

/** Writes `plan` on the primary object the way the runtime's PlanWriter does. */
function writePrimary(
  server: Server,
  primary: KubeObject,
  plan: Plan,
  step: "add" | "status",
): void {
  const type = server.type(primary);
  const { namespace, name } = primary.metadata;
  const live = server.get(primary);
  if (!live) return;
  const finalizers = live.metadata.finalizers;
  const add = plan.finalizer?.add;
  if (step === "add") {
    if (add && !live.metadata.deletionTimestamp && !finalizers?.includes(add)) {
      server.store.patch(type, namespace, name, addFinalizerOps(finalizers, add), OPERATOR);
    }
    return;
  }
  if (plan.status !== undefined) {
    server.store.apply(type, statusBody(live, plan.status), OPERATOR, true, "status");
  }
  const remove = plan.finalizer?.remove;
  const index = remove ? finalizers?.indexOf(remove) ?? -1 : -1;
  if (remove && index >= 0) {
    server.store.patch(type, namespace, name, removeFinalizerOps(index, remove), OPERATOR);
  }
}

/**
 * Does what the runtime does with `plan` on a simulator store loaded with `world`, and returns the
 * World read back from it. Never mutates `world`; an API error (409 on a taken claim, 422 from the
 * schema, ...) is thrown as the runtime would see it.
 */
export function carryOut(world: World, plan: Plan, opts: CarryOutOptions = {}): World {
  const server = new Server();
  loadWorld(server, world);
  for (const obj of plan.create ?? []) {
    // A module reducer creates nothing but its claim (the rest it applies).
    if (obj.kind !== "Lease") throw new Error(`carryOut: unexpected create of ${obj.kind}`);
    server.store.create(server.type(obj), obj, OPERATOR);
  }
  if (world.object) writePrimary(server, world.object, plan, "add");
  for (const obj of plan.apply) {
    const stored = server.store.apply(server.type(obj), defaults(obj), OPERATOR, true).obj;
    if (obj.kind === "Deployment" && (opts.ready ?? true)) {
      const gen = server.read(stored)!.metadata.generation!;
      server.store.update(server.type(obj), { ...stored, status: rolledOut(gen) }, KCM, "status");
    }
    if (obj.kind === "APIService" && (opts.ready ?? true)) {
      server.store.update(
        server.type(obj),
        { ...stored, status: aggregatorAvailable() },
        AGGREGATOR,
        "status",
      );
    }
  }
  for (const ref of plan.delete) deleteOne(server, ref);
  if (world.object) writePrimary(server, world.object, plan, "status");
  server.settle();
  return readWorld(server, world, plan);
}

function readWorld(server: Server, world: World, plan: Plan): World {
  const keys = new Map<string, ObjectRef>();
  for (const o of [...world.installed, ...plan.apply]) keys.set(identity(refOf(o)), refOf(o));
  const installed = [...keys.values()].map((r) => server.read(r)).filter((o) => o !== undefined);
  const object = world.object && server.read(world.object);
  const others = world.others.map((o) => server.read(o)).filter((o) => o !== undefined);
  return { object, others, installed, claim: readClaim(server, world) };
}

function readClaim(server: Server, world: World): KubeObject | null {
  const module = world.object ? moduleOfKind(world.object.kind) : undefined;
  if (!module) return null;
  return server.read(claimRef({ namespace: "platform-system", module })) ?? null;
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
