/**
 * Finding, in a long list handed to many reconciles, the items whose labels (a Pod's) or selector
 * (a RateLimit's) hold a given pair, without reading the whole list each time. A map selector
 * selects only label maps holding each of its pairs, so the items that hold one of its pairs are
 * all the candidates there are; each is then checked as a scan would check it, in list order, so
 * the answer is the scan's.
 *
 * Only a frozen list of frozen items is indexed (pure in effect: neither can change, and the index
 * is kept by the list, weakly); a short or unfrozen one is for the caller to scan, as it did.
 */

/** A label map (or map selector): JSON data, each pair an own enumerable string field. */
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
