/**
 * Reusable map functions (controller-runtime's handlers): what a watch's `trigger` or a controller's
 * `peers` is built from, so each controller states which change wakes which primary instead of
 * hand-writing a switch over kinds. Each returns keys in a stable order.
 */
import { objectKey, type ResourceType } from "../api/object.ts";
import type { MapFunc } from "../runtime/mod.ts";

/** Sorted, each key once. */
export function sortedKeys(keys: Iterable<string>): string[] {
  return [...new Set(keys)].sort();
}

/** Every cached primary of `type`: a change any of them may decide on. */
export function everyPrimary(type: ResourceType): MapFunc {
  return (_obj, cache) => sortedKeys(cache.list(type).map(objectKey));
}

/** `then`, for objects carrying every label of `labels`; nothing for the others. */
export function whenLabelled(labels: Readonly<Record<string, string>>, then: MapFunc): MapFunc {
  const wanted = Object.entries(labels);
  return (obj, cache) => {
    const have = obj.metadata.labels ?? {};
    return wanted.every(([k, v]) => have[k] === v) ? then(obj, cache) : [];
  };
}

/** `then`, for the object named `name` only (a cluster-scoped object such as a CRD). */
export function whenNamed(name: string, then: MapFunc): MapFunc {
  return (obj, cache) => obj.metadata.name === name ? then(obj, cache) : [];
}

/**
 * The primary an object's owner label names (controller-runtime's `EnqueueRequestForOwner`, by a
 * label: an ownerReference cannot point from a namespaced object to one in another namespace), as
 * `ownerOf` labels a primary; `orphan` when no cached primary is its owner.
 */
export function ownerByLabel(
  primary: ResourceType,
  label: string,
  ownerOf: (primary: { namespace?: string; name: string }) => string,
  orphan: MapFunc,
): MapFunc {
  return (obj, cache) => {
    const owner = obj.metadata.labels?.[label];
    const owners = cache.list(primary).filter((p) => ownerOf(p.metadata) === owner);
    return owners.length > 0 ? sortedKeys(owners.map(objectKey)) : orphan(obj, cache);
  };
}
