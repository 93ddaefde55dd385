/**
 * Two RateLimits in one namespace must not select the same pods (docs/design.md): Envoy would get two
 * local_ratelimit filters and two route configs on one proxy. "The same pods" is decided without
 * looking at pods when one selector is a subset of the other (every pod the narrower one selects,
 * now or later, the wider one selects too), and otherwise by the current pods: some pod matching
 * both. The older RateLimit (creationTimestamp, then name) wins; the newer is not applied.
 */

/** What conflict detection reads of a RateLimit. */
export interface SelectorOwner {
  name: string;
  creationTimestamp: string;
  selector: Record<string, string>;
}

function isStringMap(v: unknown): v is Record<string, string> {
  return v !== null && typeof v === "object" && !Array.isArray(v) &&
    Object.values(v).every((x) => typeof x === "string");
}

function field(obj: unknown, ...keys: string[]): unknown {
  let cur = obj;
  for (const k of keys) {
    cur = cur !== null && typeof cur === "object" ? (cur as Record<string, unknown>)[k] : undefined;
  }
  return cur;
}

/**
 * Reads a peer RateLimit leniently: a peer whose selector cannot be read, or is empty, selects
 * nothing; a peer being deleted no longer counts.
 */
export function selectorOwnerOf(obj: unknown): SelectorOwner | undefined {
  const name = field(obj, "metadata", "name");
  const selector = field(obj, "spec", "selectorLabels");
  if (typeof name !== "string" || field(obj, "metadata", "deletionTimestamp") !== undefined) {
    return undefined;
  }
  if (!isStringMap(selector) || Object.keys(selector).length === 0) return undefined;
  const created = field(obj, "metadata", "creationTimestamp");
  return { name, creationTimestamp: typeof created === "string" ? created : "", selector };
}

/** The labels of a Pod object; undefined when it has none readable. */
export function podLabelsOf(obj: unknown): Record<string, string> | undefined {
  const labels = field(obj, "metadata", "labels");
  return isStringMap(labels) ? labels : undefined;
}

function subset(a: Record<string, string>, b: Record<string, string>): boolean {
  return Object.entries(a).every(([k, v]) => b[k] === v);
}

/** The Pods (any objects) whose labels `selector` selects; the rest are dropped unread. */
export function selectPods(pods: readonly unknown[], selector: Record<string, string>): unknown[] {
  const out: unknown[] = [];
  for (const pod of pods) {
    const labels = podLabelsOf(pod);
    if (labels !== undefined && subset(selector, labels)) out.push(pod);
  }
  return out;
}

/** True when the two selectors select the same pods, now (`pods`) or by construction. */
export function selectSamePods(
  a: Record<string, string>,
  b: Record<string, string>,
  pods: readonly Record<string, string>[],
): boolean {
  return subset(a, b) || subset(b, a) || pods.some((p) => subset(a, p) && subset(b, p));
}

/** True when `a` is older than `b`: creationTimestamp, then name. */
export function isOlder(a: SelectorOwner, b: SelectorOwner): boolean {
  if (a.creationTimestamp !== b.creationTimestamp) return a.creationTimestamp < b.creationTimestamp;
  return a.name < b.name;
}

/**
 * The selector a peer's own EnvoyFilter still enforces, by the peer's name: a peer whose newer
 * generation was refused keeps the filter of its last good one, and that filter, not its spec,
 * says which Pods it holds.
 */
export type EnforcedSelectorOf = (name: string) => Record<string, string> | undefined;

/**
 * Names of the older peers that select the same pods as `self`, oldest first: by their spec, or
 * by the filter they still enforce (`enforcedOf`). Only the pods `self` selects can be shared, so
 * they are found once and each older peer is checked against them alone: O(peers + pods) a call
 * rather than O(peers × pods), which matters with a thousand RateLimits and Pods in one namespace.
 */
export function olderConflicts(
  self: SelectorOwner,
  peers: readonly unknown[],
  pods: readonly unknown[],
  enforcedOf?: EnforcedSelectorOf,
): string[] {
  const mine: Record<string, string>[] = [];
  for (const pod of pods) {
    const labels = podLabelsOf(pod);
    if (labels !== undefined && subset(self.selector, labels)) mine.push(labels);
  }
  const older: SelectorOwner[] = [];
  for (const peer of peers) {
    // The name and the age decide first: they are cheap to read, and most peers fail them.
    const name = field(peer, "metadata", "name");
    if (typeof name !== "string" || name === self.name) continue;
    const created = field(peer, "metadata", "creationTimestamp");
    const cheap = {
      name,
      creationTimestamp: typeof created === "string" ? created : "",
      selector: {},
    };
    if (!isOlder(cheap, self)) continue;
    const p = selectorOwnerOf(peer);
    if (p === undefined) continue;
    const held = enforcedOf?.(name);
    if (
      selectSamePods(p.selector, self.selector, mine) ||
      (held !== undefined && Object.keys(held).length > 0 &&
        selectSamePods(held, self.selector, mine))
    ) older.push(p);
  }
  return older.sort((a, b) => (isOlder(a, b) ? -1 : 1)).map((p) => p.name);
}
