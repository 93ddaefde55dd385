/**
 * What the EnvoyFilter in place enforces, read back from the filter itself (the record of the
 * generation in force, which may be older than the spec): whether it is in shadow mode, and the
 * rate each bucket admits on one Pod and on all the selected Pods with a mesh proxy together.
 * Figures come only from the filter and a Pod count, so the same Pods give the same status and
 * nothing is written at rest.
 */
import { at, isObject } from "../../api/json.ts";
import type { KubeObject } from "../../api/object.ts";
import { LOCAL_RATELIMIT_FILTER } from "../../api/envoy.ts";

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

function refillOf(bucket: string, tb: unknown): BucketRefill | undefined {
  const tokens = at(tb, "tokens_per_fill");
  const interval = at(tb, "fill_interval");
  if (typeof tokens !== "number" || typeof interval !== "string") return undefined;
  return { bucket, tokensPerFill: tokens, fillInterval: interval };
}

/** The per-route LocalRateLimit config of one of our filters, or undefined if unreadable. */
function routeConfigOf(ef: KubeObject): Record<string, unknown> | undefined {
  const patches = at(ef, "spec", "configPatches");
  if (!Array.isArray(patches)) return undefined;
  for (const p of patches) {
    if (!isObject(p) || p.applyTo !== "HTTP_ROUTE") continue;
    const cfg = at(p, "patch", "value", "typed_per_filter_config", LOCAL_RATELIMIT_FILTER);
    if (isObject(cfg)) return cfg;
  }
  return undefined;
}

/** The limits a filter rendered by `renderEnvoyFilter` holds; undefined when it cannot be read. */
export function filterLimits(ef: KubeObject): FilterLimits | undefined {
  const cfg = routeConfigOf(ef);
  if (!cfg) return undefined;
  const def = refillOf("default", cfg.token_bucket);
  if (!def) return undefined;
  const buckets = [def];
  const descriptors = Array.isArray(cfg.descriptors) ? cfg.descriptors : [];
  for (let i = 0; i < descriptors.length; i++) {
    const r = refillOf(String(i), at(descriptors[i], "token_bucket"));
    if (r) buckets.push(r);
  }
  const enforced = at(cfg, "filter_enforced", "default_value", "numerator");
  return { shadow: enforced === 0, buckets };
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
