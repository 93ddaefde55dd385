/**
 * Kubernetes resource quantities as the API server stores them (apimachinery's resource.Quantity):
 * `1000m` is returned as `1`, `1.5Gi` as `1536Mi`, `0.5` as `500m`. The operator renders quantities
 * in that form, so an applied Deployment is observed exactly as rendered and is not applied again.
 */

/** A parsed quantity: the exact value `n / 10^d`, and the format its suffix selects. */
export interface Quantity {
  n: bigint;
  d: number;
  format: "DecimalSI" | "BinarySI" | "DecimalExponent";
}

const SYNTAX = /^([+-]?)(0*)([0-9]*)(?:\.([0-9]*))?(.*)$/;
const DECIMAL_SUFFIX: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  "": 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
const BINARY_SUFFIX: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const MAX_INT64 = 9223372036854775807n;

function pow10(e: number): bigint {
  return 10n ** BigInt(e);
}

interface Lexed {
  negative: boolean;
  num: string;
  denom: string;
  base: 2 | 10;
  exponent: number;
  format: Quantity["format"];
}

function lex(text: string): Lexed | undefined {
  const m = SYNTAX.exec(text);
  if (!m || (m[3] === "" && m[2] === "" && !m[4])) return undefined;
  const [, sign, , digits, denom = "", suffix] = m;
  let base: 2 | 10 = 10;
  let exponent: number;
  let format: Quantity["format"] = "DecimalSI";
  if (suffix in DECIMAL_SUFFIX) exponent = DECIMAL_SUFFIX[suffix];
  else if (suffix in BINARY_SUFFIX) {
    base = 2;
    exponent = BINARY_SUFFIX[suffix];
    format = "BinarySI";
  } else if (/^[eE][+-]?[0-9]+$/.test(suffix)) {
    exponent = Number(suffix.slice(1));
    format = "DecimalExponent";
    if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > 1000) return undefined;
  } else return undefined;
  return { negative: sign === "-", num: digits || "0", denom, base, exponent, format };
}

/**
 * Answers by text, bounded: the reconcilers parse the same few quantities (a component's default
 * resources, what a spec gives) on every reconcile, with BigInt arithmetic. Parsed quantities are
 * frozen, since every caller then shares one.
 */
const parsed = new Map<string, Readonly<Quantity> | undefined>();
const canonical = new Map<string, string | undefined>();
const REMEMBERED_MAX = 1024;

function remember<V>(memo: Map<string, V>, text: string, make: (text: string) => V): V {
  if (memo.has(text)) return memo.get(text) as V;
  const value = make(text);
  if (memo.size >= REMEMBERED_MAX) memo.clear();
  memo.set(text, value);
  return value;
}

/** Parses a quantity; undefined when it is not one or is out of range (beyond ±2^63 or finer than 1n after rounding up). */
export function parseQuantity(text: string): Readonly<Quantity> | undefined {
  return remember(parsed, text, (t) => {
    const q = parseNew(t);
    return q && Object.freeze(q);
  });
}

function parseNew(text: string): Quantity | undefined {
  const l = lex(text);
  if (!l) return undefined;
  let n = BigInt(l.num + l.denom);
  let d = l.denom.length;
  if (l.base === 2) n *= 1n << BigInt(l.exponent);
  else if (l.exponent >= 0) n *= pow10(l.exponent);
  else d -= l.exponent;
  // Finer than a nano is rounded up (away from zero), as the API server does.
  if (d > 9) {
    const div = pow10(d - 9);
    n = n / div + (n % div === 0n ? 0n : 1n);
    d = 9;
  }
  let format = l.format;
  if (format === "BinarySI" && n > MAX_INT64 * pow10(d)) {
    n = MAX_INT64;
    d = 0;
  }
  if (n > MAX_INT64 * pow10(d)) return undefined;
  if (format === "BinarySI" && n < pow10(d) && n > 0n) format = "DecimalSI";
  return { n: l.negative ? -n : n, d, format };
}

/** True when the API server keeps `text` as written (apimachinery caches the string of such input). */
function keptAsWritten(l: Lexed): boolean {
  const shifted = l.num + l.denom;
  if (l.base === 2) {
    if (l.denom !== "" || l.exponent < 0) return false;
    const precision = 15 - l.num.length - Math.trunc(l.exponent * 3 / 10) - 1;
    const value = BigInt(shifted);
    return precision >= 0 && value * (1n << BigInt(l.exponent)) <= MAX_INT64 &&
      l.exponent % 10 === 0 &&
      (value & 7n) !== 0n;
  }
  const precision = 18 - (l.num.length + l.denom.length);
  const scale = l.exponent - l.denom.length;
  return precision >= 0 && scale >= -9 && scale % 3 === 0 && !shifted.endsWith("000") &&
    shifted[0] !== "0";
}

function decimalCanonical(q: Quantity): string {
  let m = q.n < 0n ? -q.n : q.n;
  let e = -q.d;
  while (m >= 10n && m % 10n === 0n) {
    m /= 10n;
    e++;
  }
  const r = ((e % 3) + 3) % 3;
  m *= pow10(r);
  e -= r;
  const sign = q.n < 0n ? "-" : "";
  if (q.format === "DecimalExponent") return `${sign}${m}${e === 0 ? "" : `e${e}`}`;
  const suffix = Object.entries(DECIMAL_SUFFIX).find(([, x]) => x === e)?.[0];
  return `${sign}${m}${suffix ?? `e${e}`}`;
}

/** The form the API server returns `text` in; undefined when it is not a quantity. */
export function canonicalQuantity(text: string): string | undefined {
  return remember(canonical, text, canonicalNew);
}

function canonicalNew(text: string): string | undefined {
  const l = lex(text);
  const q = parseQuantity(text);
  if (!l || !q) return undefined;
  if (keptAsWritten(l)) return text;
  if (q.n === 0n) return "0";
  const abs = q.n < 0n ? -q.n : q.n;
  const scale = pow10(q.d);
  const binary = q.format === "BinarySI" && abs >= 1024n * scale && abs % scale === 0n;
  if (!binary) return decimalCanonical(q.format === "BinarySI" ? { ...q, format: "DecimalSI" } : q);
  let v = abs / scale;
  let k = 0;
  while (v >= 1024n && v % 1024n === 0n) {
    v /= 1024n;
    k++;
  }
  return `${q.n < 0n ? "-" : ""}${v}${["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][k]}`;
}

/** Compares two quantities by value: negative, zero or positive. */
export function compareQuantities(a: Readonly<Quantity>, b: Readonly<Quantity>): number {
  const x = a.n * pow10(b.d);
  const y = b.n * pow10(a.d);
  return x < y ? -1 : x > y ? 1 : 0;
}
