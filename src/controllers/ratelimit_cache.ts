/**
 * What the RateLimit controller's cache keeps of the objects it does not own whole: every
 * RateLimit needs its Pods and its EnvoyFilter in memory, so at ten thousand RateLimits these are
 * most of the operator's memory. Each projection keeps exactly what reconciling reads (and what
 * the cache itself reads of metadata); the rest is dropped as the watch delivers it. What it keeps
 * is the object's own, not copied: the cache takes an object over and freezes it (prepare.ts), and
 * copying each Pod's and filter's metadata took about 16 ms of a start-up with 1,000 of each.
 */
import {
  AMBIENT_REDIRECTION_ANNOTATION,
  inAmbientMesh,
  MESH_PROXY_CONTAINER,
  type MeshProxy,
  meshProxyOf,
  proxyImageVersion,
} from "../api/pod.ts";
import { filterContexts } from "../reconcile/ratelimit/scope.ts";
import {
  digestPatch,
  filterLimits,
  isRateLimitFilter,
  limitsPatch,
  rateLimitFilterPatches,
} from "../reconcile/ratelimit/input.ts";
import { exportsLimitStats, STAT_PREFIX } from "../reconcile/ratelimit/stats.ts";
import { STATS_INCLUSION_ANNOTATIONS } from "../api/stats_inclusion.ts";
import { cacheMeta, type KubeObject, type Projection } from "../api/object.ts";
import { deepFreeze, isObject, type JsonObject as Json } from "../api/json.ts";

/**
 * What a projected filter keeps of its patches for their contexts (which proxies take it), as
 * `{match: {context}}` entries that `filterContexts` reads like the whole list. One shared,
 * frozen list for each combination.
 */
const CONTEXT_PATCHES: ReadonlyMap<string, readonly Json[]> = new Map(
  [["SIDECAR_INBOUND"], ["GATEWAY"], ["SIDECAR_INBOUND", "GATEWAY"]].map((cs) => [
    cs.join(),
    Object.freeze(cs.map((context) => Object.freeze({ match: Object.freeze({ context }) }))),
  ]),
);

/**
 * Shared, frozen JSON values by key (a small value's JSON text, or a list's items' numbers), and
 * the number of each. Bounded as prepare.ts's owned-field trees are: past the bound, the table
 * starts over.
 */
const SHARED = new Map<string, object>();
const SHARED_NO = new WeakMap<object, number>();
const SHARED_MAX = 4096;
let sharedCount = 0;

/** JSON values of at most this many characters are shared whole (a rule's bucket is about 80). */
const SMALL_JSON = 96;

/** The shared value of `key`, `value` (then frozen) when there is none yet. */
function shared(key: string, value: object): object {
  const hit = SHARED.get(key);
  if (hit !== undefined) return hit;
  if (SHARED.size >= SHARED_MAX) SHARED.clear();
  SHARED.set(key, deepFreeze(value));
  SHARED_NO.set(value, sharedCount++);
  return value;
}

/**
 * `value`, fresh JSON, frozen, with each small object in it (its JSON at most SMALL_JSON
 * characters), and each list of shared items, replaced by an equal one shared before when there is
 * one: filters whose limits repeat a bucket, or their rules' buckets, hold one copy of them.
 */
function shareParts(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    const items = value.map(shareParts);
    const numbers = items.map((i) => isObject(i) ? SHARED_NO.get(i) : undefined);
    return numbers.every((n) => n !== undefined)
      ? shared(`[${numbers.join()}]`, items)
      : deepFreeze(items);
  }
  const text = JSON.stringify(value);
  if (text.length <= SMALL_JSON) return shared(text, value);
  const obj = value as Record<string, unknown>;
  for (const k of Object.keys(obj)) obj[k] = shareParts(obj[k]);
  return deepFreeze(obj);
}

/** Kept patch lists with limits, by contexts and limits (`keptPatches`); bounded as `SHARED`. */
const LIMIT_PATCHES = new Map<string, readonly Json[]>();

/**
 * The patches a projected filter keeps: their contexts, and the limits they hold when those can
 * be read (input.ts `limitsPatch`), then their route digest (`digestPatch`); undefined for
 * neither. One shared, frozen list for each combination of contexts and limits, its parts shared
 * with other lists' (`shareParts`); a filter with a digest (each its own) gets a list of its own,
 * the shared one's items then its digest patch (about 150 bytes).
 */
function keptPatches(ef: KubeObject): readonly Json[] | undefined {
  const contexts = filterContexts(ef).join();
  const read = filterLimits(ef);
  if (!read) return CONTEXT_PATCHES.get(contexts);
  const { digest, ...limits } = read;
  // Every value of the limits in order, without the names (the same for all): a short key.
  const key = `${contexts} ${JSON.stringify(limits, (_, v) => isObject(v) ? Object.values(v) : v)}`;
  let kept = LIMIT_PATCHES.get(key);
  if (kept === undefined) {
    if (LIMIT_PATCHES.size >= SHARED_MAX) LIMIT_PATCHES.clear();
    const patch = shareParts(limitsPatch(limits)) as Json;
    kept = Object.freeze([...(CONTEXT_PATCHES.get(contexts) ?? []), patch]);
    LIMIT_PATCHES.set(key, kept);
  }
  return digest === undefined ? kept : Object.freeze([...kept, deepFreeze(digestPatch(digest))]);
}

/**
 * Of a filter not this operator's, its patches of a rate limit filter, each cut to what
 * `rateLimitFilterPatches` reads (the filter's name and the proxy context): which proxies it gives
 * a second rate limit filter. None for the operator's own.
 */
function otherFilterPatches(ef: KubeObject): Json[] {
  if (isRateLimitFilter(ef)) return [];
  return rateLimitFilterPatches(ef).map(({ name, context }) =>
    deepFreeze({
      applyTo: "HTTP_FILTER",
      ...(context !== undefined ? { match: { context } } : {}),
      patch: { value: { name } },
    })
  );
}

/**
 * An EnvoyFilter: its metadata (ownership labels and references, the generation annotation), its
 * workload selector (which Pods it holds), and of its patches their contexts and the limits in
 * force (`keptPatches`); the rest of the spec is its digest, which the runner compares with the
 * desired spec's. A 4-rule filter is about 5 KB of JSON, of which this keeps a few hundred bytes,
 * its metadata nearly all: with 10,000 filters, what it keeps of the patches adds nothing a filter
 * when their limits are the same, and about 500 bytes when each filter's default bucket differs.
 */
export const FILTER_PROJECTION: Projection = {
  name: "ratelimit.envoyfilter",
  digestSpec: true,
  keep(ef: KubeObject): KubeObject {
    const selector = isObject(ef.spec) ? ef.spec.workloadSelector : undefined;
    const others = otherFilterPatches(ef);
    const ownPatches = keptPatches(ef);
    const patches = others.length === 0 ? ownPatches : [...(ownPatches ?? []), ...others];
    const spec: Json = {
      ...(selector !== undefined ? { workloadSelector: selector } : {}),
      ...(patches !== undefined ? { configPatches: patches } : {}),
    };
    return {
      apiVersion: ef.apiVersion,
      kind: ef.kind,
      metadata: ef.metadata,
      ...(Object.keys(spec).length > 0 ? { spec } : {}),
    };
  },
};

/** The proxy containers a projected Pod keeps: one shared, frozen entry per kind of proxy. */
const PROXY: Readonly<Record<MeshProxy, readonly Json[]>> = Object.freeze({
  sidecar: Object.freeze([Object.freeze({ name: MESH_PROXY_CONTAINER })]),
  router: Object.freeze([
    Object.freeze({ name: MESH_PROXY_CONTAINER, args: Object.freeze(["proxy", "router"]) }),
  ]),
});

/** The image name a projected proxy container's image carries before its version tag. */
const PROXY_IMAGE_NAME = "proxyv2";

/**
 * Proxy containers of Pods whose proxy image says an Istio version, by kind and version: one
 * shared, frozen entry each, whose image is the version alone as a tag (`proxyv2:1.25.2`, which
 * `proxyImageVersion` reads as the Pod's whole image). A Pod keeps only a reference; bounded as
 * `SHARED`.
 */
const VERSIONED_PROXY = new Map<string, readonly Json[]>();

/** The proxy containers a projected Pod of `proxy` with image version `version` keeps. */
function proxyContainers(proxy: MeshProxy, version: string | undefined): readonly Json[] {
  if (version === undefined) return PROXY[proxy];
  const key = `${proxy} ${version}`;
  let kept = VERSIONED_PROXY.get(key);
  if (kept === undefined) {
    if (VERSIONED_PROXY.size >= SHARED_MAX) VERSIONED_PROXY.clear();
    const image = `${PROXY_IMAGE_NAME}:${version}`;
    kept = Object.freeze([Object.freeze({ ...PROXY[proxy][0], image })]);
    VERSIONED_PROXY.set(key, kept);
  }
  return kept;
}

/**
 * What a projected Pod whose proxy exports our filters' stats keeps of its annotations: one shared
 * annotation that says the same to `exportsLimitStats` as the Pod's own stats inclusion (which may
 * be a whole `proxy.istio.io/config`).
 */
const EXPORTS_STATS: Readonly<Json> = Object.freeze({
  [STATS_INCLUSION_ANNOTATIONS.Prefixes]: STAT_PREFIX,
});

/** What a projected Pod in the ambient mesh without a proxy keeps of its annotations. */
const AMBIENT: Readonly<Json> = Object.freeze({ [AMBIENT_REDIRECTION_ANNOTATION]: "enabled" });

/** The annotations a projected Pod keeps, shared, by `<exports stats> <ambient, no proxy>`. */
const KEPT_ANNOTATIONS: Readonly<Record<string, Readonly<Json> | undefined>> = {
  "true false": EXPORTS_STATS,
  "false true": AMBIENT,
  "true true": Object.freeze({ ...EXPORTS_STATS, ...AMBIENT }),
};

/**
 * A Pod: its labels (which RateLimits select it), which mesh proxy it runs (and, without one,
 * whether it is in the ambient mesh), whether it exports our filters' Envoy stats, and whether it
 * still serves (phase, deletionTimestamp). Of the proxy it keeps one `istio-proxy` container that
 * says the same to `meshProxyOf` and `proxyImageVersion` as the whole Pod does (a router's with the
 * `proxy router` arguments; the Istio version its image tag says, alone, in a container shared by
 * every Pod of that kind and version), whichever evidence the Pod had: a container, a native
 * sidecar, the injector's annotations. A phase is kept only when it ends the Pod. A running Pod is
 * a few kilobytes of JSON; this keeps about 300 bytes, and
 * `tests/controllers/ratelimit_cache_test.ts` checks that every reading gives the same answer.
 */
export const POD_PROJECTION: Projection = {
  name: "ratelimit.pod",
  keep(pod: KubeObject): KubeObject {
    const meta = cacheMeta(pod);
    const proxy = meshProxyOf(pod);
    const kept = KEPT_ANNOTATIONS[`${exportsLimitStats(pod)} ${!proxy && inAmbientMesh(pod)}`];
    if (kept) meta.annotations = kept as Record<string, string>;
    const spec: Json = proxy ? { containers: proxyContainers(proxy, proxyImageVersion(pod)) } : {};
    const phase = isObject(pod.status) ? pod.status.phase : undefined;
    const ended = phase === "Succeeded" || phase === "Failed";
    return {
      apiVersion: pod.apiVersion,
      kind: pod.kind,
      metadata: meta,
      spec,
      ...(ended ? { status: { phase } } : {}),
    };
  },
};
