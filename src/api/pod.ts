/**
 * What the operator reads of a Pod: whether it is still part of its workload, and whether the mesh
 * put an Envoy proxy beside it (only then can an EnvoyFilter limit its traffic). Read leniently: a
 * Pod is whatever the API returned, and a field that is missing or malformed counts as absent.
 */
import { at, isObject, type JsonObject as Json } from "./json.ts";

/** Name of the mesh's proxy container (Istio's sidecar and its gateways). */
export const MESH_PROXY_CONTAINER = "istio-proxy";
/** Annotation the mesh's injector writes on every Pod it added a sidecar to. */
export const SIDECAR_STATUS_ANNOTATION = "sidecar.istio.io/status";

function containers(pod: unknown, field: "containers" | "initContainers"): Json[] {
  const list = at(pod, "spec", field);
  return Array.isArray(list) ? list.filter(isObject) : [];
}

/**
 * True when the Pod has a mesh proxy: an `istio-proxy` container, the same as a native sidecar
 * (an init container with `restartPolicy: Always`, Kubernetes 1.29+, which Istio uses when
 * native sidecars are on), or the injector's status annotation. A plain init container named
 * istio-proxy runs to completion before the app starts, so it proxies nothing and does not count.
 */
export function hasMeshSidecar(pod: unknown): boolean {
  if (containers(pod, "containers").some((c) => c.name === MESH_PROXY_CONTAINER)) return true;
  const native = containers(pod, "initContainers").some((c) =>
    c.name === MESH_PROXY_CONTAINER && c.restartPolicy === "Always"
  );
  if (native) return true;
  return typeof at(pod, "metadata", "annotations", SIDECAR_STATUS_ANNOTATION) === "string";
}

/**
 * True when the Pod still serves its workload: not being deleted and not finished (phase
 * Succeeded or Failed). Pending Pods count: their spec already says whether they get a proxy.
 */
export function isActivePod(pod: unknown): boolean {
  if (at(pod, "metadata", "deletionTimestamp") !== undefined) return false;
  const phase = at(pod, "status", "phase");
  return phase !== "Succeeded" && phase !== "Failed";
}

/** The Pod's name, or "" when it has none. */
export function podName(pod: unknown): string {
  const name = at(pod, "metadata", "name");
  return typeof name === "string" ? name : "";
}
