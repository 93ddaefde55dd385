/**
 * Istio's sidecar injector, as the simulated API server's mutating admission of Pods. Which Pods
 * get a proxy follows the selectors of Istio's injection webhooks for the default revision
 * (istio-discovery chart, templates/mutatingwebhook.yaml, `enableNamespacesByDefault` off):
 * - namespace label `istio-injection=enabled`, unless the Pod says `sidecar.istio.io/inject: "false"`;
 * - namespace label `istio.io/rev=default` (and no `istio-injection`), with the same opt-out;
 * - in a namespace with neither label, a Pod labelled `sidecar.istio.io/inject: "true"` (and no
 *   `istio.io/rev`), or `istio.io/rev: default` (unless it opts out).
 * `istio-injection=disabled` matches no webhook. The proxy is a sidecar (`proxy sidecar`), or a
 * router (`proxy router`) when the Pod asks for the `gateway` template
 * (`inject.istio.io/templates`), as Istio's gateway charts do; the injector also labels the Pod
 * `security.istio.io/tlsMode: istio` and writes its status annotation.
 */
import {
  INJECT_TEMPLATES_ANNOTATION,
  MESH_PROXY_CONTAINER,
  SIDECAR_STATUS_ANNOTATION,
} from "../../src/api/pod.ts";
import type { KubeObject } from "../../src/api/object.ts";

/** The revision this mesh runs (Istio's default install). */
const REVISION = "default";
const INJECT_LABEL = "sidecar.istio.io/inject";
const REV_LABEL = "istio.io/rev";
const NAMESPACE_LABEL = "istio-injection";
/** The image the injector puts in (the mesh's Envoy). */
export const PROXY_IMAGE = "docker.io/istio/proxyv2:1.30.3";

type Labels = Readonly<Record<string, string>>;

/** True when one of Istio's injection webhooks selects a Pod with `pod` labels in a namespace with `ns`. */
export function selectsForInjection(ns: Labels, pod: Labels): boolean {
  const optOut = pod[INJECT_LABEL] === "false";
  const nsLabel = ns[NAMESPACE_LABEL];
  const nsRev = ns[REV_LABEL];
  if (nsLabel !== undefined) return nsLabel === "enabled" && !optOut;
  if (nsRev !== undefined) return nsRev === REVISION && !optOut;
  if (pod[REV_LABEL] !== undefined) return pod[REV_LABEL] === REVISION && !optOut;
  return pod[INJECT_LABEL] === "true";
}

/**
 * Injects the mesh's proxy into a Pod being created, in place, when the webhooks select it. A Pod
 * that already has an `istio-proxy` container (a gateway chart's `image: auto` placeholder, or a
 * manual injection) gets the injector's arguments on it rather than a second one.
 */
export function injectMeshProxy(pod: KubeObject, nsLabels: Labels): void {
  const labels = pod.metadata.labels ?? {};
  if (!selectsForInjection(nsLabels, labels)) return;
  const annotations = pod.metadata.annotations ?? {};
  const templates = (annotations[INJECT_TEMPLATES_ANNOTATION] ?? "sidecar").split(",")
    .map((t) => t.trim());
  const role = templates.includes("gateway") ? "router" : "sidecar";
  const spec = (pod.spec ?? {}) as { containers?: Record<string, unknown>[] };
  // A copy: the Pod's spec may share the list with a stored object (json.ts).
  const containers = (spec.containers ?? []).slice();
  const proxy = { name: MESH_PROXY_CONTAINER, image: PROXY_IMAGE, args: ["proxy", role] };
  const at = containers.findIndex((c) => c.name === MESH_PROXY_CONTAINER);
  if (at >= 0) containers[at] = { ...containers[at], image: PROXY_IMAGE, args: proxy.args };
  else containers.push(proxy);
  pod.spec = { ...spec, containers };
  pod.metadata.labels = { ...labels, "security.istio.io/tlsMode": "istio" };
  pod.metadata.annotations = {
    ...annotations,
    [SIDECAR_STATUS_ANNOTATION]: JSON.stringify({
      containers: [MESH_PROXY_CONTAINER],
      revision: REVISION,
      templates,
    }),
  };
}
