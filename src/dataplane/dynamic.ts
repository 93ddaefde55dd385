/**
 * Dynamic descriptors (Envoy 1.34 and later, envoyproxy/envoy#36623): a config descriptor with an
 * empty entry value is a wildcard, and each distinct request descriptor it matches gets a bucket of
 * its own, kept in a least-recently-used list of `max_dynamic_descriptors` (default 20) a wildcard
 * descriptor (`source/extensions/filters/common/local_ratelimit/dynamic_descriptor.cc`).
 */
import type { BucketSpec } from "./bucket.ts";
import type { EnvoyBehaviour } from "./envoy.ts";
import { makeBucket, type RateBucket } from "./limiter.ts";
import type { DescriptorEntry } from "../api/envoy.ts";

/** Envoy's `max_dynamic_descriptors` when unset (`local_ratelimit.cc`, FilterConfig). */
export const DEFAULT_MAX_DYNAMIC_DESCRIPTORS = 20;

/** True when a config descriptor is a wildcard: some entry has an empty value. */
export function isWildcard(entries: readonly DescriptorEntry[]): boolean {
  return entries.some((e) => e.value === "");
}

/**
 * `DynamicDescriptorMap::matchDescriptorEntries`: the same number of entries, the same keys in
 * order, and equal values wherever the config's value is not empty.
 */
export function matchesWildcard(
  request: readonly DescriptorEntry[],
  config: readonly DescriptorEntry[],
): boolean {
  if (request.length !== config.length) return false;
  for (let i = 0; i < request.length; i++) {
    if (request[i].key !== config[i].key) return false;
    if (config[i].value !== "" && request[i].value !== config[i].value) return false;
  }
  return true;
}

/** The request descriptor's identity (Envoy hashes and compares whole descriptors). */
export function descriptorKey(entries: readonly DescriptorEntry[]): string {
  return JSON.stringify(entries.map((e) => [e.key, e.value]));
}

/**
 * One wildcard descriptor's buckets: `DynamicDescriptor::addOrGetDescriptor`. A hit moves the
 * descriptor to the front; a miss makes a full bucket at the front and, past `lruSize`, drops the
 * least recently used one, whose client comes back later to a new, full bucket. A JavaScript Map
 * keeps insertion order, so its last key is the front of Envoy's list and its first the back.
 */
export class DynamicDescriptor {
  readonly #kept = new Map<string, { bucket: RateBucket; client: string }>();
  /** The kept descriptors' keys by client, for {@link peek}. */
  readonly #keyOf = new Map<string, string>();
  constructor(
    readonly spec: BucketSpec,
    readonly lruSize: number,
    private readonly envoy: EnvoyBehaviour,
  ) {}

  /** The bucket of the request descriptor `key` (of `client`) at `nowMs`, made full when new. */
  addOrGet(key: string, client: string, nowMs: number): RateBucket {
    const hit = this.#kept.get(key);
    if (hit) {
      this.#kept.delete(key);
      this.#kept.set(key, hit);
      return hit.bucket;
    }
    // AtomicTokenBucketImpl starts full as of its creation.
    const made = { bucket: makeBucket(this.spec, nowMs, this.envoy), client };
    this.#kept.set(key, made);
    if (!this.#keyOf.has(client)) this.#keyOf.set(client, key);
    if (this.#kept.size > this.lruSize) {
      const [oldest, { client: gone }] = this.#kept.entries().next().value!;
      this.#kept.delete(oldest);
      if (this.#keyOf.get(gone) === oldest) this.#keyOf.delete(gone);
    }
    return made.bucket;
  }

  /** The bucket of `client` if kept, without touching the order (for charts). */
  peek(client: string): RateBucket | undefined {
    const key = this.#keyOf.get(client);
    return key === undefined ? undefined : this.#kept.get(key)?.bucket;
  }

  /** The kept descriptors, most recently used first. */
  keys(): string[] {
    return [...this.#kept.keys()].reverse();
  }
}

/** Config descriptors as the lookup reads them. */
type ConfigDescriptors = readonly { entries: readonly DescriptorEntry[]; bucket: BucketSpec }[];

/** The values a request descriptor gives a wildcard's empty entries: the client it stands for. */
export function clientOf(
  request: readonly DescriptorEntry[],
  config: readonly DescriptorEntry[],
): string {
  return request.filter((_, j) => config[j].value === "").map((e) => e.value).join(",");
}

/**
 * `DynamicDescriptorMap::getBucket`: the first wildcard descriptor that request descriptor `d`
 * matches gives it its bucket, from `kept` (the scope's wildcard buckets by descriptor index, made
 * here on first use). Envoy walks its wildcards in hash order, this in config order; the two agree
 * when at most one matches, as in the operator's filters. Undefined when none matches.
 */
export function wildcardBucket(
  kept: Map<number, DynamicDescriptor>,
  descriptors: ConfigDescriptors,
  lruSize: number,
  envoy: EnvoyBehaviour,
  d: readonly DescriptorEntry[],
  nowMs: number,
): { id: number; bucket: RateBucket; client: string } | undefined {
  const id = descriptors.findIndex((x) => isWildcard(x.entries) && matchesWildcard(d, x.entries));
  if (id < 0) return undefined;
  let dyn = kept.get(id);
  if (!dyn) {
    dyn = new DynamicDescriptor(descriptors[id].bucket, lruSize, envoy);
    kept.set(id, dyn);
  }
  const client = clientOf(d, descriptors[id].entries);
  return { id, bucket: dyn.addOrGet(descriptorKey(d), client, nowMs), client };
}
