/**
 * Where the simulated API server keeps its objects, and what committing a change does: one global
 * resourceVersion counter, uids and creation metadata, managedFields, admission and schema checks,
 * then the type's history and every subscriber (watches, the built-in controllers, the invariant
 * checker), synchronously and in commit order. The write verbs built on it are in store.ts.
 */
import { RESOURCES } from "../../src/api/resources.ts";

import { admitChange } from "./admission.ts";
import type { KubeObject, ResourceType } from "../../src/api/object.ts";
import type { Prng } from "../prng.ts";
import { invalid, namespaceNotFound, namespaceTerminating, notFound } from "./errors.ts";
import { type Change, type ChangeType, TypeHistory, type WriteVerb } from "./history.ts";
import { copyForWrite, sealJson } from "./json.ts";
import { type Managed, renderManaged, sameManaged } from "./managed.ts";
import { deepEqual, type JsonObject } from "../../src/api/json.ts";
import { type Entry, ObjectTable, uidOf } from "./objects.ts";
import { crdProblems, typeKey, TypeRegistry } from "./types.ts";
import { validationProblems } from "./validate.ts";
import { kubeTime } from "../../src/api/time.ts";
import { isOperator } from "./writelog.ts";

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

/** The stored objects of every served type, and the commit of each change to them. */
export class ObjectStorage {
  #worldChanges = 0;

  /**
   * Changes made by anyone but the operator (leases aside): users, and the simulated cluster's own
   * controllers (a Deployment becoming Available), whose writes skip the API's write log. A quiet
   * period is one in which this does not move.
   */
  get worldChanges(): number {
    return this.#worldChanges;
  }

  readonly types = new TypeRegistry();
  #rv = 1;
  #uids = 0;
  #objects = new ObjectTable();
  #histories = new Map<string, TypeHistory>();
  #listeners = new Set<(c: Change) => void>();
  /** The listeners as an array, until one comes or goes: a change is told to those of its commit. */
  #told: ((c: Change) => void)[] | undefined;
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
    this.#told = undefined;
    return () => {
      this.#told = undefined;
      return this.#listeners.delete(fn);
    };
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
    return this.entry(type, namespace, name)?.obj;
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

  /** Forgets a type's history (a forced etcd compaction): older watches and continues get 410. */
  compact(type: ResourceType): void {
    this.history(type).compactAll(this.#rv);
  }

  /** The stored entry (object, managed fields, creator), if any. */
  protected entry(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
  ): Entry | undefined {
    return this.#objects.get(type, namespace, name);
  }

  /** The stored entry; 404 when there is none. */
  protected existing(type: ResourceType, namespace: string | undefined, name: string): Entry {
    const e = this.entry(type, namespace, name);
    if (!e) throw notFound(type, name);
    return e;
  }

  /** The field-manager identity of a write by `actor`. */
  protected writer(type: ResourceType, actor: Actor) {
    return {
      manager: actor.manager,
      apiVersion: type.group ? `${type.group}/${type.version}` : type.version,
      now: this.now(),
    };
  }

  /** 404 when the namespace is missing, 403 when it is terminating. */
  protected checkNamespace(type: ResourceType, name: string, namespace: string | undefined): void {
    if (!type.namespaced || !namespace) return;
    const ns = this.#objects.get(RESOURCES.Namespace, undefined, namespace);
    if (!ns) throw namespaceNotFound(namespace);
    if (ns.obj.metadata.deletionTimestamp) throw namespaceTerminating(type, name, namespace);
  }

  /** Admits, validates and stores `next`, then records and announces the change. */
  protected commit(
    type: ResourceType,
    prev: Entry | undefined,
    next: KubeObject,
    managed: Managed,
    actor: Actor,
    verb: WriteVerb,
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
      : renderManaged(
        managed,
        prev?.managed,
        prev?.obj.metadata.managedFields as JsonObject[] | undefined,
      );
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
      return this.remove(type, { ...prev, obj: next, managed }, actor, verb, prev.obj);
    }
    meta.resourceVersion = String(++this.#rv);
    const entry: Entry = {
      obj: sealJson(next),
      // Not copied: no write changes a stored ownership map (each starts from a copy of it).
      managed,
      creator: prev?.creator ?? actor.name,
    };
    this.#objects.put(type, entry);
    if (type.kind === "CustomResourceDefinition") this.types.addCrd(next);
    this.#emit(prev ? "MODIFIED" : "ADDED", type, entry.obj, prev?.obj, actor, verb);
    return { obj: entry.obj, changed: true };
  }

  /** Removes `entry`'s object; `old` is the stored object before this request (default: entry's). */
  protected remove(
    type: ResourceType,
    entry: Entry,
    actor: Actor,
    verb: WriteVerb,
    old = entry.obj,
  ): WriteResult {
    const obj = copyForWrite(entry.obj);
    obj.metadata.resourceVersion = String(++this.#rv);
    sealJson(obj);
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
    verb: WriteVerb,
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
    if (!isOperator(actor.name) && rtype.kind !== "Lease") this.#worldChanges++;
    const told = this.#told ??= [...this.#listeners];
    for (const fn of told) fn(change);
  }
}
