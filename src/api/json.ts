/** Reading JSON of unknown shape: objects as the API server, a user or Envoy's config wrote them. */

/** A JSON object. */
export type JsonObject = Record<string, unknown>;

/** True for a JSON object: not null, not an array. */
export function isObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/**
 * True for an empty list or an object with no fields of its own. Asked without listing the keys:
 * the spec digest asks it of every object in every EnvoyFilter the cache lists.
 */
export function isEmptyContainer(v: unknown): boolean {
  if (Array.isArray(v)) return v.length === 0;
  if (v === null || typeof v !== "object") return false;
  for (const key in v) if (Object.hasOwn(v, key)) return false;
  return true;
}

/** The value under `keys` in `v`; undefined as soon as a step is not an object. */
export function at(v: unknown, ...keys: string[]): unknown {
  let cur = v;
  for (const k of keys) cur = isObject(cur) ? cur[k] : undefined;
  return cur;
}

/**
 * The bytes `value` takes as the API server stores it: JSON as Go's encoding/json writes it
 * (apimachinery's unstructured encoder), UTF-8, with `<`, `>`, `&`, U+2028 and U+2029 escaped as
 * six-byte `\uXXXX`. Other escapes are the same as JSON.stringify's; map key order does not matter.
 */
export function storedBytes(value: unknown): number {
  const text = JSON.stringify(value) ?? "";
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x3c || c === 0x3e || c === 0x26 || c === 0x2028 || c === 0x2029) bytes += 6;
    else if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      // JSON.stringify escapes lone surrogates, so a high one here starts a pair: 4 bytes.
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** Structural equality with JSON semantics: key order does not matter, undefined fields are absent. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  }
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a).filter((k) => a[k] !== undefined);
    const kb = Object.keys(b).filter((k) => b[k] !== undefined);
    return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
  }
  return false;
}

/**
 * Freezes `value` and everything it holds (JSON data: plain objects and lists); returns it. It
 * visits only objects and lists, and allocates nothing: the cache freezes every object it keeps.
 */
export function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== "object" || Object.isFrozen(value)) return value;
  Object.freeze(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      if (v !== null && typeof v === "object") deepFreeze(v);
    }
  } else {
    const obj = value as Record<string, unknown>;
    for (const key in obj) {
      const v = obj[key];
      if (v !== null && typeof v === "object") deepFreeze(v);
    }
  }
  return value;
}

/** `v` when it is an object whose values are all strings (labels, a selector); else undefined. */
export function stringMap(v: unknown): Record<string, string> | undefined {
  if (!isObject(v)) return undefined;
  for (const k in v) if (typeof v[k] !== "string") return undefined;
  return v as Record<string, string>;
}
