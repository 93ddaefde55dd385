/**
 * The simulated API server's storage and write semantics: one global resourceVersion counter,
 * 409 on stale writes and existing names, generation bumped on spec changes only, the status
 * subresource, finalizers and deletionTimestamp, server-side apply and JSON Patch, admission
 * validation. Every committed change is recorded in the type's history and told to subscribers
 * (watches, the built-in controllers, the invariant checker) synchronously, in commit order.
 */
import { RESOURCES } from "../../src/api/resources.ts";
import { kubeTime } from "../../src/runtime/clock.ts";
import {
  admitChange,
  checkDeletePreconditions,
  checkUpdatePreconditions,
  confine,
  deletionPending,
  generateName,
  markDeleting,
  normalize,
} from "./admission.ts";
import type {
  DeleteOptions,
  JsonPatchOp,
  KubeObject,
  ResourceType,
} from "../../src/runtime/cluster.ts";
import type { Prng } from "../prng.ts";
import {
  alreadyExists,
  badRequest,
  conflict,
  invalid,
  namespaceNotFound,
  namespaceTerminating,
  notFound,
} from "./errors.ts";
import type { Scope } from "./fields.ts";
import { type Change, type ChangeType, TypeHistory, type Verb } from "./history.ts";
import { cloneJson, deepEqual, type JsonObject } from "./json.ts";
import { applyJsonPatch } from "./jsonpatch.ts";
import {
  applyFields,
  cloneManaged,
  type Managed,
  renderManaged,
  sameManaged,
  updateFields,
} from "./managed.ts";
import { deepFreeze, type Entry, ObjectTable, uidOf } from "./objects.ts";
import { crdProblems, typeKey, TypeRegistry } from "./types.ts";
import { validationProblems } from "./validate.ts";

/** Who is writing: the request's identity and its field manager. */
export interface Actor {
  /** `operator/<identity>`, `user`, `kube-controller-manager`, `garbage-collector`, ... */
  name: string;
  /** Field manager recorded in managedFields. */
  manager: string;
}

/** The result of a write: the stored object, and whether anything changed. */
export interface WriteResult {
  obj: KubeObject;
  changed: boolean;
}

/** Finalizer the API server puts on every CRD until its instances are gone. */
export const CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io";

/** Storage of every object of every served type. */
export class Store {
  readonly types = new TypeRegistry();
  #rv = 1;
  #uids = 0;
  #objects = new ObjectTable();
  #histories = new Map<string, TypeHistory>();
  #listeners = new Set<(c: Change) => void>();
  /** Uids whose deletion asked to orphan their dependents (the garbage collector reads it). */
  readonly orphaning = new Set<string>();

  constructor(readonly now: () => number, readonly random: Prng, readonly historySize = 500) {}

  /** The current (latest) resourceVersion. */
  get rv(): number {
    return this.#rv;
  }

  /** Subscribes to every committed change; returns the unsubscribe function. */
  subscribe(fn: (c: Change) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /** The retained history of a type. */
  history(type: { group: string; plural: string }): TypeHistory {
    const key = typeKey(type);
    let h = this.#histories.get(key);
    if (!h) this.#histories.set(key, h = new TypeHistory(this.historySize));
    return h;
  }

  /** One stored (frozen) object, or undefined. */
  get(type: ResourceType, namespace: string | undefined, name: string): KubeObject | undefined {
    return this.#entry(type, namespace, name)?.obj;
  }

  /** Every stored object of a type, optionally in one namespace, ordered by namespace/name. */
  objects(type: { group: string; plural: string }, namespace?: string): KubeObject[] {
    return this.#objects.list(type, namespace);
  }

  /** The object with a uid and its type, if it exists. */
  byUid(uid: string): { rtype: ResourceType; obj: KubeObject } | undefined {
    const found = this.#objects.byUid(uid);
    return found && { rtype: found.rtype, obj: found.entry.obj };
  }

  /** Who created an existing object (an actor name). */
  creatorOf(uid: string): string | undefined {
    return this.#objects.byUid(uid)?.entry.creator;
  }

  /** Creates an object; 409 AlreadyExists if its name is taken. */
  create(type: ResourceType, input: KubeObject, actor: Actor): WriteResult {
    const rtype = this.types.resolve(type);
    const obj = normalize(rtype, cloneJson(input));
    if (!obj.metadata.name) {
      obj.metadata.name = generateName(
        rtype,
        obj,
        this.random,
        (n) => !!this.#entry(rtype, obj.metadata.namespace, n),
      );
    }
    const { namespace, name } = obj.metadata;
    if (this.#entry(rtype, namespace, name)) throw alreadyExists(rtype, name);
    this.#checkNamespace(rtype, name, namespace);
    if (this.types.hasStatus(rtype)) delete obj.status;
    const managed = updateFields(
      undefined,
      obj,
      new Map(),
      this.#writer(rtype, actor),
      "main",
      this.types.listRules(rtype),
    );
    return this.#commit(rtype, undefined, obj, managed, actor, "create");
  }

  /** Replaces an object (main resource or /status); 409 when metadata.resourceVersion is stale. */
  update(type: ResourceType, input: KubeObject, actor: Actor, scope: Scope = "main"): WriteResult {
    const rtype = this.types.resolve(type);
    const obj = normalize(rtype, cloneJson(input));
    const prev = this.#existing(rtype, obj.metadata.namespace, obj.metadata.name);
    checkUpdatePreconditions(rtype, prev.obj, obj);
    const next = confine(prev.obj, obj, scope, this.types.hasStatus(rtype));
    const managed = updateFields(
      prev.obj,
      next,
      prev.managed,
      this.#writer(rtype, actor),
      scope,
      this.types.listRules(rtype),
    );
    return this.#commit(
      rtype,
      prev,
      next,
      managed,
      actor,
      scope === "status" ? "updateStatus" : "update",
    );
  }

  /** Server-side apply (main resource or /status); creates the object when it does not exist. */
  apply(
    type: ResourceType,
    input: KubeObject,
    actor: Actor,
    force: boolean,
    scope: Scope = "main",
  ): WriteResult {
    const rtype = this.types.resolve(type);
    const obj = normalize(rtype, cloneJson(input));
    const { namespace, name } = obj.metadata;
    const prev = this.#entry(rtype, namespace, name);
    const verb: Verb = scope === "status" ? "applyStatus" : "apply";
    if (!prev && scope === "status") throw notFound(rtype, name);
    const rv = obj.metadata.resourceVersion;
    if (rv !== undefined && rv !== prev?.obj.metadata.resourceVersion) throw conflict(rtype, name);
    const writer = this.#writer(rtype, actor);
    const rules = this.types.listRules(rtype);
    if (!prev) {
      this.#checkNamespace(rtype, name, namespace);
      const created = applyFields(undefined, obj, new Map(), writer, "main", true, rules);
      const fresh = { ...created.obj, apiVersion: obj.apiVersion, kind: obj.kind } as KubeObject;
      fresh.metadata = { ...(fresh.metadata ?? {}), name, ...(namespace ? { namespace } : {}) };
      return this.#commit(rtype, undefined, fresh, created.managed, actor, verb);
    }
    const live = prev.obj as unknown as JsonObject;
    const result = applyFields(
      live,
      obj as unknown as JsonObject,
      prev.managed,
      writer,
      scope,
      force,
      rules,
    );
    const next = confine(prev.obj, result.obj as KubeObject, scope, this.types.hasStatus(rtype));
    return this.#commit(rtype, prev, next, result.managed, actor, verb);
  }

  /** JSON Patch of the main resource. */
  patch(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    ops: JsonPatchOp[],
    actor: Actor,
  ): WriteResult {
    const rtype = this.types.resolve(type);
    const prev = this.#existing(rtype, namespace, name);
    const patched = applyJsonPatch(prev.obj, ops) as KubeObject;
    if (patched?.metadata?.name !== name) throw badRequest("a patch may not change metadata.name");
    const next = confine(prev.obj, normalize(rtype, patched), "main", this.types.hasStatus(rtype));
    const managed = updateFields(
      prev.obj,
      next,
      prev.managed,
      this.#writer(rtype, actor),
      "main",
      this.types.listRules(rtype),
    );
    return this.#commit(rtype, prev, next, managed, actor, "patch");
  }

  /**
   * Deletes an object: with finalizers it only gets a deletionTimestamp (once; generation bumps);
   * without, it is removed. Throws 404 when it does not exist, 409 on a failed precondition.
   */
  delete(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    opts: DeleteOptions,
    actor: Actor,
  ): WriteResult {
    const rtype = this.types.resolve(type);
    const prev = this.#existing(rtype, namespace, name);
    checkDeletePreconditions(rtype, prev.obj, opts);
    if (opts.propagationPolicy === "Orphan") this.orphaning.add(prev.obj.metadata.uid!);
    if (!deletionPending(rtype, prev.obj)) return this.#remove(rtype, prev, actor, "delete");
    if (prev.obj.metadata.deletionTimestamp) return { obj: prev.obj, changed: false };
    const next = markDeleting(rtype, prev.obj, this.now());
    return this.#commit(rtype, prev, next, prev.managed, actor, "delete", true);
  }

  /** Forgets a type's history (a forced etcd compaction): older watches and continues get 410. */
  compact(type: ResourceType): void {
    this.history(type).compactAll(this.#rv);
  }

  /** Removes a namespace whose contents are gone (the namespace controller's last step). */
  finalizeNamespace(name: string, actor: Actor): void {
    const rtype = RESOURCES.Namespace;
    const prev = this.#entry(rtype, undefined, name);
    if (prev?.obj.metadata.deletionTimestamp) this.#remove(rtype, prev, actor, "update");
  }

  #entry(type: ResourceType, namespace: string | undefined, name: string): Entry | undefined {
    return this.#objects.get(type, namespace, name);
  }

  #existing(type: ResourceType, namespace: string | undefined, name: string): Entry {
    const e = this.#entry(type, namespace, name);
    if (!e) throw notFound(type, name);
    return e;
  }

  #writer(type: ResourceType, actor: Actor) {
    return {
      manager: actor.manager,
      apiVersion: type.group ? `${type.group}/${type.version}` : type.version,
      now: this.now(),
    };
  }

  #checkNamespace(type: ResourceType, name: string, namespace: string | undefined): void {
    if (!type.namespaced || !namespace) return;
    const ns = this.#objects.get(RESOURCES.Namespace, undefined, namespace);
    if (!ns) throw namespaceNotFound(namespace);
    if (ns.obj.metadata.deletionTimestamp) throw namespaceTerminating(type, name, namespace);
  }

  #commit(
    type: ResourceType,
    prev: Entry | undefined,
    next: KubeObject,
    managed: Managed,
    actor: Actor,
    verb: Verb,
    deleting = false,
  ): WriteResult {
    const meta = next.metadata;
    if (prev) {
      if (!deleting) admitChange(type, prev.obj, next);
    } else {
      meta.uid = uidOf(++this.#uids);
      meta.creationTimestamp = kubeTime(this.now());
      meta.generation = 1;
      if (type.kind === "CustomResourceDefinition") {
        meta.finalizers = [...new Set([...(meta.finalizers ?? []), CRD_CLEANUP_FINALIZER])];
      }
      if (type.kind === "Namespace") next.status = { phase: "Active" };
    }
    if (meta.finalizers?.length === 0) delete meta.finalizers;
    // Rendering FieldsV1 is the costliest part of a write: reuse it while ownership is unchanged.
    const sameOwners = prev !== undefined && sameManaged(prev.managed, managed);
    const rendered = sameOwners
      ? (prev.obj.metadata.managedFields as JsonObject[] | undefined) ?? []
      : renderManaged(managed);
    if (rendered.length > 0) meta.managedFields = rendered;
    else delete meta.managedFields;
    const problems = [
      ...validationProblems(type, next),
      ...(type.kind === "CustomResourceDefinition" ? crdProblems(next) : []),
    ];
    if (problems.length > 0) throw invalid(type, meta.name, problems);
    if (prev && sameOwners && deepEqual(prev.obj, next)) {
      return { obj: prev.obj, changed: false };
    }
    if (prev && meta.deletionTimestamp && !meta.finalizers?.length && type.kind !== "Namespace") {
      return this.#remove(type, { ...prev, obj: next, managed }, actor, verb, prev.obj);
    }
    meta.resourceVersion = String(++this.#rv);
    const entry: Entry = {
      obj: deepFreeze(next),
      managed: cloneManaged(managed),
      creator: prev?.creator ?? actor.name,
    };
    this.#objects.put(type, entry);
    if (type.kind === "CustomResourceDefinition") this.types.addCrd(next);
    this.#emit(prev ? "MODIFIED" : "ADDED", type, entry.obj, prev?.obj, actor, verb);
    return { obj: entry.obj, changed: true };
  }

  /** Removes `entry`'s object; `old` is the stored object before this request (default: entry's). */
  #remove(
    type: ResourceType,
    entry: Entry,
    actor: Actor,
    verb: Verb,
    old = entry.obj,
  ): WriteResult {
    const obj = cloneJson(entry.obj);
    obj.metadata.resourceVersion = String(++this.#rv);
    deepFreeze(obj);
    this.#objects.remove(type, obj);
    if (type.kind === "CustomResourceDefinition") {
      this.types.removeCrd(obj);
    }
    this.#emit("DELETED", type, obj, old, actor, verb);
    return { obj, changed: true };
  }

  #emit(
    type: ChangeType,
    rtype: ResourceType,
    object: KubeObject,
    old: KubeObject | undefined,
    actor: Actor,
    verb: Verb,
  ): void {
    const change: Change = {
      type,
      rtype,
      typeKey: typeKey(rtype),
      object,
      old,
      rv: this.#rv,
      actor: actor.name,
      verb,
    };
    this.history(rtype).push(change);
    for (const fn of [...this.#listeners]) fn(change);
  }
}

export type { JsonObject };
