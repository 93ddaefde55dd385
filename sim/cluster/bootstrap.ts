/**
 * The world a run starts from: the namespaces `default`, `platform-system` (where the operator
 * runs) and `mesh-system`; the project's CRDs (installed with the operator) and Istio's EnvoyFilter
 * and VirtualService CRDs; the mesh ingress gateway Deployment, whose Pods carry
 * `app: mesh-ingressgateway`.
 */
import { RESOURCES } from "../../src/api/resources.ts";
import type { KubeObject } from "../../src/runtime/cluster.ts";
import { customResourceDefinitions } from "../../src/crd/definitions.ts";
import type { Actor, Store } from "./store.ts";

/** Namespaces every run starts with. */
export const INITIAL_NAMESPACES = ["default", "platform-system", "mesh-system"] as const;
/** The namespace of the mesh and its ingress gateway. */
export const MESH_NAMESPACE = "mesh-system";
/** Name and Pod label value of the ingress gateway. */
export const GATEWAY_NAME = "mesh-ingressgateway";

const INSTALLER: Actor = { name: "installer", manager: "kubectl" };

/** An Istio CRD reduced to what the API server needs (the schema preserves unknown fields). */
function istioCrd(kind: string, plural: string, versions: string[]): KubeObject {
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
        schema: {
          openAPIV3Schema: { type: "object", "x-kubernetes-preserve-unknown-fields": true },
        },
        subresources: { status: {} },
      })),
    },
  };
}

/** Istio's EnvoyFilter CRD. */
export function envoyFilterCrd(): KubeObject {
  return istioCrd("EnvoyFilter", "envoyfilters", ["v1alpha3"]);
}

/** Istio's VirtualService CRD: the gateway's routes in the mesh model come from these. */
export function virtualServiceCrd(): KubeObject {
  return istioCrd("VirtualService", "virtualservices", ["v1", "v1beta1", "v1alpha3"]);
}

/** The ingress gateway Deployment of the mesh. */
export function gatewayDeployment(): KubeObject {
  const labels = { app: GATEWAY_NAME, istio: "ingressgateway" };
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: GATEWAY_NAME, namespace: MESH_NAMESPACE, labels },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: { containers: [{ name: "istio-proxy", image: "docker.io/istio/proxyv2:1.30.3" }] },
      },
    },
  };
}

/** Creates the initial world in `store`. */
export function bootstrap(store: Store): void {
  for (const name of INITIAL_NAMESPACES) {
    store.create(
      RESOURCES.Namespace,
      { apiVersion: "v1", kind: "Namespace", metadata: { name } },
      INSTALLER,
    );
  }
  for (const crd of [...customResourceDefinitions(), envoyFilterCrd(), virtualServiceCrd()]) {
    store.create(RESOURCES.CustomResourceDefinition, crd as unknown as KubeObject, INSTALLER);
  }
  store.create(RESOURCES.Deployment, gatewayDeployment(), INSTALLER);
}
