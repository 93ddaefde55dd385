/** Small helpers on JSON values used across the simulated API server. */
import { isObject, type JsonObject } from "../../src/api/json.ts";
export { deepEqual, isObject, type JsonObject } from "../../src/api/json.ts";

/** JSON with object keys sorted: equal values give equal text (for hashes). */
export function stableStringify(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableStringify).join(",")}]`;
  if (isObject(v)) {
    const keys = Object.keys(v).filter((k) => v[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${stableStringify(v[k])}`).join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

/** The top-level fields other than apiVersion, kind, metadata and status: what `generation` tracks. */
export function specPart(obj: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(obj)) {
    if (k !== "apiVersion" && k !== "kind" && k !== "metadata" && k !== "status") out[k] = v;
  }
  return out;
}

/** A deep copy of a JSON value (much cheaper than structuredClone, which serializes). */
export function cloneJson<T>(v: T): T {
  if (v === null || typeof v !== "object") return v;
  if (Array.isArray(v)) return v.map(cloneJson) as T;
  const out: Record<string, unknown> = {};
  for (const k in v as Record<string, unknown>) {
    const x = (v as Record<string, unknown>)[k];
    if (x !== undefined) out[k] = cloneJson(x);
  }
  return out as T;
}
