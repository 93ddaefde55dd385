/**
 * Changing an object by field paths, for server-side apply: removing a field a manager dropped,
 * and merging an applied configuration in. The object may share sealed values with the stored one
 * (json.ts): what is changed is copied first.
 */
import {
  FIELD_SEP,
  type FieldPath,
  findItem,
  itemKey,
  type ListRules,
  segments,
} from "./fields.ts";
import { copyShared, thaw } from "./json.ts";
import { isObject, type JsonObject } from "../../src/api/json.ts";
import { stableJson } from "../../src/reconcile/hash.ts";

/**
 * Removes the value at `path` from `obj` (in place), then removes parents left empty unless
 * `keep` says someone owns them as a leaf.
 */
export function removeAt(
  obj: JsonObject,
  path: FieldPath,
  keep: (path: FieldPath) => boolean,
): void {
  const segs = segments(path);
  if (segs[segs.length - 1] === ".") segs.pop();
  const parents: { container: unknown; seg: string }[] = [];
  let cur: unknown = obj;
  for (let depth = 0; depth < segs.length; depth++) {
    const seg = segs[depth];
    // What the removal changes may be shared with the stored object (json.ts): change copies.
    const inner = depth < segs.length - 1;
    parents.push({ container: cur, seg });
    if (seg.startsWith("f:")) {
      const key = seg.slice(2);
      if (!isObject(cur) || !Object.hasOwn(cur, key)) return;
      if (inner) cur[key] = thaw(cur[key]);
      cur = cur[key];
    } else {
      if (!Array.isArray(cur)) return;
      const i = findItem(cur, seg);
      if (i < 0) return;
      if (inner) cur[i] = thaw(cur[i]);
      cur = cur[i];
    }
  }
  for (let depth = parents.length - 1; depth >= 0; depth--) {
    const { container, seg } = parents[depth];
    if (seg.startsWith("f:") && isObject(container)) delete container[seg.slice(2)];
    else if (Array.isArray(container)) container.splice(findItem(container, seg), 1);
    if (depth === 0) return;
    const empty = isObject(container)
      ? Object.keys(container).length === 0
      : (container as unknown[]).length === 0;
    if (!empty || keep(segs.slice(0, depth).join(FIELD_SEP))) return;
  }
}

/** Merges an applied configuration into `live` (in place where possible); returns the result. */
export function mergeApplied(
  live: unknown,
  applied: unknown,
  rules: ListRules,
  fp: string[] = [],
): unknown {
  if (isObject(applied)) {
    // Nothing to merge into: the merge is a copy, which may share what is sealed (a CRD's schema).
    if (!isObject(live)) return copyShared(applied);
    // `live` may share sealed values with the stored object (json.ts): change copies of them.
    const base: JsonObject = thaw(live);
    for (const k of Object.keys(applied)) {
      const v = applied[k];
      if (v !== undefined) base[k] = mergeApplied(base[k], v, rules, [...fp, k]);
    }
    return base;
  }
  if (Array.isArray(applied) && Array.isArray(live)) {
    const rule = rules(fp);
    if (rule.type === "set") {
      const out = [...live];
      for (const item of applied) {
        if (findItem(out, `v:${stableJson(item)}`) < 0) out.push(copyShared(item));
      }
      return out;
    }
    if (rule.type === "map" && applied.every(isObject) && live.every(isObject)) {
      const out: unknown[] = [...live];
      for (const item of applied) {
        const i = findItem(out, itemKey(item, rule.keys));
        if (i >= 0) out[i] = mergeApplied(out[i], item, rules, fp);
        else out.push(copyShared(item));
      }
      return out;
    }
  }
  return copyShared(applied);
}
