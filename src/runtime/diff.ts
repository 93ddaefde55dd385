/**
 * Comparisons the runner makes before writing, so that a reconcile whose result is already
 * observed makes no write at all (docs/design.md "a no-op reconcile makes zero writes").
 */
import { isObject } from "../api/json.ts";
import { isObserved } from "../reconcile/observed.ts";

/**
 * True when applying `desired` would change nothing in `observed`: the reducers' `isObserved`
 * (src/reconcile/observed.ts), one rule for both the reducers' install diff and the runner's write
 * skip. Kept under this name for the library's callers.
 */
export const isSubset: (desired: unknown, observed: unknown) => boolean = isObserved;

/**
 * The first field the operator's field manager owns (per its managedFields `fieldsV1`) that
 * `desired` no longer sets, as a dotted path; undefined when there is none. Server-side apply
 * removes such a field, so the apply must be sent even though `desired` is a subset of what is
 * observed. Only map keys (`f:`) are followed: list items (`k:`, `v:`, `i:`) are covered by
 * `isSubset`'s equal-length rule.
 */
export function ownedFieldMissing(owned: unknown, desired: unknown, path = ""): string | undefined {
  if (!isObject(owned)) return undefined;
  for (const [k, sub] of Object.entries(owned)) {
    if (!k.startsWith("f:")) continue;
    const name = k.slice(2);
    const here = `${path}.${name}`;
    if (!isObject(desired) || desired[name] === undefined) return here;
    const missing = ownedFieldMissing(sub, desired[name], here);
    if (missing) return missing;
  }
  return undefined;
}
