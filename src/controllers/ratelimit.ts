/**
 * The RateLimit controller: what the runtime watches for RateLimits, which keys a change wakes,
 * and the reconcile that reads the cache into `reconcileRateLimit`'s input.
 *
 * Pods reach RateLimits through indexes, never a scan of their namespace: a Pod is filed under
 * each of its labels, and a RateLimit (or its EnvoyFilter) under one pair of its selector, the
 * one with the smallest key. Every RateLimit selecting a Pod has that pair among the Pod's
 * labels, so looking up each label of the Pod finds exactly the candidates to check.
 */
import { RESOURCES } from "../api/resources.ts";
import type { KubeObject, ResourceType } from "../runtime/cluster.ts";
import { objectKey } from "../runtime/cluster.ts";
import {
  byIndexOf,
  type CacheReader,
  type ControllerSpec,
  type IndexSpec,
} from "../runtime/controller_spec.ts";
import { emptyPlan } from "../reconcile/plan.ts";
import { filterSelector, isRateLimitFilter } from "../reconcile/ratelimit/meta.ts";
import { crdName, isUnknown } from "./cache_trust.ts";
import { reconcileRateLimit } from "../reconcile/ratelimit.ts";

/** The CRD whose presence means the mesh is installed. */
export const ENVOYFILTER_CRD = crdName(RESOURCES.EnvoyFilter);
/** How soon to look again while the EnvoyFilter watch has not listed yet. */
const UNKNOWN_FILTERS_REQUEUE_MS = 1000;

type Labels = Record<string, string>;

function stringMap(v: unknown): Labels | undefined {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return undefined;
  return Object.values(v).every((x) => typeof x === "string") ? v as Labels : undefined;
}

function pair(namespace: string | undefined, key: string, value: string): string {
  return `${namespace ?? ""}/${key}=${value}`;
}

/** The one pair a selector is filed under: its smallest key. */
function selectorPair(namespace: string | undefined, selector: Labels | undefined): string[] {
  const keys = Object.keys(selector ?? {});
  if (!selector || keys.length === 0) return [];
  const key = keys.reduce((a, b) => (b < a ? b : a));
  return [pair(namespace, key, selector[key])];
}

function selects(selector: Labels, labels: Labels): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** RateLimits by one pair of their spec's selector. */
export const RATELIMIT_SELECTOR_INDEX: IndexSpec = {
  type: RESOURCES.RateLimit,
  name: "ratelimit.selector",
  keys: (rl) =>
    selectorPair(
      rl.metadata.namespace,
      stringMap((rl.spec as { selectorLabels?: unknown } | undefined)?.selectorLabels),
    ),
};

/** This operator's RateLimit EnvoyFilters by one pair of their workload selector. */
export const FILTER_SELECTOR_INDEX: IndexSpec = {
  type: RESOURCES.EnvoyFilter,
  name: "ratelimit.filter-selector",
  keys: (ef) =>
    isRateLimitFilter(ef) ? selectorPair(ef.metadata.namespace, filterSelector(ef)) : [],
};

/** Pods by each of their labels. */
export const POD_LABEL_INDEX: IndexSpec = {
  type: RESOURCES.Pod,
  name: "ratelimit.pod-labels",
  keys: (pod) =>
    Object.entries(stringMap(pod.metadata.labels) ?? {}).map(([k, v]) =>
      pair(pod.metadata.namespace, k, v)
    ),
};

function allIn(cache: CacheReader, namespace: string | undefined): string[] {
  return cache.list(RESOURCES.RateLimit, namespace).map(objectKey);
}

/** Keys of the RateLimits whose spec, or whose EnvoyFilter, selects `pod`. */
function selectingPod(cache: CacheReader, pod: KubeObject): string[] {
  const labels = stringMap(pod.metadata.labels) ?? {};
  const ns = pod.metadata.namespace;
  const keys = new Set<string>();
  for (const [k, v] of Object.entries(labels)) {
    const value = pair(ns, k, v);
    for (const rl of byIndexOf(cache, RATELIMIT_SELECTOR_INDEX, value)) {
      const sel = stringMap((rl.spec as { selectorLabels?: unknown } | undefined)?.selectorLabels);
      if (sel && selects(sel, labels)) keys.add(objectKey(rl));
    }
    for (const ef of byIndexOf(cache, FILTER_SELECTOR_INDEX, value)) {
      const sel = filterSelector(ef);
      if (sel && selects(sel, labels)) keys.add(objectKey(ef));
    }
  }
  return [...keys];
}

/** Candidate Pods of a selector: those filed under its rarest pair (the reducer checks the rest). */
function podsFor(cache: CacheReader, namespace: string, selector: Labels | undefined) {
  let best: readonly KubeObject[] | undefined;
  for (const [k, v] of Object.entries(selector ?? {})) {
    const pods = byIndexOf(cache, POD_LABEL_INDEX, pair(namespace, k, v));
    if (best === undefined || pods.length < best.length) best = pods;
  }
  return best ?? [];
}

/** The RateLimit controller (ControllerSpec for the runtime). */
export const rateLimitController: ControllerSpec = {
  name: "ratelimit",
  primary: RESOURCES.RateLimit,
  watches: [
    // Every EnvoyFilter, not only managed ones: a filter of the same name that someone else made
    // must be seen, so the operator neither overwrites nor deletes it.
    { type: RESOURCES.EnvoyFilter, optional: true },
    // Pods decide conflicts between RateLimits whose selectors only partly overlap, and whether
    // a limit reaches any proxy (the Enforced condition).
    { type: RESOURCES.Pod },
    { type: RESOURCES.CustomResourceDefinition },
  ],
  indexes: [RATELIMIT_SELECTOR_INDEX, FILTER_SELECTOR_INDEX, POD_LABEL_INDEX],
  triggers(type: ResourceType, obj: KubeObject, cache: CacheReader): string[] {
    const ns = obj.metadata.namespace;
    switch (type.kind) {
      // A RateLimit's peers' conflicts depend on it: wake its whole namespace.
      case "RateLimit":
        return allIn(cache, ns);
      // The runtime calls this with the Pod's old state too, so labels moved away are covered.
      case "Pod":
        return selectingPod(cache, obj);
      case "EnvoyFilter": {
        if (!ns) return [];
        const own = `${ns}/${obj.metadata.name}`;
        // A kept filter withdrawn while its RateLimit stays: the Pods it held are free now, and
        // no RateLimit event follows, so newer peers must look again. (When the RateLimit itself
        // went, its own delete event woke them already.)
        const withdrawn = isRateLimitFilter(obj) &&
          cache.get(RESOURCES.EnvoyFilter, ns, obj.metadata.name) === undefined &&
          cache.get(RESOURCES.RateLimit, ns, obj.metadata.name) !== undefined;
        return withdrawn ? allIn(cache, ns) : [own];
      }
      case "CustomResourceDefinition":
        return obj.metadata.name === ENVOYFILTER_CRD ? allIn(cache, undefined) : [];
      default:
        return [];
    }
  },
  reconcile(key, cache, ctx) {
    const slash = key.indexOf("/");
    const namespace = key.slice(0, slash);
    const name = key.slice(slash + 1);
    const rateLimit = cache.get(RESOURCES.RateLimit, namespace, name);
    if (!rateLimit) return undefined;
    const meshInstalled =
      cache.get(RESOURCES.CustomResourceDefinition, undefined, ENVOYFILTER_CRD) !== undefined;
    // With the CRD present but its watch not listed yet, "no EnvoyFilter seen" is not "none": the
    // reducer would apply over a filter of the same name someone else made. Write nothing; look again.
    if (isUnknown(cache, RESOURCES.EnvoyFilter)) {
      return { ...emptyPlan(), requeueAfterMs: UNKNOWN_FILTERS_REQUEUE_MS };
    }
    const envoyFilter = cache.get(RESOURCES.EnvoyFilter, namespace, name);
    const spec = stringMap(
      (rateLimit.spec as { selectorLabels?: unknown } | undefined)?.selectorLabels,
    );
    const pods = new Map<string, KubeObject>();
    for (const p of podsFor(cache, namespace, spec)) pods.set(objectKey(p), p);
    if (envoyFilter) {
      for (const p of podsFor(cache, namespace, filterSelector(envoyFilter))) {
        pods.set(objectKey(p), p);
      }
    }
    return reconcileRateLimit({
      rateLimit,
      peers: cache.list(RESOURCES.RateLimit, namespace),
      pods: [...pods.values()],
      envoyFilter,
      peerFilter: (peer) => cache.get(RESOURCES.EnvoyFilter, namespace, peer),
      meshInstalled,
      now: ctx.now,
      lastOutcome: ctx.lastOutcome,
    });
  },
};
