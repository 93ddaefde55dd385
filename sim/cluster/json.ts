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
  return copyJson(v, false);
}

/**
 * What a client is handed: a copy of what the server may still change, and what is frozen (every
 * committed object is) shared as it is, since no one can change it. A real client decodes a fresh
 * copy; sharing a frozen one keeps that guarantee (a write to it throws) without copying every
 * object of every list and watch event, which was a ninth of a sweep's time.
 */
export function readCopy<T>(v: T): T {
  return copyJson(v, true);
}

/** A deep copy without undefined members; with `shareFrozen`, frozen values are not copied. */
function copyJson<T>(v: T, shareFrozen: boolean): T {
  if (v === null || typeof v !== "object" || (shareFrozen && Object.isFrozen(v))) return v;
  if (Array.isArray(v)) return v.map((x) => copyJson(x, shareFrozen)) as T;
  const out: Record<string, unknown> = {};
  for (const k in v as Record<string, unknown>) {
    const x = (v as Record<string, unknown>)[k];
    if (x !== undefined) out[k] = copyJson(x, shareFrozen);
  }
  return out as T;
}
