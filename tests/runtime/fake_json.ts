/** JSON helpers of the fake cluster: label selectors, merges, JSON Patch, managed fields. */
import { ApiError, type JsonPatchOp, type KubeObject } from "../../src/runtime/cluster.ts";

/** True when `obj` matches an equality label selector (`k=v,k2`). */
export function matches(obj: KubeObject, selector?: string): boolean {
  if (!selector) return true;
  const labels = obj.metadata.labels ?? {};
  return selector.split(",").every((term) => {
    const [k, v] = term.split("=");
    return v === undefined ? k in labels : labels[k] === v;
  });
}

/** Equality by JSON text (the fake keeps key order stable). */
export function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Deep merge of `patch` into `base`: maps merge, lists and scalars replace. */
export function merge(base: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== "object" || Array.isArray(patch)) {
    return structuredClone(patch);
  }
  const out: Record<string, unknown> = base && typeof base === "object" && !Array.isArray(base)
    ? { ...(base as Record<string, unknown>) }
    : {};
  for (const [k, v] of Object.entries(patch)) out[k] = merge(out[k], v);
  return out;
}

/** Applies one JSON Patch op; a `test` of null on a missing path passes, as in the API server. */
export function applyOp(obj: KubeObject, op: JsonPatchOp): void {
  const parts = op.path.split("/").slice(1).map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"));
  const last = parts.pop()!;
  let parent: Record<string, unknown> | unknown[] = obj as Record<string, unknown>;
  for (const p of parts) {
    const next: unknown = (parent as Record<string, unknown>)[p];
    if (next === undefined || next === null || typeof next !== "object") {
      if (op.op === "test" && "value" in op && op.value === null) return;
      throw new ApiError(422, "Invalid", `path ${op.path} does not exist`);
    }
    parent = next as Record<string, unknown>;
  }
  const rec = parent as Record<string, unknown>;
  switch (op.op) {
    case "test": {
      const cur = rec[last] ?? null;
      if (!same(cur, op.value)) {
        throw new ApiError(422, "Invalid", `test operation failed at ${op.path}`);
      }
      return;
    }
    case "add":
      if (Array.isArray(parent)) {
        if (last === "-") parent.push(op.value);
        else parent.splice(Number(last), 0, op.value);
      } else rec[last] = op.value;
      return;
    case "replace":
      rec[last] = op.value;
      return;
    case "remove":
      if (Array.isArray(parent)) parent.splice(Number(last), 1);
      else delete rec[last];
  }
}

/** The fieldsV1 of an applied object: map keys as `f:` entries, lists and scalars as leaves. */
export function fieldsOf(obj: KubeObject): Record<string, unknown> {
  const { apiVersion: _a, kind: _k, metadata, ...rest } = obj;
  const { name: _n, namespace: _ns, ...meta } = metadata;
  return fieldsV1({ ...rest, ...(Object.keys(meta).length ? { metadata: meta } : {}) });
}

/** The fieldsV1 shape of a value. */
export function fieldsV1(v: unknown): Record<string, unknown> {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return {};
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [`f:${k}`, fieldsV1(x)]));
}

/** Removes from `target` the fields of `owned` that `desired` no longer sets. */
export function prune(target: unknown, owned: unknown, desired: unknown): void {
  if (!owned || typeof owned !== "object" || !target || typeof target !== "object") return;
  const t = target as Record<string, unknown>;
  const d = (desired && typeof desired === "object" ? desired : {}) as Record<string, unknown>;
  for (const [k, sub] of Object.entries(owned)) {
    if (!k.startsWith("f:")) continue;
    const name = k.slice(2);
    if (d[name] === undefined) delete t[name];
    else prune(t[name], sub, d[name]);
  }
}
