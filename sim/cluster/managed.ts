/**
 * Who owns which fields (metadata.managedFields) and the two ways a write changes that: an apply
 * (the manager's set becomes exactly what it applied; fields it dropped are removed unless someone
 * else owns them; conflicting fields need `force`) and an update (the writer takes every field it
 * changed).
 */
import { ApiError } from "../../src/runtime/mod.ts";

import {
  depthOf,
  type FieldPath,
  type FieldScope,
  fieldSet,
  has,
  isItemMarker,
  type ListRules,
  scoped,
  valueAt,
} from "./fields.ts";
import { mergeApplied, removeAt } from "./fields_edit.ts";
import { describePath, toFieldsV1 } from "./fields_v1.ts";
import { copyForWrite } from "./json.ts";
import { deepEqual, type JsonObject } from "../../src/api/json.ts";
import { kubeTime } from "../../src/api/time.ts";

/** One managedFields entry. */
export interface ManagedEntry {
  manager: string;
  operation: "Apply" | "Update";
  subresource: "" | "status";
  apiVersion: string;
  time: string;
  fields: Set<FieldPath>;
}

/** All entries of one object, by `manager/operation/subresource`. */
export type Managed = Map<string, ManagedEntry>;

function entryKey(manager: string, operation: string, scope: FieldScope): string {
  return `${manager}\u0000${operation}\u0000${scope === "status" ? "status" : ""}`;
}

function inScope(e: ManagedEntry, scope: FieldScope): boolean {
  return (e.subresource === "status") === (scope === "status");
}

/** A copy of `m` (entries copied, sets copied). */
export function cloneManaged(m: Managed): Managed {
  const out: Managed = new Map();
  for (const [k, e] of m) out.set(k, { ...e, fields: new Set(e.fields) });
  return out;
}

/** True when two sets of paths are equal. */
function sameFields(a: ReadonlySet<FieldPath>, b: ReadonlySet<FieldPath>): boolean {
  if (a.size !== b.size) return false;
  for (const p of a) if (!b.has(p)) return false;
  return true;
}

/** True when two ownership maps hold the same entries with the same fields. */
export function sameManaged(a: Managed, b: Managed): boolean {
  if (a.size !== b.size) return false;
  for (const [k, e] of a) {
    const f = b.get(k);
    if (!f || !sameFields(e.fields, f.fields)) return false;
  }
  return true;
}

/**
 * The metadata.managedFields list of an ownership map. `before` is the ownership the stored object
 * had and `shown` its managedFields: an entry whose fields did not change keeps its rendered
 * FieldsV1 (frozen, so shared), since rendering is the costliest part of a write.
 */
export function renderManaged(
  m: Managed,
  before?: Managed,
  shown?: readonly JsonObject[],
): JsonObject[] {
  const rendered = new Map<string, unknown>();
  for (const r of shown ?? []) {
    const scope: FieldScope = r.subresource === "status" ? "status" : "main";
    rendered.set(entryKey(String(r.manager), String(r.operation), scope), r.fieldsV1);
  }
  return [...m].map(([k, e]) => {
    const old = before?.get(k);
    const known = old && sameFields(old.fields, e.fields) ? rendered.get(k) : undefined;
    return {
      manager: e.manager,
      operation: e.operation,
      apiVersion: e.apiVersion,
      time: e.time,
      fieldsType: "FieldsV1",
      fieldsV1: known ?? toFieldsV1(e.fields),
      ...(e.subresource ? { subresource: e.subresource } : {}),
    };
  });
}

/** What a write needs to know about the writer. */
export interface Writer {
  manager: string;
  apiVersion: string;
  now: number;
}

function ownedByOthers(
  m: Managed,
  self: string,
  scope: FieldScope,
  path: FieldPath,
): ManagedEntry[] {
  const out: ManagedEntry[] = [];
  for (const [k, e] of m) if (k !== self && inScope(e, scope) && e.fields.has(path)) out.push(e);
  return out;
}

/**
 * Server-side apply of `applied` onto `live` (undefined when creating) in `scope`. Returns the new
 * object and ownership; throws 409 listing the conflicts unless `force`.
 */
export function applyFields(
  live: JsonObject | undefined,
  applied: JsonObject,
  managed: Managed,
  writer: Writer,
  scope: FieldScope,
  force: boolean,
  rules: ListRules,
): { obj: JsonObject; managed: Managed } {
  const self = entryKey(writer.manager, "Apply", scope);
  const next = cloneManaged(managed);
  const config = scoped(applied, scope);
  const newSet = fieldSet(config, rules);
  const obj: JsonObject = live ? copyForWrite(live) : {};

  const conflicts: string[] = [];
  for (const path of newSet) {
    if (isItemMarker(path)) continue;
    for (const other of ownedByOthers(next, self, scope, path)) {
      if (deepEqual(valueAt(obj, path), valueAt(config, path))) continue;
      if (force) other.fields.delete(path);
      else {conflicts.push(
          `conflict with "${other.manager}"${
            other.operation === "Update" ? " using " + other.apiVersion : ""
          }: ${describePath(path)}`,
        );}
    }
  }
  if (conflicts.length > 0) {
    throw new ApiError(
      409,
      "Conflict",
      `Apply failed with ${conflicts.length} conflict${conflicts.length > 1 ? "s" : ""}: ${
        conflicts.join("\n")
      }`,
    );
  }

  const owned = (p: FieldPath) =>
    [...next].some(([k, e]) => k !== self && inScope(e, scope) && e.fields.has(p));
  const previous = next.get(self)?.fields ?? new Set<FieldPath>();
  // Deepest first, so removing an item does not hide the leaves under it.
  const dropped = [...previous].filter((p) => !newSet.has(p) && !owned(p));
  const depth = new Map(dropped.map((p) => [p, depthOf(p)]));
  dropped.sort((a, b) => depth.get(b)! - depth.get(a)!);
  for (const path of dropped) if (has(obj, path)) removeAt(obj, path, owned);

  const merged = mergeApplied(obj, config, rules) as JsonObject;
  if (newSet.size > 0) {
    next.set(self, {
      manager: writer.manager,
      operation: "Apply",
      subresource: scope === "status" ? "status" : "",
      apiVersion: writer.apiVersion,
      time: kubeTime(writer.now),
      fields: newSet,
    });
  } else next.delete(self);
  for (const [k, e] of next) if (e.fields.size === 0) next.delete(k);
  return { obj: merged, managed: keepTimes(managed, next) };
}

/** The fields of an object an update stored, in the scope and under the rules it was written with. */
const fieldSets = new WeakMap<
  object,
  { scope: FieldScope; rules: ListRules; set: ReadonlySet<FieldPath> }
>();

/**
 * Ownership after a non-apply write (update, patch) from `before` to `after` in `scope`: the writer
 * takes every field it added or changed; fields it removed leave every owner.
 */
export function updateFields(
  before: JsonObject | undefined,
  after: JsonObject,
  managed: Managed,
  writer: Writer,
  scope: FieldScope,
  rules: ListRules,
): Managed {
  const self = entryKey(writer.manager, "Update", scope);
  const next = cloneManaged(managed);
  const oldObj = before ? scoped(before, scope) : {};
  const known = before && fieldSets.get(before);
  const oldSet = !before
    ? new Set<FieldPath>()
    : known && known.scope === scope && known.rules === rules
    ? known.set
    : fieldSet(oldObj, rules);
  const newObj = scoped(after, scope);
  const newSet = fieldSet(newObj, rules);
  // An update or patch stores `after` as it is here but for server-set metadata, which no scope
  // holds: the next write to it finds its fields here. (Not so a create: a CRD gains a finalizer.)
  if (before) fieldSets.set(after, { scope, rules, set: newSet });
  const changed = [...newSet].filter((p) =>
    !oldSet.has(p) || !deepEqual(valueAt(oldObj, p), valueAt(newObj, p))
  );
  const removed = [...oldSet].filter((p) => !newSet.has(p));
  for (const [k, e] of next) {
    if (!inScope(e, scope)) continue;
    for (const p of removed) e.fields.delete(p);
    if (k !== self) { for (const p of changed) e.fields.delete(p); }
  }
  if (changed.length > 0) {
    const mine = next.get(self);
    const fields = new Set([...(mine?.fields ?? []), ...changed]);
    next.set(self, {
      manager: writer.manager,
      operation: "Update",
      subresource: scope === "status" ? "status" : "",
      apiVersion: writer.apiVersion,
      time: kubeTime(writer.now),
      fields,
    });
  }
  for (const [k, e] of next) if (e.fields.size === 0) next.delete(k);
  return keepTimes(managed, next);
}

/** Entries whose fields did not change keep their old time (so a no-op writes nothing). */
function keepTimes(before: Managed, after: Managed): Managed {
  for (const [k, e] of after) {
    const old = before.get(k);
    if (old && sameFields(old.fields, e.fields)) e.time = old.time;
  }
  return after;
}
