/** Labels, annotations and names that mark what this operator created. */
import { fnv1a64 } from "./hash.ts";

/** Field manager of every server-side apply the operator makes. */
export const FIELD_MANAGER = "platform-operator";
/** Label on every object the operator creates. */
export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
/** Value of MANAGED_BY_LABEL. */
export const MANAGED_BY = "platform-operator";
/** Label naming the module an installed object belongs to: `serverless`, `keda` or `ratelimit`. */
export const MODULE_LABEL = "operator.platform-project.io/module";
/** Label selector of everything the operator created. */
export const MANAGED_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY}`;
/** Finalizer of Serverless. */
export const SERVERLESS_FINALIZER = "serverless-manager.platform-project.io/deletion-hook";
/** Finalizer of Scaler. */
export const SCALER_FINALIZER = "keda-manager.platform-project.io/deletion-hook";

/** The labels the operator puts on an object it creates for `module`. */
export function managedLabels(module: "serverless" | "keda" | "ratelimit"): Record<string, string> {
  return { [MANAGED_BY_LABEL]: MANAGED_BY, [MODULE_LABEL]: module };
}

/**
 * Label naming the module object an installed object belongs to (`ownerLabelValue`), so a watch
 * event on the object maps back to the module object that must look at it.
 */
export const OWNER_LABEL = "operator.platform-project.io/owner";

/**
 * The OWNER_LABEL value of a module object: `<namespace>.<name>`, or, when that is not a valid
 * label value (over 63 characters), its first 46 characters and a hash of the whole.
 */
export function ownerLabelValue(meta: { namespace?: string; name: string }): string {
  const full = meta.namespace ? `${meta.namespace}.${meta.name}` : meta.name;
  if (full.length <= 63) return full;
  const head = full.slice(0, 46).replace(/[^A-Za-z0-9]+$/, "");
  return `${head}-${fnv1a64(full)}`;
}

/** Where a module's objects go: the served module object's namespace and its OWNER_LABEL value. */
export interface ModulePlacement {
  namespace: string;
  owner: string;
}

/**
 * Metadata of an object a module installs: its name, the module object's namespace when the
 * object is namespaced, the managed and owner labels, and the module's own `labels`.
 */
export function moduleObjectMeta(
  module: "serverless" | "keda",
  place: ModulePlacement,
  name: string,
  namespaced: boolean,
  labels: Record<string, string>,
) {
  return {
    name,
    ...(namespaced ? { namespace: place.namespace } : {}),
    labels: { ...managedLabels(module), [OWNER_LABEL]: place.owner, ...labels },
  };
}
