/**
 * Finalizer edits as guarded JSON patches: each `test`s the list as the cache saw it, so the patch
 * fails (422) instead of clobbering a list someone else changed meanwhile.
 */
import type { JsonPatchOp } from "../api/object.ts";

/** Adds `name` to `finalizers` (the list as cached; undefined when there is none). */
export function addFinalizerOps(
  finalizers: readonly string[] | undefined,
  name: string,
): JsonPatchOp[] {
  return finalizers?.length
    ? [
      { op: "test", path: "/metadata/finalizers", value: finalizers },
      { op: "add", path: "/metadata/finalizers/-", value: name },
    ]
    : [
      { op: "test", path: "/metadata/finalizers", value: null },
      { op: "add", path: "/metadata/finalizers", value: [name] },
    ];
}

/** Removes `name`, cached at `index` of the list. */
export function removeFinalizerOps(index: number, name: string): JsonPatchOp[] {
  return [
    { op: "test", path: `/metadata/finalizers/${index}`, value: name },
    { op: "remove", path: `/metadata/finalizers/${index}` },
  ];
}
