/**
 * What one RateLimit's reconcile reads, and what it reads of the objects it is given: the input
 * (the RateLimit, its Pods, peers and filters), the RateLimit's and its filter's metadata (whose a
 * filter is, which generation it holds), and the limits a filter of ours holds in force.
 */
import type { Condition } from "../../api/common.ts";
import { at, isObject, type JsonObject, stringMap } from "../../api/json.ts";
import { LOCAL_RATELIMIT_FILTER, ROUTE_METADATA_KEY } from "../../api/envoy.ts";
import { RATELIMIT_FILTER } from "../../api/global_engine.ts";
import { apiVersionOf, RESOURCES } from "../../api/resources.ts";
import type { KubeObject } from "../../api/object.ts";
import type { IstiodStatusFields, ProxyStatusFields } from "../../api/istiod.ts";
import type { EngineListing, EngineStatusFields } from "../../api/engine_status.ts";
import { MANAGED_BY, MANAGED_BY_LABEL, MODULE_LABEL } from "../labels.ts";
import type { ApplyOutcome, ObjectRef } from "../plan.ts";

// What the RateLimit reducer reads of objects however malformed they are: a RateLimit's identity
// and previous conditions, and whether an EnvoyFilter is one this operator made for it (and which
// Pods it selects).

/** What can be read of any RateLimit object. */
export interface Meta {
  name: string;
  namespace: string;
  uid?: string;
  generation?: number;
  deleting: boolean;
  /** Its previous conditions of the types the reducer writes. */
  conditions: Condition[];
}

function isCondition(c: unknown): c is Condition {
  return isObject(c) && typeof c.type === "string" && typeof c.status === "string" &&
    typeof c.reason === "string" && typeof c.message === "string" &&
    typeof c.lastTransitionTime === "string";
}

/** Reads a RateLimit's metadata and its previous conditions of `types`. */
export function readMeta(obj: unknown, types: readonly string[]): Meta {
  const str = (v: unknown) => (typeof v === "string" ? v : undefined);
  const metadata = at(obj, "metadata");
  const gen = at(metadata, "generation");
  const conds = at(obj, "status", "conditions");
  // The first condition of each type, of those given.
  const conditions: Condition[] = [];
  if (Array.isArray(conds)) {
    for (const c of conds) {
      if (
        isCondition(c) && types.includes(c.type) && !conditions.some((d) => d.type === c.type)
      ) conditions.push(c);
    }
  }
  return {
    name: str(at(metadata, "name")) ?? "",
    namespace: str(at(metadata, "namespace")) ?? "default",
    uid: str(at(metadata, "uid")),
    generation: Number.isSafeInteger(gen) && (gen as number) >= 0 ? gen as number : undefined,
    deleting: at(metadata, "deletionTimestamp") !== undefined,
    conditions,
  };
}

/** True when the EnvoyFilter was made by this operator for this RateLimit. */
export function isOurs(ef: KubeObject, meta: Pick<Meta, "name" | "uid">): boolean {
  const labels = ef.metadata.labels ?? {};
  if (labels[MANAGED_BY_LABEL] !== MANAGED_BY || labels[MODULE_LABEL] !== "ratelimit") return false;
  const owners = ef.metadata.ownerReferences ?? [];
  if (owners.length === 0) return meta.uid === undefined;
  return owners.some((o) =>
    o.kind === "RateLimit" && o.name === meta.name && (meta.uid === undefined || o.uid === meta.uid)
  );
}

/**
 * True when the EnvoyFilter is one this operator made for a RateLimit named `name` (its labels, and
 * an owner reference to that RateLimit, whatever its uid): with no RateLimit of that name left,
 * the garbage collector will delete it, and the operator may do so first.
 */
export function isOrphanOf(ef: KubeObject, name: string): boolean {
  return isRateLimitFilter(ef) &&
    (ef.metadata.ownerReferences ?? []).some((o) => o.kind === "RateLimit" && o.name === name);
}

/**
 * The rate limit HTTP filters (local, global) an EnvoyFilter's patches name, each with the proxy
 * context its patch matches (undefined: any), in patch order.
 */
export function rateLimitFilterPatches(
  ef: KubeObject,
): { name: string; context: string | undefined }[] {
  const patches = at(ef, "spec", "configPatches");
  if (!Array.isArray(patches)) return [];
  const out: { name: string; context: string | undefined }[] = [];
  for (const p of patches) {
    if (!isObject(p) || p.applyTo !== "HTTP_FILTER") continue;
    const name = at(p, "patch", "value", "name");
    const context = at(p, "match", "context");
    if (name === LOCAL_RATELIMIT_FILTER || name === RATELIMIT_FILTER) {
      out.push({ name, context: typeof context === "string" ? context : undefined });
    }
  }
  return out;
}

/**
 * True for an EnvoyFilter that is not this operator's and patches a rate limit filter into the
 * proxies (Kyma's RateLimit controller's, or one written by hand): on the Pods of a RateLimit it
 * gives requests a second rate limit filter.
 */
export function isOtherRateLimitFilter(ef: KubeObject): boolean {
  return !isRateLimitFilter(ef) && rateLimitFilterPatches(ef).length > 0;
}

/** True when the EnvoyFilter carries this operator's RateLimit labels (whoever it belongs to). */
export function isRateLimitFilter(ef: KubeObject): boolean {
  const labels = ef.metadata.labels ?? {};
  return labels[MANAGED_BY_LABEL] === MANAGED_BY && labels[MODULE_LABEL] === "ratelimit";
}

/** The workload selector of an EnvoyFilter, when it is a non-empty map of strings. */
export function filterSelector(ef: KubeObject): Record<string, string> | undefined {
  const labels = stringMap(at(ef, "spec", "workloadSelector", "labels"));
  return labels && Object.keys(labels).length > 0 ? labels : undefined;
}

/** The reference of a RateLimit's EnvoyFilter (same namespace and name). */
export function filterRef(meta: Pick<Meta, "name" | "namespace">): ObjectRef {
  return {
    apiVersion: apiVersionOf(RESOURCES.EnvoyFilter),
    kind: RESOURCES.EnvoyFilter.kind,
    namespace: meta.namespace,
    name: meta.name,
  };
}

// What the EnvoyFilter in place enforces, read back from the filter itself (the record of the
// generation in force, which may be older than the spec): whether it is in shadow mode, and the
// rate each bucket admits on one Pod and on all the selected Pods with a mesh proxy together. The
// limits are read from the filter's patches, as structured fields, never from text: the operator's
// cache keeps of each filter the fields read here (controllers/ratelimit_cache.ts), and the
// annotation render.ts writes beside them (`LIMITS_ANNOTATION`) is for people, not read back.
// Figures come only from the filter and a Pod count, so the same Pods give the same status and
// nothing is written at rest.

/**
 * One bucket: maxTokens at most, tokensPerFill added every fillInterval (protobuf Duration,
 * `"30s"`).
 */
export interface BucketRefill {
  /** `default`, or the rule's index in spec.local.buckets. */
  bucket: string;
  maxTokens: number;
  tokensPerFill: number;
  fillInterval: string;
}

/** The limits a filter of ours holds. */
export interface FilterLimits {
  /** True when it counts but does not reject (filter_enforced 0%). */
  shadow: boolean;
  buckets: BucketRefill[];
  /**
   * True when some rule's bucket is per client (dynamic descriptors, which Envoy before 1.34
   * refuses): render.ts sets `max_dynamic_descriptors` exactly then. Absent otherwise.
   */
  perClient?: true;
  /**
   * The global part, when the filter holds Envoy's ratelimit filter (render.ts renders it only
   * while the engine is Ready): its failure mode. Absent otherwise.
   */
  global?: { failureMode: "Allow" | "Deny" };
  /**
   * The digest its route patch writes into the routes' metadata (render.ts `routeDigest`), which
   * a proxy's dump shows when it holds exactly this filter's route config. Absent from a filter
   * an operator before it wrote.
   */
  digest?: string;
}

/**
 * One entry of `status.rates`: a local bucket's rate on one Pod and on the workload's Pods
 * together, or a global rule's limit (`global.<rule>`), which holds for the workload as a whole
 * and has no per-Pod rate.
 */
export interface BucketRate {
  bucket: string;
  perPod?: string;
  workload: string;
}

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
 * The LocalRateLimit config a filter merges into its routes (render.ts `routeConfig`):
 * `patch.value.typed_per_filter_config[LOCAL_RATELIMIT_FILTER]` of the first of its patches that
 * has one (the route patch of each context carries the same).
 */
function routeLimitConfig(ef: KubeObject): unknown {
  const patches = at(ef, "spec", "configPatches");
  if (!Array.isArray(patches)) return undefined;
  for (const p of patches) {
    const config = at(p, "patch", "value", "typed_per_filter_config", LOCAL_RATELIMIT_FILTER);
    if (config !== undefined) return config;
  }
  return undefined;
}

/**
 * The digest a filter's route patch writes (render.ts `routeDigest`): the string at
 * `patch.value.metadata.filter_metadata[ROUTE_METADATA_KEY].digest` of the first of its patches
 * that has one.
 */
function routeDigestOf(ef: KubeObject): string | undefined {
  const patches = at(ef, "spec", "configPatches");
  if (!Array.isArray(patches)) return undefined;
  for (const p of patches) {
    const digest = at(
      p,
      "patch",
      "value",
      "metadata",
      "filter_metadata",
      ROUTE_METADATA_KEY,
      "digest",
    );
    if (typeof digest === "string") return digest;
  }
  return undefined;
}

/**
 * The ratelimit filter's config a filter inserts (render.ts `globalFilterConfig`): the
 * `typed_config` of the first of its patches whose value is that filter.
 */
function globalFilterConfig(ef: KubeObject): unknown {
  const patches = at(ef, "spec", "configPatches");
  if (!Array.isArray(patches)) return undefined;
  for (const p of patches) {
    if (at(p, "patch", "value", "name") === RATELIMIT_FILTER) {
      return at(p, "patch", "value", "typed_config");
    }
  }
  return undefined;
}

/**
 * One bucket as a `token_bucket` holds it: `max_tokens` and `tokens_per_fill` whole numbers,
 * and `fill_interval` a protobuf Duration of whole seconds as render.ts writes it (`"30s"`, at
 * most 12 digits: a Duration holds at most 315,576,000,000 seconds); undefined when it is not so.
 */
function refillOf(
  tokenBucket: unknown,
): { maxTokens: number; tokensPerFill: number; fillInterval: string } | undefined {
  const max = at(tokenBucket, "max_tokens");
  const tokens = at(tokenBucket, "tokens_per_fill");
  const interval = at(tokenBucket, "fill_interval");
  const whole = (n: unknown): n is number =>
    typeof n === "number" && Number.isSafeInteger(n) && n >= 0;
  if (!whole(max) || !whole(tokens) || typeof interval !== "string") return undefined;
  const end = interval.length - 1;
  if (interval[end] !== "s" || !digits(interval, 0, end, 12)) return undefined;
  return { maxTokens: max, tokensPerFill: tokens, fillInterval: interval };
}

/**
 * The limits a filter holds, read from its route patch (`routeLimitConfig`): shadow when
 * `filter_enforced` is 0%, then the default `token_bucket` and each rule's descriptor's in order;
 * and its global part from the ratelimit filter's config (`globalFilterConfig`), whose
 * `filter_enforced` says shadow when there is no local part. A whole filter and the one the
 * operator's cache keeps (whose patches keep `limitsPatch`) read the same. Undefined when its
 * patches cannot be read so.
 */
export function filterLimits(ef: KubeObject): FilterLimits | undefined {
  const config = routeLimitConfig(ef);
  const globalConfig = globalFilterConfig(ef);
  const global = globalConfig === undefined ? undefined : globalOf(globalConfig);
  if (globalConfig !== undefined && global === undefined) return undefined;
  const digest = routeDigestOf(ef);
  const withParts = {
    ...(global ? { global } : {}),
    ...(digest !== undefined ? { digest } : {}),
  };
  if (config === undefined && global) {
    const enforced = at(globalConfig, "filter_enforced", "default_value", "numerator");
    return { shadow: enforced === 0, buckets: [], ...withParts };
  }
  const enforced = at(config, "filter_enforced", "default_value", "numerator");
  if (typeof enforced !== "number" || !Number.isSafeInteger(enforced) || enforced < 0) {
    return undefined;
  }
  const first = refillOf(at(config, "token_bucket"));
  const descriptors = at(config, "descriptors") ?? [];
  if (!first || !Array.isArray(descriptors)) return undefined;
  const buckets: BucketRefill[] = [{ bucket: "default", ...first }];
  for (let i = 0; i < descriptors.length; i++) {
    const refill = refillOf(at(descriptors[i], "token_bucket"));
    if (!refill) return undefined;
    buckets.push({ bucket: String(i), ...refill });
  }
  const perClient = at(config, "max_dynamic_descriptors") !== undefined;
  return {
    shadow: enforced === 0,
    buckets,
    ...(perClient ? { perClient: true as const } : {}),
    ...withParts,
  };
}

/** The global part of a ratelimit filter's config: its failure mode; undefined if unreadable. */
function globalOf(config: unknown): FilterLimits["global"] {
  const deny = at(config, "failure_mode_deny");
  if (deny !== undefined && typeof deny !== "boolean") return undefined;
  return { failureMode: deny === true ? "Deny" : "Allow" };
}

/**
 * The smallest patch `filterLimits` reads as `limits` (as it gives them: the default bucket
 * first) but for their `digest` (`digestPatch`), in fresh objects: what the operator's cache keeps
 * of a filter's patches besides their contexts and digest (controllers/ratelimit_cache.ts), the
 * same for every filter of the same limits.
 */
export function limitsPatch(limits: FilterLimits): JsonObject {
  const tokenBucket = (b: BucketRefill) => ({
    max_tokens: b.maxTokens,
    tokens_per_fill: b.tokensPerFill,
    fill_interval: b.fillInterval,
  });
  const [first, ...rules] = limits.buckets;
  const global: JsonObject = limits.global
    ? {
      // The global filter's fields `filterLimits` reads (render.ts `globalFilterConfig`).
      name: RATELIMIT_FILTER,
      typed_config: {
        failure_mode_deny: limits.global.failureMode === "Deny",
        ...(limits.shadow ? { filter_enforced: { default_value: { numerator: 0 } } } : {}),
      },
    }
    : {};
  if (!first) return { patch: { value: global } };
  const config: JsonObject = {
    filter_enforced: { default_value: { numerator: limits.shadow ? 0 : 100 } },
    token_bucket: tokenBucket(first),
    ...(rules.length > 0
      ? { descriptors: rules.map((b) => ({ token_bucket: tokenBucket(b) })) }
      : {}),
    // Its presence is what `filterLimits` reads; the bound itself is not kept.
    ...(limits.perClient ? { max_dynamic_descriptors: 1 } : {}),
  };
  return {
    patch: {
      value: {
        ...global,
        typed_per_filter_config: { [LOCAL_RATELIMIT_FILTER]: config },
      },
    },
  };
}

/** The smallest patch `filterLimits` reads as a filter's route `digest`, in fresh objects. */
export function digestPatch(digest: string): JsonObject {
  return {
    patch: { value: { metadata: { filter_metadata: { [ROUTE_METADATA_KEY]: { digest } } } } },
  };
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

// What a RateLimit's reconcile reads, and its verdict on the current generation: why it cannot be
// applied (invalid, no mesh, mesh-wide, a conflict) or what applying it takes, and which filter in
// place may stay when it is refused. The reducer (mod.ts) turns these into a Plan.

/** Everything a RateLimit's reconcile reads. */
export interface RateLimitInput {
  /** The RateLimit as stored: any shape; it is parsed here. */
  rateLimit: unknown;
  /**
   * Other RateLimits: at least every one whose selector, or whose kept EnvoyFilter's, can select
   * the same Pods as its spec's or its kept filter's selector: those of its namespace, and across
   * the mesh's root namespace those sharing a gateway Pod (others are ignored; it may be among
   * them and is skipped by namespace and name).
   */
  peers: readonly unknown[];
  /**
   * Pods it may reach: at least every Pod its spec's selector or its EnvoyFilter's selector
   * selects in its namespace, or in every namespace when it is in the root namespace (Pods out of
   * its reach are ignored).
   */
  pods: readonly unknown[];
  /** The EnvoyFilter of the same namespace and name, if one exists. */
  envoyFilter?: KubeObject;
  /**
   * The EnvoyFilters named like peers, by `namespace/name` (those of peers without one absent):
   * the Pods a peer's kept filter holds. Undefined: the input says nothing of peers' filters.
   */
  peerFilters?: ReadonlyMap<string, KubeObject>;
  /**
   * The mesh's config root namespace, whose EnvoyFilters reach every namespace (default Istio's,
   * `istio-system`).
   */
  meshRootNamespace?: string;
  /**
   * EnvoyFilters not this operator's that patch a rate limit filter in (`isOtherRateLimitFilter`),
   * at least those of the RateLimit's namespace and of the mesh's root namespace; the reducer
   * finds which reach the Pods it covers. Undefined: none known.
   */
  otherFilters?: readonly KubeObject[];
  /** Whether the EnvoyFilter CRD exists (the mesh is installed). */
  meshInstalled: boolean;
  /** Epoch milliseconds. */
  now: number;
  /** What happened to the previous Plan's writes for this RateLimit. */
  lastOutcome?: ApplyOutcome;
  /** The largest EnvoyFilter to apply, in stored bytes; default `ENVOYFILTER_MAX_BYTES`. */
  maxFilterBytes?: number;
  /**
   * What the operator reads back of the global rate limit engine's Pods (src/api/engine_status.ts),
   * when it runs the engine; undefined when it does not (no `--global-redis-secret`): then the
   * global part is left out and GlobalEnforced says the engine is not installed.
   */
  globalEngine?: EngineObservation;
  /**
   * What istiod says of the proxies of `pods`, when the operator asks it; undefined when it does
   * not (the Accepted condition is then Unknown, IstiodNotAsked).
   */
  proxies?: ProxyObservation;
}

/** What istiod says of the proxies, as the reconcile reads it. */
export interface ProxyObservation {
  /** istiod's own answer; undefined while none came. */
  istiod: IstiodStatusFields | undefined;
  /** The ProxyStatus of each Pod istiod lists, by `namespace/name` (at least those of `pods`). */
  byPod: ReadonlyMap<string, ProxyStatusFields>;
}

/** One engine Pod as the operator read it back: its name and its EngineStatus. */
export interface EnginePod extends EngineStatusFields {
  name: string;
}

/** What the operator read back of the global rate limit engine, as the reconcile reads it. */
export interface EngineObservation {
  /** Whether the engine's Pods are listed; undefined while not yet. */
  listing: EngineListing | undefined;
  /** Each engine Pod read, by name (those not terminating). */
  pods: readonly EnginePod[];
}

/**
 * An engine of one Ready Pod that reaches Redis and has loaded nothing: what a tool that renders
 * without a cluster (tools/istio-check) gives to render the global part.
 */
export const ONE_READY_ENGINE: EngineObservation = Object.freeze({
  listing: Object.freeze({ listed: true as const, pods: 1 }),
  pods: Object.freeze([
    Object.freeze({
      name: "ratelimit-engine-0",
      ready: true,
      redis: "Reachable" as const,
      loaded: Object.freeze({}) as Record<string, string[]>,
      since: "",
    }),
  ]),
});
