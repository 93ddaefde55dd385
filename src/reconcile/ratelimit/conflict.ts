/**
 * Two RateLimits in one namespace must not select the same pods (docs/design.md): Envoy would get two
 * local_ratelimit filters and two route configs on one proxy. "The same pods" is decided without
 * looking at pods when one selector is a subset of the other (every pod the narrower one selects,
 * now or later, the wider one selects too), and otherwise by the current pods: some pod matching
 * both. The older RateLimit (creationTimestamp, then name) wins; the newer is not applied.
 * Across namespaces, see `olderConflicts`.
 */
import { at, isEmptyContainer, isObject, stringMap } from "../../api/json.ts";
import { meshProxyOf } from "../../api/pod.ts";
import { selects } from "../../api/selector.ts";
import { INDEX_MIN, labelIndex, pairsOf } from "./label_index.ts";

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
