/**
 * The API server's rules for one write, as pure functions of the stored and the sent object:
 * normalising the request, preconditions, what a write in each scope may change, generation, the
 * finalizer rule, and what a delete does to an object that has finalizers.
 */

import type { DeleteOptions } from "../../src/runtime/mod.ts";
import type { KubeObject, ResourceType } from "../../src/api/object.ts";
import { badRequest, conflict, invalid } from "./errors.ts";
import type { FieldScope } from "./fields.ts";
import { copyForWrite, copyShared, specPart } from "./json.ts";
import type { Prng } from "../prng.ts";
import { TypeRegistry } from "./types.ts";
import { deepEqual } from "../../src/api/json.ts";
import { kubeTime } from "../../src/api/time.ts";

/** Metadata the server owns: kept from the stored object on every main-resource write. */
const SERVER_OWNED = [
  "uid",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "generation",
] as const;

/** Fills apiVersion and kind, defaults the namespace, and checks the object names this type. */
export function normalize(type: ResourceType, obj: KubeObject): KubeObject {
  const apiVersion = type.group ? `${type.group}/${type.version}` : type.version;
  if (!obj || typeof obj !== "object" || !obj.metadata || typeof obj.metadata !== "object") {
    throw badRequest("Object 'metadata' is missing");
  }
  if (obj.kind !== undefined && obj.kind !== type.kind) {
    throw badRequest(
      `the kind ${JSON.stringify(obj.kind)} does not match the resource ${type.plural}`,
    );
  }
  if (obj.apiVersion !== undefined && obj.apiVersion !== apiVersion) {
    throw badRequest(
      `the API version in the data (${obj.apiVersion}) does not match the expected API version (${apiVersion})`,
    );
  }
  obj.apiVersion = apiVersion;
  obj.kind = type.kind;
  if (type.namespaced) obj.metadata.namespace = obj.metadata.namespace || "default";
  else delete obj.metadata.namespace;
  delete obj.metadata.managedFields;
  return obj;
}

/** Update preconditions: a resourceVersion (required for custom resources) and a uid must match. */
export function checkUpdatePreconditions(
  type: ResourceType,
  stored: KubeObject,
  sent: KubeObject,
): void {
  const rv = sent.metadata.resourceVersion;
  const name = stored.metadata.name;
  if (rv === undefined && !TypeRegistry.isBuiltinGroup(type.group)) {
    throw invalid(type, name, [
      "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update",
    ]);
  }
  if (rv !== undefined && rv !== stored.metadata.resourceVersion) throw conflict(type, name);
  checkUid(type, stored, sent.metadata.uid);
}

/** Delete preconditions (uid, resourceVersion). */
export function checkDeletePreconditions(
  type: ResourceType,
  stored: KubeObject,
  opts: DeleteOptions,
): void {
  const pre = opts.preconditions;
  checkUid(type, stored, pre?.uid);
  const rv = stored.metadata.resourceVersion;
  if (pre?.resourceVersion !== undefined && pre.resourceVersion !== rv) {
    throw conflict(
      type,
      stored.metadata.name,
      `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${rv}`,
    );
  }
}

function checkUid(type: ResourceType, stored: KubeObject, uid: string | undefined): void {
  if (uid !== undefined && uid !== stored.metadata.uid) {
    throw conflict(
      type,
      stored.metadata.name,
      `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${stored.metadata.uid}`,
    );
  }
}

/**
 * What a write in `scope` stores: a status write changes status only; a main-resource write keeps
 * the stored status (when the type has a status subresource) and the server-owned metadata.
 * `owned`: `next` is the write's own copy, made for it (copyForWrite, or server-side apply's merge,
 * so without undefined members) and read by no one after: it is changed and kept rather than
 * copied again.
 */
export function confine(
  prev: KubeObject,
  next: KubeObject,
  scope: FieldScope,
  hasStatus: boolean,
  owned = false,
): KubeObject {
  const old = prev.metadata;
  let out: KubeObject;
  if (scope === "status") {
    // Assigned into the copy: status keeps its place among the fields, as a spread would.
    out = copyForWrite(prev);
    out.status = owned ? next.status : copyShared(next.status);
    if (next.status === undefined) delete out.status;
  } else {
    out = owned ? next : copyForWrite(next);
    if (hasStatus) {
      if (prev.status === undefined) delete out.status;
      else out.status = copyShared(prev.status);
    }
    out.metadata = { ...out.metadata, name: old.name };
    if (old.namespace) out.metadata.namespace = old.namespace;
    const meta = out.metadata as Record<string, unknown>;
    for (const k of SERVER_OWNED) {
      if (old[k] === undefined) delete meta[k];
      else meta[k] = old[k];
    }
  }
  out.metadata.resourceVersion = old.resourceVersion;
  return out;
}

/**
 * Checks a change from `prev` to `next` and sets the new generation: bumped when anything besides
 * metadata and status changed; no new finalizers once deletion started.
 */
export function admitChange(type: ResourceType, prev: KubeObject, next: KubeObject): void {
  const oldMeta = prev.metadata;
  const meta = next.metadata;
  if (!deepEqual(specPart(prev), specPart(next))) meta.generation = (oldMeta.generation ?? 1) + 1;
  if (oldMeta.deletionTimestamp) {
    const added = (meta.finalizers ?? []).filter((f) => !(oldMeta.finalizers ?? []).includes(f));
    if (added.length > 0) {
      throw invalid(type, meta.name, [
        "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted",
      ]);
    }
  }
}

/** True when a delete must wait (finalizers, or a namespace that empties itself first). */
export function deletionPending(type: ResourceType, stored: KubeObject): boolean {
  return (stored.metadata.finalizers?.length ?? 0) > 0 || type.kind === "Namespace";
}

/** The object as a delete leaves it while finalizers remain: deletionTimestamp set, generation bumped. */
export function markDeleting(type: ResourceType, stored: KubeObject, now: number): KubeObject {
  const next = copyForWrite(stored);
  next.metadata.deletionTimestamp = kubeTime(now);
  next.metadata.deletionGracePeriodSeconds = 0;
  next.metadata.generation = (stored.metadata.generation ?? 0) + 1;
  if (type.kind === "Namespace") {
    next.spec = { finalizers: ["kubernetes"] };
    next.status = { phase: "Terminating" };
  }
  return next;
}

/** A name from `metadata.generateName` plus five random characters, not yet `taken`. */
export function generateName(
  type: ResourceType,
  obj: KubeObject,
  random: Prng,
  taken: (name: string) => boolean,
): string {
  const base = obj.metadata.generateName;
  if (typeof base !== "string" || !base) {
    throw invalid(type, "", ["metadata.name: Required value: name or generateName is required"]);
  }
  const alphabet = "bcdfghjklmnpqrstvwxz2456789";
  for (;;) {
    let suffix = "";
    for (let i = 0; i < 5; i++) suffix += alphabet[random.int(0, alphabet.length - 1)];
    if (!taken(base + suffix)) return base + suffix;
  }
}
