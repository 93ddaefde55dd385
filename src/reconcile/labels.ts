/** Labels, annotations and names that mark what this operator created. */

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
