/** Reading JSON of unknown shape: objects as the API server, a user or Envoy's config wrote them. */

/** A JSON object. */
export type JsonObject = Record<string, unknown>;

/** True for a JSON object: not null, not an array. */
export function isObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** The value under `keys` in `v`; undefined as soon as a step is not an object. */
export function at(v: unknown, ...keys: string[]): unknown {
  let cur = v;
  for (const k of keys) cur = isObject(cur) ? cur[k] : undefined;
  return cur;
}
