/**
 * The RateLimit controller's indexes, and what they answer: which RateLimits select a Pod, which
 * Pods a selector may select, and which RateLimits are a selector's rivals (those whose selector,
 * by spec or by the EnvoyFilter they still hold, can select the same Pods). A reconcile and a
 * trigger read those few objects, never a whole namespace, so their cost does not grow with the
 * number of RateLimits and Pods beside them.
 *
 * Two selectors select the same Pods when one is a subset of the other or some Pod matches both
 * (src/reconcile/ratelimit/scope.ts). A RateLimit or filter is filed under one pair of its
 * selector, the one with the smallest key, and under every pair in a second index. Then, for a
 * selector S:
 * - every selector P ⊆ S has its smallest pair among S's pairs: look each of them up;
 * - every selector P ⊇ S is filed (all pairs) under each pair of S: the smallest such list holds
 *   them all;
 * - every selector matching a Pod has its smallest pair among the Pod's labels: look each of them
 *   up, for the Pods S selects.
 */
import { RESOURCES } from "../api/resources.ts";
import { isLabelValue, isQualifiedName, selects } from "../api/selector.ts";
import { stringMap } from "../api/json.ts";
import type { KubeObject } from "../api/object.ts";
import { byIndexOf, type CacheReader, type IndexSpec, type WatchScope } from "../runtime/mod.ts";
import {
  filterSelector,
  isOtherRateLimitFilter,
  isRateLimitFilter,
} from "../reconcile/ratelimit/input.ts";

/** A label selector, or a Pod's labels. */
export type LabelMap = Record<string, string>;

/** A RateLimit's spec selector, when it is a map of strings. */
export function specSelector(rl: KubeObject): LabelMap | undefined {
  return stringMap((rl.spec as { selectorLabels?: unknown } | undefined)?.selectorLabels);
}

/** The workload selector of one of this operator's RateLimit filters; undefined for others. */
function heldSelector(ef: KubeObject): LabelMap | undefined {
  return isRateLimitFilter(ef) ? filterSelector(ef) : undefined;
}

function pair(namespace: string | undefined, key: string, value: string): string {
  return `${namespace ?? ""}/${key}=${value}`;
}

/** The one pair a selector is filed under: its smallest key. */
function smallestPair(namespace: string | undefined, selector: LabelMap | undefined): string[] {
  let key: string | undefined;
  for (const k in selector) if (key === undefined || k < key) key = k;
  return key === undefined ? [] : [pair(namespace, key, selector![key])];
}

function everyPair(namespace: string | undefined, selector: LabelMap | undefined): string[] {
  return Object.entries(selector ?? {}).map(([k, v]) => pair(namespace, k, v));
}

/** RateLimits by the smallest pair of their spec's selector. */
export const RATELIMIT_SELECTOR_INDEX: IndexSpec = {
  type: RESOURCES.RateLimit,
  name: "ratelimit.selector",
  keys: (rl) => smallestPair(rl.metadata.namespace, specSelector(rl)),
};

/** RateLimits by every pair of their spec's selector. */
export const RATELIMIT_PAIRS_INDEX: IndexSpec = {
  type: RESOURCES.RateLimit,
  name: "ratelimit.selector-pairs",
  keys: (rl) => everyPair(rl.metadata.namespace, specSelector(rl)),
};

/** This operator's RateLimit EnvoyFilters by the smallest pair of their workload selector. */
export const FILTER_SELECTOR_INDEX: IndexSpec = {
  type: RESOURCES.EnvoyFilter,
  name: "ratelimit.filter-selector",
  keys: (ef) => smallestPair(ef.metadata.namespace, heldSelector(ef)),
};

/** This operator's RateLimit EnvoyFilters by every pair of their workload selector. */
export const FILTER_PAIRS_INDEX: IndexSpec = {
  type: RESOURCES.EnvoyFilter,
  name: "ratelimit.filter-selector-pairs",
  keys: (ef) => everyPair(ef.metadata.namespace, heldSelector(ef)),
};

/** Pods by each of their labels. */
export const POD_LABEL_INDEX: IndexSpec = {
  type: RESOURCES.Pod,
  name: "ratelimit.pod-labels",
  keys: (pod) => everyPair(pod.metadata.namespace, stringMap(pod.metadata.labels)),
};

/**
 * EnvoyFilters not this operator's that patch a rate limit filter in (Kyma's, or one by hand), by
 * namespace: few or none, each looked at by every RateLimit of its namespace (all of them, in the
 * mesh's root namespace), whose Pods it may give a second rate limit filter.
 */
export const OTHER_FILTERS_INDEX: IndexSpec = {
  type: RESOURCES.EnvoyFilter,
  name: "ratelimit.other-filters",
  keys: (ef) => isOtherRateLimitFilter(ef) ? [ef.metadata.namespace ?? ""] : [],
};

/** Every index the controller declares. */
export const RATELIMIT_INDEXES: readonly IndexSpec[] = [
  RATELIMIT_SELECTOR_INDEX,
  RATELIMIT_PAIRS_INDEX,
  FILTER_SELECTOR_INDEX,
  FILTER_PAIRS_INDEX,
  POD_LABEL_INDEX,
  OTHER_FILTERS_INDEX,
];

/** One kind of selector holder: RateLimits by spec, or filters by the selector they hold. */
interface Holders {
  smallest: IndexSpec;
  pairs: IndexSpec;
  selector: (obj: KubeObject) => LabelMap | undefined;
}

const BY_SPEC: Holders = {
  smallest: RATELIMIT_SELECTOR_INDEX,
  pairs: RATELIMIT_PAIRS_INDEX,
  selector: specSelector,
};
const BY_FILTER: Holders = {
  smallest: FILTER_SELECTOR_INDEX,
  pairs: FILTER_PAIRS_INDEX,
  selector: heldSelector,
};

/** Names of the holders whose selector selects a Pod with `labels`. */
function matching(cache: CacheReader, h: Holders, ns: string, labels: LabelMap, out: Set<string>) {
  for (const k in labels) {
    for (const o of byIndexOf(cache, h.smallest, pair(ns, k, labels[k]))) {
      const sel = h.selector(o);
      if (sel && selects(sel, labels)) out.add(o.metadata.name);
    }
  }
}

/**
 * Keys (`namespace/name`) of the RateLimits of `namespace` whose spec, or whose EnvoyFilter,
 * selects a Pod with `labels`, added to `out`.
 */
export function holdersSelecting(
  cache: CacheReader,
  namespace: string,
  labels: LabelMap,
  out: Set<string>,
): Set<string> {
  const names = new Set<string>();
  matching(cache, BY_SPEC, namespace, labels, names);
  matching(cache, BY_FILTER, namespace, labels, names);
  for (const n of names) out.add(`${namespace}/${n}`);
  return out;
}

/** Keys (namespace/name) of the RateLimits whose spec, or whose EnvoyFilter, selects `pod`. */
export function selectingPod(cache: CacheReader, pod: KubeObject): string[] {
  const labels = stringMap(pod.metadata.labels) ?? {};
  return [...holdersSelecting(cache, pod.metadata.namespace ?? "", labels, new Set())];
}

/**
 * The Pods of every namespace that `selector` selects: what a filter in the mesh's root
 * namespace reaches. A scan of the Pod cache, not an index (which is per namespace): only the
 * few RateLimits of the root namespace read it.
 */
export function podsEverywhere(cache: CacheReader, selector: LabelMap | undefined): KubeObject[] {
  if (!selector || Object.keys(selector).length === 0) return [];
  return cache.list(RESOURCES.Pod).filter((p) => {
    const labels = stringMap(p.metadata.labels);
    return labels !== undefined && selects(selector, labels);
  });
}

/** Candidate Pods of a selector: those filed under its rarest pair (callers check the rest). */
export function podsFor(
  cache: CacheReader,
  namespace: string,
  selector: LabelMap | undefined,
): readonly KubeObject[] {
  let best: readonly KubeObject[] | undefined;
  for (const k in selector) {
    const pods = byIndexOf(cache, POD_LABEL_INDEX, pair(namespace, k, selector[k]));
    if (best === undefined || pods.length < best.length) best = pods;
  }
  return best ?? [];
}

/**
 * Adds to `out` the names of the RateLimits (by spec) and filters (by held selector) in
 * `namespace` whose selector can select the same Pods as `selector`: a superset of those that
 * do (checked exactly by the reducer). Its own name may be among them. `candidates`: what
 * `podsFor` gives for the selector, when the caller has it already.
 */
export function rivalsOf(
  cache: CacheReader,
  namespace: string,
  selector: LabelMap | undefined,
  out: Set<string>,
  candidates?: readonly KubeObject[],
): Set<string> {
  if (!selector) return out;
  const keys = Object.keys(selector);
  if (keys.length === 0) return out;
  const pods: LabelMap[] = [];
  for (const p of candidates ?? podsFor(cache, namespace, selector)) {
    const labels = stringMap(p.metadata.labels);
    if (labels && selects(selector, labels)) pods.push(labels);
  }
  for (const h of [BY_SPEC, BY_FILTER]) {
    // Narrower (P ⊆ S): filed under one of S's pairs.
    for (const k of keys) {
      for (const o of byIndexOf(cache, h.smallest, pair(namespace, k, selector[k]))) {
        const sel = h.selector(o);
        if (sel && selects(sel, selector)) out.add(o.metadata.name);
      }
    }
    // Wider (S ⊆ P): filed under every pair of S, so the shortest list has them all.
    let wider: readonly KubeObject[] | undefined;
    for (const k of keys) {
      const list = byIndexOf(cache, h.pairs, pair(namespace, k, selector[k]));
      if (wider === undefined || list.length < wider.length) wider = list;
    }
    for (const o of wider ?? []) {
      const sel = h.selector(o);
      if (sel && selects(selector, sel)) out.add(o.metadata.name);
    }
    // Overlapping on some Pod that S selects.
    for (const labels of pods) matching(cache, h, namespace, labels, out);
  }
  return out;
}

/**
 * The Pods a RateLimit's reconcile and triggers read (the Pod watch's scopes): those of its own
 * namespace, where its selector reaches; in the mesh's root namespace, besides, the Pods of every
 * namespace that its selector, or the one its EnvoyFilter still holds, selects (label-selected
 * lists: a gateway's few Pods, not the cluster's). A selector that is not a valid label selector
 * is refused by the reducer and names no cluster-wide scope. Pods of namespaces without a
 * RateLimit are never listed otherwise.
 */
export function podScopesOf(rl: KubeObject, cache: CacheReader, root: string): WatchScope[] {
  const namespace = rl.metadata.namespace;
  if (!namespace) return [];
  const scopes: WatchScope[] = [{ namespace }];
  if (namespace !== root) return scopes;
  const held = cache.get(RESOURCES.EnvoyFilter, namespace, rl.metadata.name);
  for (const s of [specSelector(rl), held && heldSelector(held)]) {
    const labelSelector = selectorString(s);
    if (labelSelector) scopes.push({ labelSelector });
  }
  return scopes;
}

/** A map selector as a label selector string (`k=v,...`, keys sorted); undefined when empty or invalid. */
function selectorString(selector: LabelMap | undefined): string | undefined {
  const keys = Object.keys(selector ?? {}).sort();
  if (keys.length === 0) return undefined;
  if (!keys.every((k) => isQualifiedName(k) && isLabelValue(selector![k]))) return undefined;
  return keys.map((k) => `${k}=${selector![k]}`).join(",");
}
