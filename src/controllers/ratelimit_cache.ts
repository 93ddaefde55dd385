/**
 * What the RateLimit controller's cache keeps of the objects it does not own whole: every
 * RateLimit needs its Pods and its EnvoyFilter in memory, so at ten thousand RateLimits these are
 * most of the operator's memory. Each projection keeps exactly what reconciling reads (and what
 * the cache itself reads of metadata); the rest is dropped as the watch delivers it. What it keeps
 * is the object's own, not copied: the cache takes an object over and freezes it (prepare.ts), and
 * copying each Pod's and filter's metadata took about 16 ms of a start-up with 1,000 of each.
 */
import { MESH_PROXY_CONTAINER, type MeshProxy, meshProxyOf } from "../api/pod.ts";
import { filterContexts } from "../reconcile/ratelimit/scope.ts";
import { exportsLimitStats } from "../reconcile/ratelimit/render.ts";
import { STATS_INCLUSION_ANNOTATIONS } from "../api/stats_inclusion.ts";
import { STAT_PREFIX } from "../reconcile/ratelimit/render.ts";
import type { KubeObject, ObjectMeta, Projection } from "../api/object.ts";

import { isObject, type JsonObject as Json } from "../api/json.ts";

/**
 * What a projected filter keeps of its patches: the contexts they name (which proxies take it),
 * as `{match: {context}}` entries that `filterContexts` reads like the whole list. One shared,
 * frozen list for each combination.
 */
const CONTEXT_PATCHES: ReadonlyMap<string, readonly Json[]> = new Map(
  [["SIDECAR_INBOUND"], ["GATEWAY"], ["SIDECAR_INBOUND", "GATEWAY"]].map((cs) => [
    cs.join(),
    Object.freeze(cs.map((context) => Object.freeze({ match: Object.freeze({ context }) }))),
  ]),
);

/**
 * An EnvoyFilter: its metadata (ownership labels and references, the generation annotation), its
 * workload selector (which Pods it holds) and its patch contexts; the rest of the spec is its digest, which the runner
 * compares with the desired spec's. A 4-rule filter is about 5 KB of JSON, of which this keeps a
 * few hundred bytes.
 */
export const FILTER_PROJECTION: Projection = {
  name: "ratelimit.envoyfilter",
  digestSpec: true,
  keep(ef: KubeObject): KubeObject {
    const selector = isObject(ef.spec) ? ef.spec.workloadSelector : undefined;
    const contexts = filterContexts(ef);
    const spec: Json = {
      ...(selector !== undefined ? { workloadSelector: selector } : {}),
      ...(contexts.length > 0 ? { configPatches: CONTEXT_PATCHES.get(contexts.join()) } : {}),
    };
    return {
      apiVersion: ef.apiVersion,
      kind: ef.kind,
      metadata: ef.metadata,
      ...(Object.keys(spec).length > 0 ? { spec } : {}),
    };
  },
};

/** Metadata fields of a Pod that the controller (labels) and the cache (the rest) read. */
const POD_META = [
  "name",
  "namespace",
  "resourceVersion",
  "deletionTimestamp",
  "finalizers",
  "labels",
] as const;

/** The proxy containers a projected Pod keeps: one shared, frozen entry per kind of proxy. */
const PROXY: Readonly<Record<MeshProxy, readonly Json[]>> = Object.freeze({
  sidecar: Object.freeze([Object.freeze({ name: MESH_PROXY_CONTAINER })]),
  router: Object.freeze([
    Object.freeze({ name: MESH_PROXY_CONTAINER, args: Object.freeze(["proxy", "router"]) }),
  ]),
});

/**
 * What a projected Pod whose proxy exports our filters' stats keeps of its annotations: one shared
 * annotation that says the same to `exportsLimitStats` as the Pod's own stats inclusion (which may
 * be a whole `proxy.istio.io/config`).
 */
const EXPORTS_STATS: Readonly<Json> = Object.freeze({
  [STATS_INCLUSION_ANNOTATIONS.Prefixes]: STAT_PREFIX,
});

/**
 * A Pod: its labels (which RateLimits select it), which mesh proxy it runs, whether it exports our
 * filters' Envoy stats, and whether it still serves (phase, deletionTimestamp). Of the proxy it keeps one `istio-proxy` container that says
 * the same to `meshProxyOf` as the whole Pod does (a router's with the `proxy router` arguments),
 * whichever evidence the Pod had: a container, a native sidecar, the injector's annotations. A
 * phase is kept only when it ends the Pod. A running Pod is a few kilobytes of JSON; this keeps
 * about 300 bytes, and `tests/controllers/ratelimit_cache_test.ts` checks that every reading gives
 * the same answer.
 */
export const POD_PROJECTION: Projection = {
  name: "ratelimit.pod",
  keep(pod: KubeObject): KubeObject {
    const meta: Json = {};
    const from = pod.metadata as unknown as Json;
    for (const k of POD_META) if (from[k] !== undefined) meta[k] = from[k];
    if (exportsLimitStats(pod)) meta.annotations = EXPORTS_STATS;
    const proxy = meshProxyOf(pod);
    const spec: Json = proxy ? { containers: PROXY[proxy] } : {};
    const phase = isObject(pod.status) ? pod.status.phase : undefined;
    const ended = phase === "Succeeded" || phase === "Failed";
    return {
      apiVersion: pod.apiVersion,
      kind: pod.kind,
      metadata: meta as unknown as ObjectMeta,
      spec,
      ...(ended ? { status: { phase } } : {}),
    };
  },
};
