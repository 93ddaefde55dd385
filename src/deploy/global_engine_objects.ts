/**
 * deploy/global-engine/: the optional kustomize Component that turns on the global rate limit
 * engine (`--global-redis-secret`, src/controllers/engine.ts): the engine's namespace (restricted
 * Pod Security, like the operator's), the operator's Role there (src/kube/rbac.ts
 * `engineRbacObjects`: list and watch of Secrets, and the PodDisruptionBudget and NetworkPolicy
 * it keeps; its Deployment, Service and ServiceAccount are the ClusterRole's), the operator's xDS
 * Service from which the engines take their configuration, a NetworkPolicy letting the engines in
 * to the operator's xDS port and the operator out to the engines' debug and health ports, and the
 * operator's variable naming the Secret plus its xDS port.
 */
import type { KubeObject } from "../api/object.ts";
import {
  ENGINE_XDS,
  GLOBAL_ENGINE_LABELS,
  GLOBAL_ENGINE_SERVICE,
  OPERATOR_POD_LABELS,
} from "../api/global_engine.ts";
import { DEFAULT_RBAC_NAMES, engineRbacObjects, OPERATOR_OBJECT_LABELS } from "../kube/rbac.ts";
import { operatorDeploymentPatch } from "./istiod_objects.ts";

/** The operator's variable for `--global-redis-secret` (run_flags.ts's envName; a test holds them equal). */
export const GLOBAL_REDIS_SECRET_ENV = "PLATFORM_OPERATOR_GLOBAL_REDIS_SECRET";
/** The operator's variable for `--global-engine-image`. */
export const GLOBAL_ENGINE_IMAGE_ENV = "PLATFORM_OPERATOR_GLOBAL_ENGINE_IMAGE";
/** The operator's variables for `--global-engine-replicas`, `-requests` and `-limits`. */
export const GLOBAL_ENGINE_SIZE_ENV = {
  replicas: "PLATFORM_OPERATOR_GLOBAL_ENGINE_REPLICAS",
  requests: "PLATFORM_OPERATOR_GLOBAL_ENGINE_REQUESTS",
  limits: "PLATFORM_OPERATOR_GLOBAL_ENGINE_LIMITS",
} as const;

/** The Secret deploy/global-engine names: `redis` in the engine's namespace. */
export const DEFAULT_REDIS_SECRET = `${GLOBAL_ENGINE_SERVICE.namespace}/redis`;

/** The name of the operator's port serving the engines' configuration. */
export const XDS_PORT_NAME = "engine-xds";

const LABELS = OPERATOR_OBJECT_LABELS;

/** The engine's namespace, restricted like the operator's (the engine's Pods meet the profile). */
export function engineNamespace(): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: {
      name: GLOBAL_ENGINE_SERVICE.namespace,
      labels: {
        "app.kubernetes.io/part-of": "platform-operator",
        "pod-security.kubernetes.io/enforce": "restricted",
        "pod-security.kubernetes.io/enforce-version": "latest",
      },
    },
  };
}

/** The Service leading the engines to every operator replica's xDS port. */
export function xdsService(namespace = DEFAULT_RBAC_NAMES.namespace): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: ENGINE_XDS.serviceName, namespace, labels: LABELS },
    spec: {
      type: "ClusterIP",
      selector: { ...OPERATOR_POD_LABELS },
      ports: [{
        name: "grpc-xds",
        port: ENGINE_XDS.port,
        targetPort: XDS_PORT_NAME,
        protocol: "TCP",
      }],
    },
  };
}

/**
 * The operator Pods' NetworkPolicy for the engine: in from the engine's Pods to the xDS port, out
 * to their debug (`/rlconfig`) and health ports (added to deploy/networkpolicy.yaml's: policies
 * add up).
 */
export function operatorEnginePolicy(namespace = DEFAULT_RBAC_NAMES.namespace): KubeObject {
  const s = GLOBAL_ENGINE_SERVICE;
  const engines = [{
    namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": s.namespace } },
    podSelector: { matchLabels: { ...GLOBAL_ENGINE_LABELS } },
  }];
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name: "platform-operator-global-engine", namespace, labels: LABELS },
    spec: {
      podSelector: { matchLabels: { ...OPERATOR_POD_LABELS } },
      policyTypes: ["Ingress", "Egress"],
      ingress: [{ from: engines, ports: [{ port: ENGINE_XDS.port, protocol: "TCP" }] }],
      egress: [{
        to: engines,
        ports: [{ port: s.debugPort, protocol: "TCP" }, { port: s.httpPort, protocol: "TCP" }],
      }],
    },
  };
}

/** The patch of the operator's Deployment: the Secret's variable and the xDS port. */
export function engineDeploymentPatch(secret = DEFAULT_REDIS_SECRET): KubeObject {
  return operatorDeploymentPatch({
    env: [{ name: GLOBAL_REDIS_SECRET_ENV, value: secret }],
    ports: [{ name: XDS_PORT_NAME, containerPort: ENGINE_XDS.port, protocol: "TCP" }],
  });
}

/** Every object of deploy/global-engine but the Deployment's patch. */
export function globalEngineObjects(): KubeObject[] {
  return [
    engineNamespace(),
    ...engineRbacObjects(GLOBAL_ENGINE_SERVICE.namespace),
    xdsService(),
    operatorEnginePolicy(),
  ];
}
