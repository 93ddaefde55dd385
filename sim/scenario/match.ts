/**
 * Subset matching for expectations: every field the scenario names must be present with that
 * value; lists match when each expected item matches some actual item (conditions by `type`).
 * The result is the first differing field, as a path a reader can find in the object.
 */
import { isObject } from "../../src/api/json.ts";

function show(v: unknown): string {
  if (v === undefined) return "nothing";
  const text = JSON.stringify(v);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

function join(path: string, key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_-]*$/.test(key)
    ? (path ? `${path}.${key}` : key)
    : `${path}[${JSON.stringify(key)}]`;
}

/** The first field where `actual` does not contain `expected`, as `path: expected X, got Y`; undefined when it matches. */
export function firstDifference(expected: unknown, actual: unknown, path = ""): string | undefined {
  if (isObject(expected)) {
    if (!isObject(actual)) return `${path || "(root)"}: expected an object, got ${show(actual)}`;
    for (const [k, v] of Object.entries(expected)) {
      const d = firstDifference(v, actual[k], join(path, k));
      if (d) return d;
    }
    return undefined;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${path}: expected a list, got ${show(actual)}`;
    for (const [i, item] of expected.entries()) {
      if (actual.some((a) => firstDifference(item, a) === undefined)) continue;
      // Explain against the item with the same `type` (conditions) or `name`, when there is one.
      const key = isObject(item)
        ? (item.type !== undefined ? "type" : item.name !== undefined ? "name" : undefined)
        : undefined;
      const peer = key
        ? actual.find((a) => isObject(a) && isObject(item) && a[key] === item[key])
        : undefined;
      if (peer !== undefined && key && isObject(item)) {
        return firstDifference(item, peer, `${path}[${key}=${String(item[key])}]`);
      }
      if (key && isObject(item)) {
        return `${path}: no item with ${key} ${show(item[key])}; got ${show(actual)}`;
      }
      return `${path}[${i}]: no item matches ${show(item)}; got ${show(actual)}`;
    }
    return undefined;
  }
  if (expected === actual) return undefined;
  return `${path || "(root)"}: expected ${show(expected)}, got ${show(actual)}`;
}
