/**
 * What the EnvoyFilter in place enforces, read back from the filter itself (the record of the
 * generation in force, which may be older than the spec; see `LIMITS_ANNOTATION`): whether it is in shadow mode, and the
 * rate each bucket admits on one Pod and on all the selected Pods with a mesh proxy together.
 * Figures come only from the filter and a Pod count, so the same Pods give the same status and
 * nothing is written at rest.
 */
import type { KubeObject } from "../../api/object.ts";

/** One bucket's refill: tokensPerFill tokens every fillInterval (protobuf Duration, `"30s"`). */
export interface BucketRefill {
  /** `default`, or the rule's index in spec.local.buckets. */
  bucket: string;
  tokensPerFill: number;
  fillInterval: string;
}

/** The limits a filter of ours holds. */
export interface FilterLimits {
  /** True when it counts but does not reject (filter_enforced 0%). */
  shadow: boolean;
  buckets: BucketRefill[];
}

/** One entry of `status.rates`. */
export interface BucketRate {
  bucket: string;
  perPod: string;
  workload: string;
}

/**
 * Annotation on the EnvoyFilter: what it enforces, in short (`Shadow 10/30s 1/120s`: the mode,
 * then tokensPerFill/fill_interval of the default bucket and of each rule's). The operator's cache
 * keeps a filter's metadata but not its patches (about 5 KB a filter at ten thousand RateLimits),
 * so this record, like the generation annotation, is what a refused generation's status reads of
 * the limit still in force.
 */
export const LIMITS_ANNOTATION = "gateway.platform-project.io/ratelimit-limits";

/** True when `s` from `start` to `end` (excluded) is 1 to `most` ASCII digits. */
function digits(s: string, start: number, end: number, most: number): boolean {
  if (end <= start || end - start > most) return false;
  for (let i = start; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/**
 * One bucket's `tokensPerFill/fillInterval` of the annotation: `/^([0-9]{1,10})\/([0-9]{1,12}s)$/`,
 * read without a regular expression (each reconcile reads every bucket's).
 */
function refillOf(r: string): { tokensPerFill: number; fillInterval: string } | undefined {
  const slash = r.indexOf("/");
  const end = r.length - 1;
  if (slash < 0 || !digits(r, 0, slash, 10) || r[end] !== "s" || !digits(r, slash + 1, end, 12)) {
    return undefined;
  }
  return { tokensPerFill: Number(r.slice(0, slash)), fillInterval: r.slice(slash + 1) };
}

/** The annotation's value for what a filter renders. */
export function limitsRecord(limits: FilterLimits): string {
  let text = limits.shadow ? "Shadow" : "Enforcing";
  for (const b of limits.buckets) text += ` ${b.tokensPerFill}/${b.fillInterval}`;
  return text;
}

/** The limits a filter of ours records (its annotation); undefined when it has no readable one. */
export function filterLimits(ef: KubeObject): FilterLimits | undefined {
  const text = ef.metadata.annotations?.[LIMITS_ANNOTATION];
  if (text === undefined) return undefined;
  const parts = text.split(" ");
  const mode = parts[0];
  if ((mode !== "Shadow" && mode !== "Enforcing") || parts.length < 2) return undefined;
  const buckets: BucketRefill[] = [];
  // parts[1] is the default bucket's refill, parts[2 + i] rule i's.
  for (let k = 1; k < parts.length; k++) {
    const refill = refillOf(parts[k]);
    if (!refill) return undefined;
    buckets.push({
      bucket: k === 1 ? "default" : String(k - 2),
      tokensPerFill: refill.tokensPerFill,
      fillInterval: refill.fillInterval,
    });
  }
  return { shadow: mode === "Shadow", buckets };
}

/** `120s` as people write it (`2m`); other whole seconds as they are. */
function intervalText(proto: string): string {
  const end = proto.length - 1;
  if (proto[end] !== "s" || !digits(proto, 0, end, Infinity)) return proto;
  const text = proto.slice(0, end);
  // Up to 15 digits a Number holds exactly; BigInt only past that (the CRD allows 9 or 10).
  if (text.length <= 15) {
    const s = Number(text);
    return s > 0 && s % 60 === 0 ? `${s / 60}m` : proto;
  }
  const s = BigInt(text);
  return s > 0n && s % 60n === 0n ? `${s / 60n}m` : proto;
}

/** `a × b` of two whole numbers, as digits: in a Number while exact, else in a BigInt. */
function productText(a: number, b: number): string {
  const n = a * b;
  return Number.isSafeInteger(a) && Number.isSafeInteger(b) && Number.isSafeInteger(n)
    ? String(n)
    : String(BigInt(a) * BigInt(b));
}

/**
 * Each bucket's rate on one Pod (`10/30s`) and on `pods` Pods together (`30/30s` for 3): buckets
 * are per proxy, so N proxies admit N times the rate once their bursts are spent.
 */
export function bucketRates(limits: FilterLimits, pods: number): BucketRate[] {
  return limits.buckets.map((b) => {
    const per = intervalText(b.fillInterval);
    return {
      bucket: b.bucket,
      perPod: `${b.tokensPerFill}/${per}`,
      workload: `${productText(b.tokensPerFill, pods)}/${per}`,
    };
  });
}
