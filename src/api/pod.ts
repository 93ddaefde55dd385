/**
 * What the operator reads of a Pod: whether it is still part of its workload, and which Envoy
 * proxy the mesh put beside it, if any (only then can an EnvoyFilter limit its traffic, and only
 * a filter patching the context that proxy applies). Read leniently: a Pod is whatever the API
 * returned, and a field that is missing or malformed counts as absent.
 */
import { at, isObject, type JsonObject as Json } from "./json.ts";
import { envoyOfIstio } from "./envoy.ts";

/** Name of the mesh's proxy container (Istio's sidecar and its gateways). */
export const MESH_PROXY_CONTAINER = "istio-proxy";
/** Annotation the mesh's injector writes on every Pod it added a proxy to. */
export const SIDECAR_STATUS_ANNOTATION = "sidecar.istio.io/status";
/** Annotation naming the injection templates; Istio's gateways use the `gateway` template. */
export const INJECT_TEMPLATES_ANNOTATION = "inject.istio.io/templates";

/**
 * Annotation Istio's CNI agent writes on a Pod it enrolled in ambient mode (`enabled`): its traffic
 * goes through the node's ztunnel, with no Envoy beside it (annotation.AmbientRedirection).
 */
export const AMBIENT_REDIRECTION_ANNOTATION = "ambient.istio.io/redirection";

/**
 * True when a Pod is in Istio's ambient mesh (enrolled, not pending or disabled): its requests pass
 * no Envoy an EnvoyFilter reaches, unless it also runs a sidecar, which ambient mode skips.
 */
export function inAmbientMesh(pod: unknown): boolean {
  return at(pod, "metadata", "annotations", AMBIENT_REDIRECTION_ANNOTATION) === "enabled";
}

/**
 * The kind of mesh proxy a Pod runs. A `router` is a gateway (Istio's `pilot-agent proxy router`):
 * it applies EnvoyFilter patches of context GATEWAY only. A `sidecar` (`proxy sidecar`) applies
 * SIDECAR_INBOUND and SIDECAR_OUTBOUND ones only.
 */
export type MeshProxy = "sidecar" | "router";

function containers(pod: unknown, field: "containers" | "initContainers"): Json[] {
  const list = at(pod, "spec", field);
  return Array.isArray(list) ? list.filter(isObject) : [];
}

/** The proxy container: a regular `istio-proxy`, or a native sidecar (init, restartPolicy Always). */
function proxyContainer(pod: unknown): Json | undefined {
  return containers(pod, "containers").find((c) => c.name === MESH_PROXY_CONTAINER) ??
    containers(pod, "initContainers").find((c) =>
      c.name === MESH_PROXY_CONTAINER && c.restartPolicy === "Always"
    );
}

/**
 * The mesh proxy of a Pod, if it has one. A proxy is an `istio-proxy` container, the same as a
 * native sidecar (an init container with `restartPolicy: Always`, which Istio uses when native
 * sidecars are on), or the injector's status annotation; a plain init container named istio-proxy
 * runs to completion before the app starts, so it proxies nothing and does not count. It is a
 * router when the container's arguments are `proxy router` (Istio's gateway injection template,
 * and its gateway charts, start the agent so) or the Pod asks for the `gateway` injection template.
 */
export function meshProxyOf(pod: unknown): MeshProxy | undefined {
  const proxy = proxyContainer(pod);
  if (
    proxy === undefined &&
    typeof at(pod, "metadata", "annotations", SIDECAR_STATUS_ANNOTATION) !== "string"
  ) {
    return undefined;
  }
  const args = proxy?.args;
  if (Array.isArray(args) && args[0] === "proxy" && args[1] === "router") return "router";
  const templates = at(pod, "metadata", "annotations", INJECT_TEMPLATES_ANNOTATION);
  const gateway = typeof templates === "string" &&
    templates.split(",").some((t) => t.trim() === "gateway");
  return gateway ? "router" : "sidecar";
}

/**
 * Tag suffixes of the image variants Istio publishes (pkg/kube/inject `KnownImageTypes`:
 * `updateImageTypeIfPresent` appends `-distroless` or `-debug` to the release tag).
 */
const IMAGE_VARIANTS = ["-distroless", "-debug"] as const;

/**
 * The Istio version an image reference's tag says, as Istio tags its proxy images: the injector
 * writes `{hub}/{proxy.image}:{tag}` with the release as the tag and a variant maybe appended
 * (pkg/kube/inject/inject.go `imageURL`: `docker.io/istio/proxyv2:1.25.2`,
 * `gcr.io/istio-release/proxyv2:1.26.0-distroless`). The tag is what follows the last `:` after
 * the last `/`, before any `@digest` (as the injector's `parseImageTagDigest` reads it). Undefined
 * when there is no tag (digest only, `auto`) or the tag is not an Istio 1 version (`latest`,
 * another product's numbering), read as envoy.ts reads istiod's.
 */
export function istioVersionOfImage(image: string): string | undefined {
  const named = image.split("@")[0];
  const colon = named.lastIndexOf(":");
  if (colon <= named.lastIndexOf("/")) return undefined;
  let tag = named.slice(colon + 1);
  const variant = IMAGE_VARIANTS.find((v) => tag.endsWith(v));
  if (variant) tag = tag.slice(0, -variant.length);
  return envoyOfIstio(tag) ? tag : undefined;
}

/**
 * The Istio version the image of the Pod's proxy container (a regular `istio-proxy` or a native
 * sidecar) says, which needs no istiod; undefined when the Pod has no such container or its image
 * says none (`istioVersionOfImage`).
 */
export function proxyImageVersion(pod: unknown): string | undefined {
  const image = proxyContainer(pod)?.image;
  return typeof image === "string" ? istioVersionOfImage(image) : undefined;
}

/** True when the Pod has a mesh proxy of either kind. */
export function hasMeshProxy(pod: unknown): boolean {
  return meshProxyOf(pod) !== undefined;
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

/** The Pod's namespace, or "" when it has none. */
export function podNamespace(pod: unknown): string {
  const ns = at(pod, "metadata", "namespace");
  return typeof ns === "string" ? ns : "";
}
