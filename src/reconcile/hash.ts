/** Stable hashing for names and config-hash annotations: same input, same hash, on every platform. */

const OFFSET = 0xcbf29ce484222325n;
const PRIME = 0x100000001b3n;
const MASK = 0xffffffffffffffffn;

/** FNV-1a, 64 bits, of the UTF-8 bytes of `text`, as 16 hex digits. Not for security. */
export function fnv1a64(text: string): string {
  let h = OFFSET;
  for (const byte of new TextEncoder().encode(text)) {
    h = ((h ^ BigInt(byte)) * PRIME) & MASK;
  }
  return h.toString(16).padStart(16, "0");
}

/** JSON with object keys sorted at every level, so equal values give equal text. */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
    const obj = v as Record<string, unknown>;
    return Object.fromEntries(Object.keys(obj).sort().map((k) => [k, obj[k]]));
  });
}
