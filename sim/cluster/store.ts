/**
 * The simulated API server's write verbs: 409 on stale writes and existing names, generation
 * bumped on spec changes only, the status subresource, finalizers and deletionTimestamp,
 * server-side apply and JSON Patch. Each ends in one commit of ObjectStorage (storage.ts), which
 * admits, validates, records and announces the change.
 */
import { RESOURCES } from "../../src/api/resources.ts";
import {
  checkDeletePreconditions,
  checkUpdatePreconditions,
  confine,
  deletionPending,
  generateName,
  markDeleting,
  normalize,
} from "./admission.ts";
import type { DeleteOptions } from "../../src/runtime/mod.ts";
import type { JsonPatchOp, KubeObject, ResourceType } from "../../src/api/object.ts";
import { alreadyExists, badRequest, conflict, notFound } from "./errors.ts";
import type { FieldScope } from "./fields.ts";
import type { WriteVerb } from "./history.ts";
import { copyForWrite } from "./json.ts";
import { injectMeshProxy } from "./injection.ts";
import { applyJsonPatch } from "./jsonpatch.ts";
import { applyFields, updateFields } from "./managed.ts";
import { type Actor, ObjectStorage, type WriteResult } from "./storage.ts";
import type { JsonObject } from "../../src/api/json.ts";

export { type Actor, CRD_CLEANUP_FINALIZER, type WriteResult } from "./storage.ts";

/** Storage of every object of every served type, written through the API's verbs. */
export class Store extends ObjectStorage {
  /** Creates an object; 409 AlreadyExists if its name is taken. */
  create(type: ResourceType, input: KubeObject, actor: Actor): WriteResult {
    const rtype = this.types.resolve(type);
    const obj = normalize(rtype, copyForWrite(input));
    if (!obj.metadata.name) {
      obj.metadata.name = generateName(
        rtype,
        obj,
        this.random,
        (n) => !!this.entry(rtype, obj.metadata.namespace, n),
      );
    }
    const { namespace, name } = obj.metadata;
    if (this.entry(rtype, namespace, name)) throw alreadyExists(rtype, name);
    this.checkNamespace(rtype, name, namespace);
    if (rtype.kind === "Pod" && rtype.group === "" && namespace) {
      // Istio's mutating webhook, before validation as on a real API server.
      const ns = this.get(RESOURCES.Namespace, undefined, namespace);
      injectMeshProxy(obj, ns?.metadata.labels ?? {});
    }
    if (this.types.hasStatus(rtype)) delete obj.status;
    const managed = updateFields(
      undefined,
      obj,
      new Map(),
      this.writer(rtype, actor),
      "main",
      this.types.listRules(rtype),
    );
    return this.commit(rtype, undefined, obj, managed, actor, "create");
  }

  /** Replaces an object (main resource or /status); 409 when metadata.resourceVersion is stale. */
  update(
    type: ResourceType,
    input: KubeObject,
    actor: Actor,
    scope: FieldScope = "main",
  ): WriteResult {
    const rtype = this.types.resolve(type);
    const obj = normalize(rtype, copyForWrite(input));
    const prev = this.existing(rtype, obj.metadata.namespace, obj.metadata.name);
    checkUpdatePreconditions(rtype, prev.obj, obj);
    const next = confine(prev.obj, obj, scope, this.types.hasStatus(rtype), true);
    const managed = updateFields(
      prev.obj,
      next,
      prev.managed,
      this.writer(rtype, actor),
      scope,
      this.types.listRules(rtype),
    );
    return this.commit(
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
    scope: FieldScope = "main",
  ): WriteResult {
    const rtype = this.types.resolve(type);
    const obj = normalize(rtype, copyForWrite(input));
    const { namespace, name } = obj.metadata;
    const prev = this.entry(rtype, namespace, name);
    const verb: WriteVerb = scope === "status" ? "applyStatus" : "apply";
    if (!prev && scope === "status") throw notFound(rtype, name);
    const rv = obj.metadata.resourceVersion;
    if (rv !== undefined && rv !== prev?.obj.metadata.resourceVersion) throw conflict(rtype, name);
    const writer = this.writer(rtype, actor);
    const rules = this.types.listRules(rtype);
    if (!prev) {
      this.checkNamespace(rtype, name, namespace);
      const created = applyFields(undefined, obj, new Map(), writer, "main", true, rules);
      const fresh = { ...created.obj, apiVersion: obj.apiVersion, kind: obj.kind } as KubeObject;
      fresh.metadata = { ...(fresh.metadata ?? {}), name, ...(namespace ? { namespace } : {}) };
      return this.commit(rtype, undefined, fresh, created.managed, actor, verb);
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
    const next = confine(
      prev.obj,
      result.obj as KubeObject,
      scope,
      this.types.hasStatus(rtype),
      true,
    );
    return this.commit(rtype, prev, next, result.managed, actor, verb);
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
    const prev = this.existing(rtype, namespace, name);
    const patched = applyJsonPatch(prev.obj, ops) as KubeObject;
    if (patched?.metadata?.name !== name) throw badRequest("a patch may not change metadata.name");
    const next = confine(prev.obj, normalize(rtype, patched), "main", this.types.hasStatus(rtype));
    const managed = updateFields(
      prev.obj,
      next,
      prev.managed,
      this.writer(rtype, actor),
      "main",
      this.types.listRules(rtype),
    );
    return this.commit(rtype, prev, next, managed, actor, "patch");
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
    const prev = this.existing(rtype, namespace, name);
    checkDeletePreconditions(rtype, prev.obj, opts);
    if (opts.propagationPolicy === "Orphan") this.orphaning.add(prev.obj.metadata.uid!);
    if (!deletionPending(rtype, prev.obj)) return this.remove(rtype, prev, actor, "delete");
    if (prev.obj.metadata.deletionTimestamp) return { obj: prev.obj, changed: false };
    const next = markDeleting(rtype, prev.obj, this.now());
    return this.commit(rtype, prev, next, prev.managed, actor, "delete", true);
  }

  /** Removes a namespace whose contents are gone (the namespace controller's last step). */
  finalizeNamespace(name: string, actor: Actor): void {
    const rtype = RESOURCES.Namespace;
    const prev = this.entry(rtype, undefined, name);
    if (prev?.obj.metadata.deletionTimestamp) this.remove(rtype, prev, actor, "update");
  }
}

export type { JsonObject };
