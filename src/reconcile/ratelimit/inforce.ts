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

const REFILL = /^([0-9]{1,10})\/([0-9]{1,12}s)$/;

/** The annotation's value for what a filter renders. */
export function limitsRecord(limits: FilterLimits): string {
  return [
    limits.shadow ? "Shadow" : "Enforcing",
    ...limits.buckets.map((b) => `${b.tokensPerFill}/${b.fillInterval}`),
  ].join(" ");
}

/** The limits a filter of ours records (its annotation); undefined when it has no readable one. */
export function filterLimits(ef: KubeObject): FilterLimits | undefined {
  const text = ef.metadata.annotations?.[LIMITS_ANNOTATION];
  if (text === undefined) return undefined;
  const [mode, ...refills] = text.split(" ");
  if ((mode !== "Shadow" && mode !== "Enforcing") || refills.length === 0) return undefined;
  const buckets: BucketRefill[] = [];
  for (const [i, r] of refills.entries()) {
    const m = REFILL.exec(r);
    if (!m) return undefined;
    buckets.push({
      bucket: i === 0 ? "default" : String(i - 1),
      tokensPerFill: Number(m[1]),
      fillInterval: m[2],
    });
  }
  return { shadow: mode === "Shadow", buckets };
}

/** `120s` as people write it (`2m`); other whole seconds as they are. */
function intervalText(proto: string): string {
  const m = /^(\d+)s$/.exec(proto);
  if (!m) return proto;
  const s = BigInt(m[1]);
  return s > 0n && s % 60n === 0n ? `${s / 60n}m` : proto;
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
      workload: `${BigInt(b.tokensPerFill) * BigInt(pods)}/${per}`,
    };
  });
}
