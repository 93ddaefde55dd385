/**
 * The world a run starts from: the namespaces `default`, `platform-system` (where the operator
 * runs) and `mesh-system`; the project's CRDs (installed with the operator) and Istio's EnvoyFilter
 * and VirtualService CRDs (src/crd/istio.ts, which the local control plane installs too); the
 * mesh ingress gateway Deployment, whose Pods carry `app: mesh-ingressgateway`.
 */
import { RESOURCES } from "../../src/api/resources.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { deepFreeze } from "../../src/api/json.ts";
import { customResourceDefinitions } from "../../src/crd/definitions.ts";
import { envoyFilterCrd, virtualServiceCrd } from "../../src/crd/istio.ts";
import type { Actor, Store } from "./store.ts";

/** Namespaces every run starts with. */
export const INITIAL_NAMESPACES = ["default", "platform-system", "mesh-system"] as const;
/** The namespace of the mesh and its ingress gateway. */
export const MESH_NAMESPACE = "mesh-system";
/** Name and Pod label value of the ingress gateway. */
export const GATEWAY_NAME = "mesh-ingressgateway";

const INSTALLER: Actor = { name: "installer", manager: "kubectl" };

/**
 * The ingress gateway Deployment of the mesh, as Istio's gateway chart makes one: the injector
 * fills its `image: auto` proxy from the `gateway` template, which runs it as a router.
 */
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
        metadata: {
          labels: { ...labels, "sidecar.istio.io/inject": "true" },
          annotations: { "inject.istio.io/templates": "gateway" },
        },
        spec: { containers: [{ name: "istio-proxy", image: "auto" }] },
      },
    },
  };
}

/**
 * The CRDs every run installs, generated once per process: generating them converts the zod
 * schemas to JSON Schema, about a thirtieth of a sweep seed's time when done for every run. Frozen,
 * since every run shares them (`Store.create` copies what it is given).
 */
let initialCrds: readonly KubeObject[] | undefined;

function crdsToInstall(): readonly KubeObject[] {
  initialCrds ??= deepFreeze(
    [
      ...customResourceDefinitions(),
      envoyFilterCrd(),
      virtualServiceCrd(),
    ] as unknown as KubeObject[],
  );
  return initialCrds;
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
  for (const crd of crdsToInstall()) {
    store.create(RESOURCES.CustomResourceDefinition, crd, INSTALLER);
  }
  store.create(RESOURCES.Deployment, gatewayDeployment(), INSTALLER);
}
