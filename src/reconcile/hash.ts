/** Stable hashing for names and config-hash annotations: same input, same hash, on every platform. */
import { isEmptyContainer } from "../api/json.ts";

const encoder = new TextEncoder();

/**
 * FNV-1a, 64 bits, of the UTF-8 bytes of `text`, as 16 hex digits. Not for security. The 64-bit
 * state is two 32-bit halves (BigInt arithmetic a byte cost microseconds): the prime is
 * 2^40 + 0x1b3, so h * prime = (h << 40) + h * 0x1b3 modulo 2^64, and every partial product stays
 * below 2^53, where doubles are exact.
 */
export function fnv1a64(text: string): string {
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  const bytes = encoder.encode(text);
  for (let i = 0; i < bytes.length; i++) {
    lo = (lo ^ bytes[i]) >>> 0;
    const low = lo * 0x1b3;
    const carry = Math.floor(low / 0x100000000);
    hi = (hi * 0x1b3 + carry + ((lo << 8) >>> 0)) >>> 0;
    lo = low >>> 0;
  }
  return hi.toString(16).padStart(8, "0") + lo.toString(16).padStart(8, "0");
}

/** JSON with object keys sorted at every level, so equal values give equal text. */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
    const obj = v as Record<string, unknown>;
    return Object.fromEntries(Object.keys(obj).sort().map((k) => [k, obj[k]]));
  });
}

/**
 * `value` in a canonical form: object keys sorted, and null, undefined, empty objects and empty
 * lists dropped from objects (the API server omits them, and the runner's `isObserved` counts them
 * as absent); list items keep their places.
 */
export function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const v = canonical((value as Record<string, unknown>)[key]);
    if (v === null || v === undefined) continue;
    if (typeof v === "object" && Object.keys(v).length === 0) continue;
    out[key] = v;
  }
  return out;
}

/**
 * True when `canonical(value)` would equal `value`, key order included: every object's keys in
 * sorted order and no field omitted. What the API server returns is (its objects are written with
 * sorted keys), and checking costs no copy.
 */
function isCanonical(value: unknown): boolean {
  if (value === null || typeof value !== "object") return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!isCanonical(value[i])) return false;
    return true;
  }
  const obj = value as Record<string, unknown>;
  let previous: string | undefined;
  for (const key in obj) {
    if (!Object.hasOwn(obj, key) || (previous !== undefined && !(previous < key))) return false;
    previous = key;
    const v = obj[key];
    if (v === null || v === undefined) return false;
    if (typeof v !== "object") continue;
    if (isEmptyContainer(v) || !isCanonical(v)) return false;
  }
  return true;
}

const digests = new WeakMap<object, string>();

/** 53 bits of two 32-bit multiplicative hashes of `text`, as 14 hex digits. Not for security. */
export function textDigest(text: string): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(16).padStart(14, "0");
}

/**
 * A digest of a spec: equal for specs equal up to key order and omitted empty fields. The
 * `textDigest` of the canonical JSON (a chance of about 1 in 10^16 that two different specs
 * collide). A frozen spec's digest is remembered for its life.
 */
export function specDigest(spec: unknown): string {
  const memo = spec !== null && typeof spec === "object" && Object.isFrozen(spec);
  if (memo) {
    const hit = digests.get(spec);
    if (hit !== undefined) return hit;
  }
  const text = JSON.stringify(isCanonical(spec) ? spec : canonical(spec)) ?? "undefined";
  const digest = textDigest(text);
  if (memo) digests.set(spec, digest);
  return digest;
}
