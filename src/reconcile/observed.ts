/**
 * Is what the operator wants observed in the cluster? The desired-subset test: the reducers' install
 * diff and the runtime's skipped writes both ask it.
 */
import { isEmptyContainer, isObject } from "../api/json.ts";
import { compareQuantities, parseQuantity } from "../api/quantity.ts";

/** A field path, innermost key first (a linked list: no copying on the way down). */
interface Path {
  key: string;
  up: Path | undefined;
}

/**
 * True when the field at `path` holds a resource quantity the API server stores in canonical form
 * (`0.5` comes back as `500m`, `1024Mi` as `1Gi`): container resources, an env divisor, an
 * emptyDir size limit.
 */
function isQuantityPath(path: Path | undefined): boolean {
  const last = path?.key;
  const parent = path?.up?.key;
  const grand = path?.up?.up?.key;
  return (grand === "resources" && (parent === "limits" || parent === "requests")) ||
    (last === "divisor" && parent === "resourceFieldRef") ||
    (last === "sizeLimit" && parent === "emptyDir");
}

function sameQuantity(desired: unknown, observed: unknown): boolean {
  const text = (v: unknown) =>
    typeof v === "string" ? v : typeof v === "number" ? String(v) : undefined;
  const [a, b] = [text(desired), text(observed)];
  const qa = a === undefined ? undefined : parseQuantity(a);
  const qb = b === undefined ? undefined : parseQuantity(b);
  return qa !== undefined && qb !== undefined && compareQuantities(qa, qb) === 0;
}

/**
 * Results for a top-level `spec` both frozen: an upstream CRD's spec is one shared frozen object
 * and the cached observed spec keeps its identity until the object changes, so the walk over a
 * 300 KB schema is done once per observed version instead of once per reconcile.
 */
const specResults = new WeakMap<object, WeakMap<object, boolean>>();

function observedAt(desired: unknown, observed: unknown, path: Path | undefined): boolean {
  if (desired === observed) return true;
  if (
    path?.key === "spec" && path.up === undefined && isObject(desired) && isObject(observed) &&
    Object.isFrozen(desired) && Object.isFrozen(observed)
  ) {
    let byObserved = specResults.get(desired);
    const known = byObserved?.get(observed);
    if (known !== undefined) return known;
    const result = walkObject(desired, observed, path);
    if (!byObserved) specResults.set(desired, byObserved = new WeakMap());
    byObserved.set(observed, result);
    return result;
  }
  return walk(desired, observed, path);
}

function walkObject(
  desired: Record<string, unknown>,
  observed: Record<string, unknown>,
  path: Path | undefined,
): boolean {
  for (const k in desired) {
    const d = desired[k];
    const o = observed[k];
    // Equal values match whatever the path (observedAt's first test), without a path node.
    if (d !== o && !observedAt(d, o, { key: k, up: path })) return false;
  }
  return true;
}

function walk(desired: unknown, observed: unknown, path: Path | undefined): boolean {
  if (desired === undefined) return true;
  // The API server omits null and empty fields: null, {} and [] all match a missing field.
  if (desired === null) return observed === null || observed === undefined;
  if ((observed === undefined || observed === null) && isEmptyContainer(desired)) return true;
  if (Array.isArray(desired)) {
    if (!Array.isArray(observed) || observed.length !== desired.length) return false;
    for (let i = 0; i < desired.length; i++) {
      if (!observedAt(desired[i], observed[i], path)) return false;
    }
    return true;
  }
  if (isObject(desired)) return isObject(observed) && walkObject(desired, observed, path);
  return isQuantityPath(path) && sameQuantity(desired, observed);
}

/**
 * True when `observed` holds everything `desired` says, so that applying `desired` would change
 * nothing: every field of a desired object is present with a matching value (extra observed
 * fields, such as server defaults, are fine); arrays match element by element and have the same
 * length; scalars are equal without coercion. What the API server does to a stored object is
 * allowed for: a null, empty map or empty list in `desired` matches a missing field (the server
 * omits them), an undefined one is absent, and a resource quantity matches its canonical form.
 * The runtime skips writes with this same test (`isSubset` in src/runtime/diff.ts).
 */
export function isObserved(desired: unknown, observed: unknown): boolean {
  return observedAt(desired, observed, undefined);
}
