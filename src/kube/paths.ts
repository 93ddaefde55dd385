/** API paths and query strings built from a ResourceType; pure. */
import type { ResourceType } from "../api/object.ts";

/** The API prefix of a type's group and version: `/api/v1` for the core group, `/apis/<group>/<version>` else. */
export function groupVersionPath(type: ResourceType): string {
  return type.group ? `/apis/${type.group}/${type.version}` : `/api/${type.version}`;
}

/**
 * The collection path of a type. A namespaced type with no namespace gives the all-namespaces path;
 * a cluster-scoped type ignores the namespace.
 */
export function collectionPath(type: ResourceType, namespace?: string): string {
  const base = groupVersionPath(type);
  if (type.namespaced && namespace) {
    return `${base}/namespaces/${encodeURIComponent(namespace)}/${type.plural}`;
  }
  return `${base}/${type.plural}`;
}

/** The path of one object, or of its subresource (`status`). A namespaced type needs a namespace. */
export function objectPath(
  type: ResourceType,
  namespace: string | undefined,
  name: string,
  subresource?: string,
): string {
  if (type.namespaced && !namespace) {
    throw new Error(`${type.kind} ${name} is namespaced: a namespace is required`);
  }
  if (!name) throw new Error(`${type.kind}: an object name is required`);
  const path = `${collectionPath(type, namespace)}/${encodeURIComponent(name)}`;
  return subresource ? `${path}/${subresource}` : path;
}

/** Query parameter values; undefined ones are left out. */
export type QueryParams = Record<string, string | number | boolean | undefined>;

/** Appends the defined parameters to `path` as a query string, in the order given. */
export function withQuery(path: string, params: QueryParams): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== "") query.append(key, String(value));
  }
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

/**
 * The API server's `timeout` parameter of a write (a Go duration, whole milliseconds rounded up:
 * a bound is never made shorter than asked); undefined without one.
 */
export function timeoutParam(opts: { timeoutMs?: number } | undefined): string | undefined {
  const ms = opts?.timeoutMs;
  return ms === undefined ? undefined : `${Math.max(1, Math.ceil(ms))}ms`;
}

/** `path` with a write's `timeout` parameter, when it has one. */
export function withTimeout(path: string, opts: { timeoutMs?: number } | undefined): string {
  return withQuery(path, { timeout: timeoutParam(opts) });
}
