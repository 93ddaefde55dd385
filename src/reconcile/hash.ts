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

const digests = new WeakMap<object, string>();

/** The state of `textDigest`'s two multiplicative hashes, fed a character at a time. */
let h1 = 0;
let h2 = 0;

function resetHash(): void {
  h1 = 0xdeadbeef;
  h2 = 0x41c6ce57;
}

function feed(text: string): void {
  let a = h1;
  let b = h2;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 2654435761);
    b = Math.imul(b ^ c, 1597334677);
  }
  h1 = a;
  h2 = b;
}

function finishHash(): string {
  let a = h1;
  let b = h2;
  a = Math.imul(a ^ (a >>> 16), 2246822507) ^ Math.imul(b ^ (b >>> 13), 3266489909);
  b = Math.imul(b ^ (b >>> 16), 2246822507) ^ Math.imul(a ^ (a >>> 13), 3266489909);
  return (4294967296 * (2097151 & b) + (a >>> 0)).toString(16).padStart(14, "0");
}

/** 53 bits of two 32-bit multiplicative hashes of `text`, as 14 hex digits. Not for security. */
export function textDigest(text: string): string {
  resetHash();
  feed(text);
  return finishHash();
}

/** Feeds a string as JSON writes it: as it is, quoted, unless a character needs an escape. */
function feedString(text: string): void {
  let a = Math.imul(h1 ^ 0x22, 2654435761);
  let b = Math.imul(h2 ^ 0x22, 1597334677);
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // A quote, a backslash, a control character or a surrogate: JSON.stringify says how it reads.
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) {
      feed(JSON.stringify(text));
      return;
    }
    a = Math.imul(a ^ c, 2654435761);
    b = Math.imul(b ^ c, 1597334677);
  }
  h1 = Math.imul(a ^ 0x22, 2654435761);
  h2 = Math.imul(b ^ 0x22, 1597334677);
}

/**
 * Feeds the JSON text of `value` if `canonical(value)` would equal it, key order included (every
 * object's keys in sorted order, no field omitted), and says whether it would. What the API server
 * returns is canonical (its objects are written with sorted keys): hashing it as it is walked costs
 * neither a copy nor its text. After false, the state is of no use.
 */
function feedCanonical(value: unknown): boolean {
  switch (typeof value) {
    case "string":
      feedString(value);
      return true;
    case "number":
      feed(Number.isFinite(value) ? String(value) : "null");
      return true;
    case "boolean":
      feed(value ? "true" : "false");
      return true;
    case "undefined":
      feed("null"); // a list's item; an object's undefined field is not canonical
      return true;
    case "object":
      break;
    default:
      return false;
  }
  if (value === null) {
    feed("null");
    return true;
  }
  if (Array.isArray(value)) {
    feed("[");
    for (let i = 0; i < value.length; i++) {
      if (i > 0) feed(",");
      if (!feedCanonical(value[i])) return false;
    }
    feed("]");
    return true;
  }
  const obj = value as Record<string, unknown>;
  let previous: string | undefined;
  feed("{");
  for (const key in obj) {
    if (!Object.hasOwn(obj, key) || (previous !== undefined && !(previous < key))) return false;
    const v = obj[key];
    if (v === null || v === undefined || (typeof v === "object" && isEmptyContainer(v))) {
      return false;
    }
    if (previous !== undefined) feed(",");
    previous = key;
    feedString(key);
    feed(":");
    if (!feedCanonical(v)) return false;
  }
  feed("}");
  return true;
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
  resetHash();
  const digest = spec !== undefined && feedCanonical(spec)
    ? finishHash()
    : textDigest(JSON.stringify(canonical(spec)) ?? "undefined");
  if (memo) digests.set(spec, digest);
  return digest;
}
