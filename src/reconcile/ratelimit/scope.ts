/**
 * Where a RateLimit reaches and whom it meets there: the namespaces (the mesh's root namespace
 * reaches every one), the proxy contexts of its Pods, the Pods it selects, the older RateLimits
 * that select the same Pods, and how selectors read in messages.
 */
import {
  contextOf,
  isMeshWide,
  namesGateway,
  PROXY_CONTEXTS,
  type ProxyContext,
  reaches,
} from "../../api/mesh.ts";
import { joinWithin } from "../../api/message.ts";
import { selects } from "../../api/selector.ts";
import {
  isActivePod,
  meshProxyOf,
  podName,
  podNamespace,
  proxyImageVersion,
} from "../../api/pod.ts";
import {
  filterSelector,
  isOurs,
  type Meta,
  type ProxyObservation,
  type RateLimitInput,
} from "./input.ts";
import { envoyOfIstio, proxyEnvoyText, refusesPerClient } from "../../api/envoy.ts";
import { at, isEmptyContainer, isObject, stringMap } from "../../api/json.ts";
import type { KubeObject } from "../../api/object.ts";

// Finding, in a long list handed to many reconciles, the items whose labels (a Pod's) or selector
// (a RateLimit's) hold a given pair, without reading the whole list each time. A map selector
// selects only label maps holding each of its pairs, so the items that hold one of its pairs are
// all the candidates there are; each is then checked as a scan would check it, in list order, so
// the answer is the scan's.
//
// Only a frozen list of frozen items is indexed (pure in effect: neither can change, and the index
// is kept by the list, weakly); a short or unfrozen one is for the caller to scan, as it did.
// /
//
// /** A label map (or map selector): JSON data, each pair an own enumerable string field.

type Labels = Readonly<Record<string, string>>;

/** Positions of a list's items by the pairs of their label maps: key, then value. */
type Positions = Map<string, Map<string, number[]>>;

/** Lists shorter than this are scanned: building an index costs more than a few scans. */
export const INDEX_MIN = 32;

/**
 * An index maker for one way of reading an item's label map (`labelsOf`; undefined: none, the item
 * is never a candidate). The returned function gives, for a list, the positions (ascending) of the
 * items whose label map holds one of `pairs`; undefined when the list is not indexed.
 */
export function labelIndex(labelsOf: (item: unknown) => Labels | undefined) {
  const made = new WeakMap<readonly unknown[], Positions | null>();
  const build = (list: readonly unknown[]): Positions | null => {
    if (list.length < INDEX_MIN || !Object.isFrozen(list)) return null;
    const index: Positions = new Map();
    for (let i = 0; i < list.length; i++) {
      const item = list[i];
      if (item !== null && typeof item === "object" && !Object.isFrozen(item)) return null;
      const labels = labelsOf(item);
      if (labels === undefined) continue;
      for (const k in labels) {
        let byValue = index.get(k);
        if (!byValue) index.set(k, byValue = new Map());
        const at = byValue.get(labels[k]);
        if (at) at.push(i);
        else byValue.set(labels[k], [i]);
      }
    }
    return index;
  };
  return (
    list: readonly unknown[],
    pairs: readonly (readonly [string, string])[],
  ): readonly number[] | undefined => {
    if (list.length < INDEX_MIN) return undefined;
    let index = made.get(list);
    if (index === undefined) made.set(list, index = build(list));
    if (index === null) return undefined;
    if (pairs.length === 1) return index.get(pairs[0][0])?.get(pairs[0][1]) ?? [];
    const found = new Set<number>();
    for (const [k, v] of pairs) for (const i of index.get(k)?.get(v) ?? []) found.add(i);
    return [...found].sort((a, b) => a - b);
  };
}

/** Every pair of the label maps (a pair held by two of them comes twice). */
export function pairsOf(maps: Iterable<Labels>): [string, string][] {
  const out: [string, string][] = [];
  for (const m of maps) for (const k in m) out.push([k, m[k]]);
  return out;
}

// Whether the limit in place bites (docs/design.md: `Ready` says the filter is stored; this says beside
// it whether any proxy applies it). An EnvoyFilter reaches only Pods with a mesh proxy, so the
// figures are the Pods the enforced selector selects and how many of them have a sidecar, and the
// `Enforced` condition is False, with a reason a user can act on, when the limit protects nothing
// or leaves some Pods out. Every figure comes from the observed Pods: the same Pods give the same
// status, so nothing is written at rest.

/** Pod names a message lists before it says "and N more". */
export const NAMED_PODS = 3;

/** The most characters a selector takes in a message (a selector may have 256 long labels). */
const SELECTOR_TEXT_MAX = 1024;

/**
 * `app=httpbin,tier=web`: a selector as users write it on the command line; a long one is cut,
 * counting the labels left out (`app=httpbin and 255 more labels`).
 */
export function selectorText(selector: Readonly<Record<string, string>>): string {
  const labels = Object.entries(selector).map(([k, v]) => `${k}=${v}`);
  return joinWithin(labels, SELECTOR_TEXT_MAX, { separator: ",", noun: "labels" });
}

export function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** `a, b, c and 4 more`: the first names of a list, and how many are left out. */
export function namedList(names: readonly string[]): string {
  const shown = names.slice(0, NAMED_PODS).join(", ");
  const more = names.length - NAMED_PODS;
  return more > 0 ? `${shown} and ${more} more` : shown;
}

// Two RateLimits in one namespace must not select the same pods (docs/design.md): Envoy would get two
// local_ratelimit filters and two route configs on one proxy. "The same pods" is decided without
// looking at pods when one selector is a subset of the other (every pod the narrower one selects,
// now or later, the wider one selects too), and otherwise by the current pods: some pod matching
// both. The older RateLimit (creationTimestamp, then name) wins; the newer is not applied.
// Across namespaces, see `olderConflicts`.

/** What conflict detection reads of a RateLimit. */
export interface SelectorOwner {
  name: string;
  creationTimestamp: string;
  selector: Record<string, string>;
}

/**
 * Reads a peer RateLimit leniently: a peer whose selector cannot be read, or is empty, selects
 * nothing; a peer being deleted no longer counts.
 */
export function selectorOwnerOf(obj: unknown): SelectorOwner | undefined {
  const meta = at(obj, "metadata");
  const name = at(meta, "name");
  if (typeof name !== "string" || at(meta, "deletionTimestamp") !== undefined) return undefined;
  const selector = stringMap(at(obj, "spec", "selectorLabels"));
  if (!selector || isEmptyContainer(selector)) return undefined;
  const created = at(meta, "creationTimestamp");
  return { name, creationTimestamp: typeof created === "string" ? created : "", selector };
}

/** The labels of a Pod object; undefined when it has none readable. */
export function podLabelsOf(obj: unknown): Record<string, string> | undefined {
  const labels = at(obj, "metadata", "labels");
  return stringMap(labels);
}

/** The Pods (any objects) whose labels `selector` selects; the rest are dropped unread. */
export function selectPods(pods: readonly unknown[], selector: Record<string, string>): unknown[] {
  const out: unknown[] = [];
  for (const pod of pods) {
    const labels = podLabelsOf(pod);
    if (labels !== undefined && selects(selector, labels)) out.push(pod);
  }
  return out;
}

/** True when the two selectors select the same pods, now (`pods`) or by construction. */
export function selectSamePods(
  a: Record<string, string>,
  b: Record<string, string>,
  pods: readonly Record<string, string>[],
): boolean {
  return selects(a, b) || selects(b, a) || pods.some((p) => selects(a, p) && selects(b, p));
}

/** True when `a` is older than `b`: creationTimestamp, then name. */
export function isOlder(a: SelectorOwner, b: SelectorOwner): boolean {
  return olderThan(a.creationTimestamp, a.name, b.creationTimestamp, b.name);
}

/** `isOlder` of two creation timestamps and names. */
function olderThan(aCreated: string, aName: string, bCreated: string, bName: string): boolean {
  return aCreated !== bCreated ? aCreated < bCreated : aName < bName;
}

/**
 * The selector a peer's own EnvoyFilter still enforces, by the peer's namespace and name: a peer
 * whose newer generation was refused keeps the filter of its last good one, and that filter, not
 * its spec, says which Pods it holds.
 */
export type EnforcedSelectorOf = (
  namespace: string,
  name: string,
) => Record<string, string> | undefined;

/** A Pod `self` selects, as conflict detection reads it. */
interface Shared {
  pod: unknown;
  labels: Record<string, string>;
  namespace: string | undefined;
}

/**
 * Names (`namespace/name`) of the older peers that select the same pods as `self`, oldest first:
 * by their spec, or by the filter they still enforce (`enforcedOf`). Only the pods `self` selects
 * can be shared, so they are found once and each older peer is checked against them alone:
 * O(peers + pods) a call rather than O(peers × pods), which matters with a thousand RateLimits
 * and Pods in one namespace.
 *
 * Peers of another namespace share Pods only through the mesh's root namespace (`rootNamespace`),
 * whose filters reach every namespace, and only a limit on the ingress gateway may apply there:
 * so across namespaces, two RateLimits conflict when a gateway Pod (a router proxy) of the other
 * namespace matches both. Selectors alone never decide it there, nor do other Pods: a refused
 * root-namespace RateLimit must not block a team's own limits.
 */
export function olderConflicts(
  self: SelectorOwner & { namespace: string },
  peers: readonly unknown[],
  pods: readonly unknown[],
  enforcedOf?: EnforcedSelectorOf,
  rootNamespace?: string,
): string[] {
  const mine: Shared[] = [];
  for (const pod of pods) {
    const labels = podLabelsOf(pod);
    if (labels === undefined || !selects(self.selector, labels)) continue;
    const ns = at(pod, "metadata", "namespace");
    mine.push({ pod, labels, namespace: typeof ns === "string" ? ns : undefined });
  }
  const mineLabels = mine.map((m) => m.labels);
  const selfKey = `${self.namespace}/${self.name}`;
  const older: (SelectorOwner & { key: string })[] = [];
  for (const peer of candidates(self.selector, peers, mineLabels, enforcedOf)) {
    // The name and the age decide first: they are cheap to read, and most peers fail them.
    const meta = isObject(peer) && isObject(peer.metadata) ? peer.metadata : undefined;
    const name = meta?.name;
    if (meta === undefined || typeof name !== "string") continue;
    const ns = typeof meta.namespace === "string" ? meta.namespace : self.namespace;
    if (name === self.name && ns === self.namespace) continue;
    const key = `${ns}/${name}`;
    const created = typeof meta.creationTimestamp === "string" ? meta.creationTimestamp : "";
    if (!olderThan(created, key, self.creationTimestamp, selfKey)) continue;
    const across = ns !== self.namespace;
    if (across && self.namespace !== rootNamespace && ns !== rootNamespace) continue;
    const p = selectorOwnerOf(peer);
    if (p === undefined) continue;
    const held = enforcedOf?.(ns, name);
    const selectors = [p.selector, ...(held && Object.keys(held).length > 0 ? [held] : [])];
    const clash = across
      ? sharesGateway(selectors, mine, self.namespace === rootNamespace ? ns : self.namespace)
      : selectors.some((s) => selectSamePods(s, self.selector, mineLabels));
    if (clash) older.push({ ...p, name: key, key });
  }
  return older.sort((a, b) => (isOlder(a, b) ? -1 : 1)).map((p) => p.key);
}

/** Positions of peers by the pairs of their selectors, in a long frozen list of them. */
const peersSelecting = labelIndex((peer) => selectorOwnerOf(peer)?.selector);

/**
 * The peers that may clash with `selector`, whose Pods are `mine`: all of them, or of a long
 * frozen list, those whose own selector holds a pair of `selector` or of a Pod of `mine`. A peer
 * selecting the same Pods as `selector` by construction holds one of its pairs (either selector is
 * the other's subset, and neither is empty), and one sharing a Pod holds a pair of that Pod. A
 * peer's kept filter may select anything, so with `enforcedOf` every peer is a candidate.
 */
function candidates(
  selector: Record<string, string>,
  peers: readonly unknown[],
  mine: readonly Record<string, string>[],
  enforcedOf: EnforcedSelectorOf | undefined,
): readonly unknown[] {
  if (enforcedOf || peers.length < INDEX_MIN || isEmptyContainer(selector)) return peers;
  const positions = peersSelecting(peers, pairsOf([selector, ...mine]));
  return positions ? positions.map((i) => peers[i]) : peers;
}

/** True when a gateway Pod of `namespace` among `mine` matches one of `selectors`. */
function sharesGateway(
  selectors: readonly Record<string, string>[],
  mine: readonly Shared[],
  namespace: string,
): boolean {
  return mine.some((m) =>
    m.namespace === namespace && selectors.some((s) => selects(s, m.labels)) &&
    meshProxyOf(m.pod) === "router"
  );
}

// Where a RateLimit's EnvoyFilter applies and which proxies take it. In the mesh's root namespace a
// filter reaches matching Pods of every namespace (Istio's rule), so there only a limit on the
// ingress gateway is allowed: one that would reach any other Pod is refused before it is applied.
// Which patch context the filter uses comes from the Pods it selects: a gateway's proxy runs as a
// router and applies GATEWAY patches only, a sidecar SIDECAR_INBOUND ones only.

/** Where a RateLimit's filter applies. */
export interface Reach {
  /** The RateLimit's (and its filter's) namespace. */
  namespace: string;
  /** The mesh's config root namespace. */
  rootNamespace: string;
  /** True in the root namespace: the filter reaches Pods of every namespace. */
  meshWide: boolean;
}

/** The reach of a filter in `namespace`. */
export function reachOf(namespace: string, rootNamespace: string): Reach {
  return { namespace, rootNamespace, meshWide: isMeshWide(namespace, rootNamespace) };
}

/** The Pods (any objects) of namespaces the reach covers; the rest are dropped unread. */
export function podsInReach(reach: Reach, pods: readonly unknown[]): readonly unknown[] {
  if (reach.meshWide) return pods;
  return pods.filter((p) => reaches(reach.namespace, podNamespace(p), reach.rootNamespace));
}

/**
 * The patch contexts for a filter whose selector selects `selected` (Pods in reach): those of the
 * proxies the active ones run, so each of them takes it. With no such Pod, the contexts of the
 * filter in place (`held`), so scaling a workload to zero rewrites nothing; else GATEWAY where
 * only a gateway may be limited (the root namespace) or the selector names a gateway by
 * convention, and SIDECAR_INBOUND otherwise.
 */
export function patchContexts(
  selected: readonly unknown[],
  selector: Readonly<Record<string, string>>,
  reach: Reach,
  held?: readonly ProxyContext[],
): ProxyContext[] {
  const found = new Set<ProxyContext>();
  for (const pod of selected) {
    const proxy = isActivePod(pod) ? meshProxyOf(pod) : undefined;
    if (proxy) found.add(contextOf(proxy));
  }
  if (found.size > 0) return PROXY_CONTEXTS.filter((c) => found.has(c));
  if (held && held.length > 0) return [...held];
  return reach.meshWide || namesGateway(selector) ? ["GATEWAY"] : ["SIDECAR_INBOUND"];
}

/** The contexts an EnvoyFilter's patches name (ours name one or both, never ANY). */
export function filterContexts(ef: KubeObject): ProxyContext[] {
  const patches = at(ef, "spec", "configPatches");
  if (!Array.isArray(patches)) return [];
  const named = new Set<unknown>();
  for (const p of patches) if (isObject(p)) named.add(at(p, "match", "context"));
  return PROXY_CONTEXTS.filter((c) => named.has(c));
}

/**
 * Of the Pods a mesh-wide filter selects, the active ones that are not gateways (`ns/name`,
 * sorted): Pods such a filter must not reach. Empty outside the root namespace.
 */
export function strayPods(reach: Reach, selected: readonly unknown[]): string[] {
  if (!reach.meshWide) return [];
  return selected
    .filter((p) => isActivePod(p) && meshProxyOf(p) !== "router")
    .map((p) => `${podNamespace(p)}/${podName(p)}`)
    .sort();
}

/** Why a root-namespace selector is refused: it reaches `strays`, which are not gateways. */
export function meshWideProblem(
  reach: Reach,
  selector: Readonly<Record<string, string>>,
  strays: readonly string[],
): string {
  return `spec.selectorLabels ${
    selectorText(selector)
  } selects Pods that are not ingress gateways (${
    namedList(strays)
  }); in ${reach.namespace}, the mesh's root namespace, an EnvoyFilter applies to every namespace, so only the ingress gateway may be limited here: create the RateLimit in the workload's own namespace`;
}

// What a RateLimit's reconcile reads, and its verdict on the current generation: why it cannot be
// applied (invalid, no mesh, mesh-wide, a conflict) or what applying it takes, and which filter in
// place may stay when it is refused. The reducer (mod.ts) turns these into a Plan.

function creationOf(raw: unknown): string {
  const t = (raw as { metadata?: { creationTimestamp?: unknown } } | null)?.metadata
    ?.creationTimestamp;
  return typeof t === "string" ? t : "";
}

/** Positions of Pods by label, in a long frozen list of them. */
const podsLabelled = labelIndex(podLabelsOf);

/**
 * The input's Pods in reach that a selector selects, made once a reconcile for each selector
 * object (the spec's, the kept filter's): conflict detection and enforcement read the same few
 * Pods rather than each scanning the namespace. A long frozen list of Pods is looked up by label
 * (`labelIndex` above) rather than read whole.
 */
export function podSelection(reach: Reach, pods: readonly unknown[]) {
  const made = new Map<Readonly<Record<string, string>>, readonly unknown[]>();
  const select = (selector: Readonly<Record<string, string>>): readonly unknown[] => {
    let first: [string, string] | undefined;
    for (const k in selector) {
      first = [k, selector[k]];
      break;
    }
    const positions = first && podsLabelled(pods, [first]);
    const candidates = positions ? positions.map((i) => pods[i]) : pods;
    // Selected, then in reach: of a namespace's Pods, few are selected.
    return podsInReach(reach, selectPods(candidates, selector));
  };
  return (selector: Readonly<Record<string, string>>): readonly unknown[] => {
    let list = made.get(selector);
    if (!list) made.set(selector, list = select(selector));
    return list;
  };
}

/** The Pods a selector selects, of those the reconcile was given. */
export type Selection = ReturnType<typeof podSelection>;

/**
 * The selector an older peer's own EnvoyFilter holds, for conflict detection; undefined when the
 * input gives no peer's filter (then no peer holds one).
 */
function enforcedOf(input: RateLimitInput): EnforcedSelectorOf | undefined {
  const filters = input.peerFilters;
  if (!filters) return undefined;
  return (namespace, name) => {
    const ef = filters.get(`${namespace}/${name}`);
    return ef && isOurs(ef, { name }) ? filterSelector(ef) : undefined;
  };
}

/** What judging and keeping read besides the input: where the filter reaches, and its Pods. */
export interface Scope {
  meta: Meta;
  /** Our EnvoyFilter as observed, if it is ours. */
  ours: KubeObject | undefined;
  reach: Reach;
  selected: Selection;
}

/** The older RateLimits that select the same Pods with `selector`, as keys (`ns/name`). */
export function olderOf(
  input: RateLimitInput,
  scope: Scope,
  selector: Record<string, string>,
): string[] {
  const { meta, reach, selected } = scope;
  const self = {
    namespace: meta.namespace,
    name: meta.name,
    creationTimestamp: creationOf(input.rateLimit),
    selector,
  };
  return olderConflicts(
    self,
    input.peers,
    selected(selector),
    enforcedOf(input),
    reach.rootNamespace,
  );
}

// Which Envoy the proxies of the selected Pods run (src/api/envoy.ts reads it from an Istio
// version): per-client buckets need dynamic descriptors, which Envoy before 1.34 refuses, and a
// proxy that refuses the filter keeps none of it. Two sources say a proxy's Istio version: istiod
// (the version the running agent reported, in syncz), and the tag of the Pod's proxy image
// (src/api/pod.ts `proxyImageVersion`), which needs no istiod and stays while the proxy is not
// connected. istiod's wins when both say one: it is what runs.

/** What the proxies of `pods` say of per-client buckets: who refuses them, whose Envoy is unknown. */
export interface ProxyEnvoys {
  /**
   * `web-1 (Istio 1.25.2, Envoy 1.33)`: the proxies whose Envoy refuses per-client buckets, with
   * `by its image` when only the image says it, and what the image says when it disagrees.
   */
  tooOld: string[];
  /** Pods whose proxy's Envoy neither istiod nor the image says (not listed, no readable version). */
  unknown: string[];
  /** Of `unknown`, the Pods istiod does not list (not connected to it, or no answer from it). */
  unlisted: string[];
}

/**
 * What istiod (`observed`, undefined when the operator does not ask it) and the proxy images say
 * of the Envoy of the proxies of `pods` (Pods whose proxy takes the filter), named `ns/name` when
 * `meshWide`.
 */
export function proxyEnvoys(
  pods: readonly unknown[],
  observed: ProxyObservation | undefined,
  meshWide: boolean,
): ProxyEnvoys {
  const out: ProxyEnvoys = { tooOld: [], unknown: [], unlisted: [] };
  for (const p of pods) {
    const name = meshWide ? `${podNamespace(p)}/${podName(p)}` : podName(p);
    const listed = observed?.byPod.get(`${podNamespace(p)}/${podName(p)}`);
    const imageVersion = proxyImageVersion(p);
    const byImage = imageVersion === undefined ? undefined : envoyOfIstio(imageVersion);
    const envoy = listed?.envoy ?? byImage;
    if (!envoy) {
      out.unknown.push(name);
      if (!listed) out.unlisted.push(name);
    } else if (refusesPerClient(envoy)) {
      const source = listed?.envoy === undefined
        ? ", by its image"
        : byImage && (byImage.minor !== envoy.minor || byImage.bound !== envoy.bound)
        ? `; its image says Istio ${imageVersion}`
        : "";
      out.tooOld.push(`${name} (${proxyEnvoyText(envoy)}${source})`);
    }
  }
  out.tooOld.sort();
  out.unknown.sort();
  out.unlisted.sort();
  return out;
}
