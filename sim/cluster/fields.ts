/**
 * Field paths and list semantics for server-side apply, after structured-merge-diff: an object's
 * fields are leaf paths (`f:spec` `f:replicas`); items of associative lists are addressed by their
 * keys (`k:{"name":"app"}`) and owned through a `.` marker; set items by value (`v:"x"`); every
 * other list is atomic (one leaf). Which lists are associative comes from `ListRules`: a CRD's
 * `x-kubernetes-list-type`, or the built-in types' known merge keys.
 */
import { cloneJson } from "./json.ts";
import { isObject, type JsonObject } from "../../src/api/json.ts";
import { stableJson } from "../../src/reconcile/hash.ts";

/** How a list merges. */
export type ListRule = { type: "atomic" } | { type: "map"; keys: string[] } | { type: "set" };
/** The list rule of the list at a field path (field names from the root; list items skipped). */
export type ListRules = (fieldPath: readonly string[]) => ListRule;

const ATOMIC: ListRule = { type: "atomic" };
const SEP = "\u0001";

/** A path as one string (segments joined by an unprintable separator). */
export type FieldPath = string;

/** Splits an encoded path into segments. */
export function segments(path: FieldPath): string[] {
  return path.split(SEP);
}

function enc(segs: readonly string[]): FieldPath {
  return segs.join(SEP);
}

function metadataRule(fieldPath: readonly string[]): ListRule | undefined {
  if (fieldPath.length === 2 && fieldPath[0] === "metadata") {
    if (fieldPath[1] === "finalizers") return { type: "set" };
    if (fieldPath[1] === "ownerReferences") return { type: "map", keys: ["uid"] };
    return ATOMIC;
  }
  return undefined;
}

const NAME_KEYED = new Set([
  "containers",
  "initContainers",
  "ephemeralContainers",
  "volumes",
  "env",
  "imagePullSecrets",
  "webhooks",
  "hostAliases",
]);

/** List rules of the built-in types (their patchMergeKey / listMapKeys). */
export const builtinListRules: ListRules = (fp) => {
  const meta = metadataRule(fp);
  if (meta) return meta;
  const last = fp[fp.length - 1];
  if (last === "conditions") return { type: "map", keys: ["type"] };
  if (NAME_KEYED.has(last)) return { type: "map", keys: ["name"] };
  if (last === "volumeMounts") return { type: "map", keys: ["mountPath"] };
  if (last === "ports") {
    return {
      type: "map",
      keys: fp.includes("containers") ? ["containerPort", "protocol"] : ["port", "protocol"],
    };
  }
  return ATOMIC;
};

/** List rules read from a CRD version's openAPIV3Schema. */
export function schemaListRules(schema: unknown): ListRules {
  return (fp) => {
    const meta = metadataRule(fp);
    if (meta) return meta;
    let node: unknown = schema;
    for (const name of fp) {
      if (!isObject(node)) return ATOMIC;
      if (node.type === "array") node = node.items;
      if (!isObject(node)) return ATOMIC;
      const props = node.properties;
      node = isObject(props) && props[name] !== undefined ? props[name] : node.additionalProperties;
    }
    if (!isObject(node)) return ATOMIC;
    const kind = node["x-kubernetes-list-type"];
    const keys = node["x-kubernetes-list-map-keys"];
    if (kind === "map" && Array.isArray(keys)) return { type: "map", keys: keys.map(String) };
    if (kind === "set") return { type: "set" };
    return ATOMIC;
  };
}

/** Server-set metadata that no manager owns. */
const SERVER_META = new Set([
  "name",
  "namespace",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "managedFields",
  "selfLink",
  "generateName",
]);

/** Which part of an object a write covers: the main resource or its /status subresource. */
export type FieldScope = "main" | "status";

/** The top-level fields of `obj` a write in `scope` may own. */
export function scoped(obj: JsonObject, scope: FieldScope): JsonObject {
  if (scope === "status") return obj.status === undefined ? {} : { status: obj.status };
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(obj)) {
    if (k === "apiVersion" || k === "kind" || k === "status") continue;
    if (k === "metadata" && isObject(v)) {
      const meta: JsonObject = {};
      for (const [mk, mv] of Object.entries(v)) {
        if (!SERVER_META.has(mk) && mv !== undefined) meta[mk] = mv;
      }
      if (Object.keys(meta).length > 0) out.metadata = meta;
    } else if (v !== undefined) out[k] = v;
  }
  return out;
}

function itemKey(item: unknown, keys: readonly string[]): string {
  const picked: JsonObject = {};
  if (isObject(item)) { for (const k of keys) if (item[k] !== undefined) picked[k] = item[k]; }
  return `k:${stableJson(picked)}`;
}

/** The leaf paths of a (scoped) object. */
export function fieldSet(obj: JsonObject, rules: ListRules): Set<FieldPath> {
  const out = new Set<FieldPath>();
  const walk = (v: unknown, segs: string[], fp: string[]) => {
    if (isObject(v)) {
      const keys = Object.keys(v).filter((k) => v[k] !== undefined);
      if (keys.length === 0 && segs.length > 0) out.add(enc(segs));
      for (const k of keys) walk(v[k], [...segs, `f:${k}`], [...fp, k]);
      return;
    }
    if (Array.isArray(v)) {
      const rule = rules(fp);
      if (rule.type === "set") {
        for (const item of v) out.add(enc([...segs, `v:${stableJson(item)}`]));
      } else if (rule.type === "map" && v.every(isObject)) {
        for (const item of v) {
          const k = itemKey(item, rule.keys);
          out.add(enc([...segs, k, "."]));
          walk(item, [...segs, k], fp);
        }
      } else out.add(enc(segs));
      return;
    }
    out.add(enc(segs));
  };
  walk(obj, [], []);
  return out;
}

function findItem(list: unknown[], seg: string): number {
  if (seg.startsWith("v:")) return list.findIndex((x) => `v:${stableJson(x)}` === seg);
  const keys = Object.keys(JSON.parse(seg.slice(2)) as JsonObject);
  return list.findIndex((x) => itemKey(x, keys) === seg);
}

const MISSING = Symbol("missing");

/** The value at a path; the `MISSING` symbol when absent. */
export function valueAt(obj: unknown, path: FieldPath): unknown {
  let cur: unknown = obj;
  for (const seg of segments(path)) {
    if (seg === ".") return cur;
    if (seg.startsWith("f:")) {
      if (!isObject(cur) || !Object.hasOwn(cur, seg.slice(2))) return MISSING;
      cur = cur[seg.slice(2)];
    } else {
      if (!Array.isArray(cur)) return MISSING;
      const i = findItem(cur, seg);
      if (i < 0) return MISSING;
      cur = cur[i];
    }
  }
  return cur;
}

/** True when the path exists in `obj`. */
export function has(obj: unknown, path: FieldPath): boolean {
  return valueAt(obj, path) !== MISSING;
}

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
  for (const seg of segs) {
    parents.push({ container: cur, seg });
    if (seg.startsWith("f:")) {
      if (!isObject(cur) || !Object.hasOwn(cur, seg.slice(2))) return;
      cur = cur[seg.slice(2)];
    } else {
      if (!Array.isArray(cur)) return;
      const i = findItem(cur, seg);
      if (i < 0) return;
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
    if (!empty || keep(enc(segs.slice(0, depth)))) return;
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
    const base: JsonObject = isObject(live) ? live : {};
    for (const [k, v] of Object.entries(applied)) {
      if (v !== undefined) base[k] = mergeApplied(base[k], v, rules, [...fp, k]);
    }
    return base;
  }
  if (Array.isArray(applied) && Array.isArray(live)) {
    const rule = rules(fp);
    if (rule.type === "set") {
      const out = [...live];
      for (const item of applied) {
        if (findItem(out, `v:${stableJson(item)}`) < 0) out.push(cloneJson(item));
      }
      return out;
    }
    if (rule.type === "map" && applied.every(isObject) && live.every(isObject)) {
      const out: unknown[] = [...live];
      for (const item of applied) {
        const i = findItem(out, itemKey(item, rule.keys));
        if (i >= 0) out[i] = mergeApplied(out[i], item, rules, fp);
        else out.push(cloneJson(item));
      }
      return out;
    }
  }
  return cloneJson(applied);
}

/** Renders leaf paths as the API's nested FieldsV1 object. */
export function toFieldsV1(paths: Iterable<FieldPath>): JsonObject {
  const root: JsonObject = {};
  for (const path of [...paths].sort()) {
    let node = root;
    for (const seg of segments(path)) {
      if (!isObject(node[seg])) node[seg] = {};
      node = node[seg] as JsonObject;
    }
  }
  return root;
}

/** `.spec.replicas`-style rendering of a path, for conflict messages. */
export function describePath(path: FieldPath): string {
  return segments(path).filter((s) => s !== ".").map((s) =>
    s.startsWith("f:") ? `.${s.slice(2)}` : `[${s.slice(2)}]`
  ).join("");
}
