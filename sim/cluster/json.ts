/** Small helpers on JSON values used across the simulated API server. */
import type { JsonObject } from "../../src/api/json.ts";

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
