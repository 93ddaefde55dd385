/**
 * Field paths and list semantics for server-side apply, after structured-merge-diff: an object's
 * fields are leaf paths (`f:spec` `f:replicas`); items of associative lists are addressed by their
 * keys (`k:{"name":"app"}`) and owned through a `.` marker; set items by value (`v:"x"`); every
 * other list is atomic (one leaf). Which lists are associative comes from `ListRules`: a CRD's
 * `x-kubernetes-list-type`, or the built-in types' known merge keys.
 */
import { isObject, type JsonObject } from "../../src/api/json.ts";
import { stableJson } from "../../src/reconcile/hash.ts";

/** How a list merges. */
export type ListRule = { type: "atomic" } | { type: "map"; keys: string[] } | { type: "set" };
/** The list rule of the list at a field path (field names from the root; list items skipped). */
export type ListRules = (fieldPath: readonly string[]) => ListRule;

const ATOMIC: ListRule = { type: "atomic" };
/** What separates the segments of a FieldPath. */
export const FIELD_SEP = "\u0001";
const SEP = FIELD_SEP;

/** A path as one string (segments joined by an unprintable separator). */
export type FieldPath = string;

/** Splits an encoded path into segments. */
export function segments(path: FieldPath): string[] {
  return path.split(SEP);
}

/** `prefix` with one more segment (an empty prefix has none: segments are never empty). */
function join(prefix: FieldPath, seg: string): FieldPath {
  return prefix === "" ? seg : prefix + SEP + seg;
}

/** True when the path's last segment is `.`, an associative list item's own marker. */
export function isItemMarker(path: FieldPath): boolean {
  return path === "." || path.endsWith(SEP + ".");
}

/** How many segments a path has (`segments(path).length`, without splitting it). */
export function depthOf(path: FieldPath): number {
  let n = 1;
  for (let i = path.indexOf(SEP); i >= 0; i = path.indexOf(SEP, i + 1)) n++;
  return n;
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
  // Key loops rather than Object.entries: the same fields, without an array a field.
  const out: JsonObject = {};
  for (const k of Object.keys(obj)) {
    if (k === "apiVersion" || k === "kind" || k === "status") continue;
    const v = obj[k];
    if (k === "metadata" && isObject(v)) {
      const meta: JsonObject = {};
      for (const mk of Object.keys(v)) {
        const mv = v[mk];
        if (!SERVER_META.has(mk) && mv !== undefined) meta[mk] = mv;
      }
      if (Object.keys(meta).length > 0) out.metadata = meta;
    } else if (v !== undefined) out[k] = v;
  }
  return out;
}

/** JSON of a key's value when that is what `stableJson` writes for it alone; else undefined. */
function scalarJson(v: unknown): string | undefined {
  const t = typeof v;
  return t === "string" || t === "number" || t === "boolean" || v === null
    ? JSON.stringify(v)
    : undefined;
}

/** The `k:` segment of an associative list item with merge keys `keys`. */
export function itemKey(item: unknown, keys: readonly string[]): string {
  // The usual one-key case (`name`, `type`, `uid`) without stableJson's replacer; same text.
  if (keys.length === 1 && isObject(item) && keys[0] !== "__proto__") {
    const v = item[keys[0]];
    if (v === undefined) return "k:{}";
    const json = scalarJson(v);
    if (json !== undefined) return `k:{${JSON.stringify(keys[0])}:${json}}`;
  }
  const picked: JsonObject = {};
  if (isObject(item)) { for (const k of keys) if (item[k] !== undefined) picked[k] = item[k]; }
  return `k:${stableJson(picked)}`;
}

/** The leaf paths of a (scoped) object. */
export function fieldSet(obj: JsonObject, rules: ListRules): Set<FieldPath> {
  const out = new Set<FieldPath>();
  // The field names down to `v`, one array pushed and popped (rules read it, never keep it).
  const fp: string[] = [];
  const walk = (v: unknown, prefix: FieldPath) => {
    if (isObject(v)) {
      let defined = 0;
      for (const k of Object.keys(v)) {
        const x = v[k];
        if (x === undefined) continue;
        defined++;
        fp.push(k);
        walk(x, join(prefix, `f:${k}`));
        fp.pop();
      }
      // An empty object is a leaf; it has no paths below to come before it.
      if (defined === 0 && prefix !== "") out.add(prefix);
      return;
    }
    if (Array.isArray(v)) {
      const rule = rules(fp);
      if (rule.type === "set") {
        for (const item of v) out.add(join(prefix, `v:${stableJson(item)}`));
      } else if (rule.type === "map" && v.every(isObject)) {
        for (const item of v) {
          const at = join(prefix, itemKey(item, rule.keys));
          out.add(at + SEP + ".");
          walk(item, at);
        }
      } else out.add(prefix);
      return;
    }
    out.add(prefix);
  };
  walk(obj, "");
  return out;
}

/** The index of the first list item a `k:` or `v:` segment addresses; -1 when none. */
export function findItem(list: unknown[], seg: string): number {
  if (seg.startsWith("v:")) return list.findIndex((x) => `v:${stableJson(x)}` === seg);
  const keys = Object.keys(JSON.parse(seg.slice(2)) as JsonObject);
  return list.findIndex((x) => itemKey(x, keys) === seg);
}

const MISSING = Symbol("missing");

/** The value at a path; the `MISSING` symbol when absent. */
export function valueAt(obj: unknown, path: FieldPath): unknown {
  let cur: unknown = obj;
  // The segments one by one, without splitting the path into an array.
  for (let start = 0, end = 0; end >= 0; start = end + 1) {
    end = path.indexOf(SEP, start);
    const seg = end < 0 ? path.slice(start) : path.slice(start, end);
    if (seg === ".") return cur;
    if (seg.startsWith("f:")) {
      const key = seg.slice(2);
      if (!isObject(cur) || !Object.hasOwn(cur, key)) return MISSING;
      cur = cur[key];
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
