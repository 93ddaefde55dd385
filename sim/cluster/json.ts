/**
 * Small helpers on JSON values used across the simulated API server, and how it copies them: a
 * request's object is copied as it arrives, but what the server itself stored (frozen, and with no
 * undefined member anywhere below) is shared instead of copied, since no one can change it and a
 * copy would read the same. Writes then copy only what they change, and compare and freeze only
 * what is new: copying, freezing and comparing whole stored objects (a CRD's schema on every
 * status write) was about a tenth of a sweep's time.
 */
import { deepFreeze, type JsonObject } from "../../src/api/json.ts";

/** The top-level fields other than apiVersion, kind, metadata and status: what `generation` tracks. */
export function specPart(obj: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const k of Object.keys(obj)) {
    if (k !== "apiVersion" && k !== "kind" && k !== "metadata" && k !== "status") out[k] = obj[k];
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

/**
 * Sealed values: plain, frozen all the way down, and without an undefined member anywhere below,
 * so that sharing one reads exactly as a `cloneJson` of it would (which drops undefined members).
 * Only the values a copy asked about are recorded, not everything below them: a WeakSet entry
 * costs more than freezing, and most stored values are never asked about.
 */
const sealed = new WeakSet<object>();
/** Frozen values found not sealable (an undefined member, or something below not frozen). */
const unsealable = new WeakSet<object>();

function isPlain(v: object): boolean {
  return Object.getPrototypeOf(v) === (Array.isArray(v) ? Array.prototype : Object.prototype);
}

/** True when `v` is sealed; a frozen value not asked about before is examined (once). */
function isSealed(v: object): boolean {
  if (sealed.has(v)) return true;
  if (!Object.isFrozen(v) || unsealable.has(v)) return false;
  const ok = sealedBelow(v);
  (ok ? sealed : unsealable).add(v);
  return ok;
}

/** True when `v` is sealed, without recording what it finds. */
function sealedValue(v: unknown): boolean {
  if (v === null || typeof v !== "object" || sealed.has(v)) return true;
  return Object.isFrozen(v) && !unsealable.has(v) && sealedBelow(v);
}

/** True when the frozen `v` is plain and everything in it sealed. */
function sealedBelow(v: object): boolean {
  if (!isPlain(v)) return false;
  if (Array.isArray(v)) {
    for (const x of v) if (!sealedValue(x)) return false;
    return true;
  }
  for (const k in v) {
    const x = (v as Record<string, unknown>)[k];
    if (x === undefined || !sealedValue(x)) return false;
  }
  return true;
}

/** `cloneJson(v)`, except that sealed values in it are shared rather than copied. */
export function copyShared<T>(v: T): T {
  if (v === null || typeof v !== "object" || isSealed(v)) return v;
  return copyLevel(v);
}

/** A fresh copy of the top level of an object or array; what is below as `copyShared`. */
function copyLevel<T>(v: T & object): T {
  if (Array.isArray(v)) return v.map(copyShared) as T;
  const out: Record<string, unknown> = {};
  for (const k in v) {
    const x = (v as Record<string, unknown>)[k];
    if (x !== undefined) out[k] = copyShared(x);
  }
  return out as T;
}

/**
 * `cloneJson(v)` whose top level and `metadata` are always fresh (the server sets fields of both
 * on every write) and whose other sealed values are shared.
 */
export function copyForWrite<T>(v: T): T {
  if (v === null || typeof v !== "object") return v;
  if (Array.isArray(v)) return copyLevel(v);
  const out: Record<string, unknown> = {};
  for (const k in v) {
    const x = (v as Record<string, unknown>)[k];
    if (x === undefined) continue;
    out[k] = k === "metadata" && x !== null && typeof x === "object" ? copyLevel(x) : copyShared(x);
  }
  return out as T;
}

/**
 * A value to change in place: `v` itself unless it is frozen (then sealed, in a value made by
 * `copyShared`), in which case a copy of its top level.
 */
export function thaw<T>(v: T): T {
  return v !== null && typeof v === "object" && Object.isFrozen(v) ? copyLevel(v) : v;
}

/** Freezes a value about to be stored and everything in it not frozen yet; returns it. */
export function sealJson<T>(v: T): T {
  return deepFreeze(v);
}
