/**
 * The Istio CRDs the operator's world needs where Istio itself is not installed: the simulator's
 * API server and the local control plane both install these. Each is Istio's CRD at the pinned
 * commit (names, scope, versions, subresources: a test compares them) with its schema reduced to
 * what an API server needs; the spec and status keep every field.
 */
import type { KubeObject } from "../api/object.ts";

const OPEN = { type: "object", "x-kubernetes-preserve-unknown-fields": true } as const;

/** An Istio networking CRD; the first version is the stored one. */
function istioCrd(kind: string, plural: string, versions: readonly string[]): KubeObject {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.networking.istio.io`, labels: { app: "istio-pilot" } },
    spec: {
      group: "networking.istio.io",
      names: {
        kind,
        listKind: `${kind}List`,
        plural,
        singular: kind.toLowerCase(),
        categories: ["istio-io", "networking-istio-io"],
      },
      scope: "Namespaced",
      versions: versions.map((name, i) => ({
        name,
        served: true,
        storage: i === 0,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: { type: "object", properties: { spec: OPEN, status: OPEN } },
        },
      })),
    },
  };
}

/** Istio's EnvoyFilter CRD (v1alpha3): its presence is what tells the operator a mesh is there. */
export function envoyFilterCrd(): KubeObject {
  return istioCrd("EnvoyFilter", "envoyfilters", ["v1alpha3"]);
}

/** Istio's VirtualService CRD: the gateway's routes in the mesh model come from these. */
export function virtualServiceCrd(): KubeObject {
  return istioCrd("VirtualService", "virtualservices", ["v1", "v1beta1", "v1alpha3"]);
}
