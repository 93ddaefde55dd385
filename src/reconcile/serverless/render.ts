/**
 * The Serverless module's objects, rendered from the settings in use. Objects are written the way
 * the API server returns them (canonical quantities, numeric ports, no empty strings), so that an
 * applied object is observed as rendered and the next reconcile writes nothing.
 */
import type { KubeObject } from "../../api/object.ts";
import { fnv1a64, stableJson } from "../hash.ts";
import { moduleObjectMeta } from "../labels.ts";
import { type UpstreamCrd, withMetadata } from "../upstream_crds.ts";
import type { ServerlessSettings } from "./config.ts";

/** Name of the Serverless controller Deployment (docs/design.md). */
export const CONTROLLER_DEPLOYMENT = "serverless-ctrl-mngr";
/** Name of the Function CRD the module installs. */
export const FUNCTION_CRD = "functions.serverless.platform-project.io";
/** Pod template annotation whose change rolls the controller when its configuration changes. */
export const CONFIG_HASH_ANNOTATION = "operator.platform-project.io/config-hash";

const SERVICE_ACCOUNT = "serverless-controller-manager";
const CONFIG_MAP = "serverless-config";
const LOG_CONFIG_MAP = "serverless-log-config";
const CONFIG_DIR = "/appdata/config";
const LOG_CONFIG_DIR = "/appdata/log";
const APP_LABEL = "app.kubernetes.io/name";

/** What rendering needs besides the settings. */
export interface ServerlessRenderInput {
  /** Namespace of the served Serverless: the namespaced objects go there. */
  namespace: string;
  /** OWNER_LABEL value of the served Serverless. */
  owner: string;
  image: string;
  settings: ServerlessSettings;
  /** The Function CRD as upstream makes it. */
  crds: readonly UpstreamCrd[];
}

/** What names and labels a Serverless object: the served Serverless's namespace and owner. */
type Placement = Pick<ServerlessRenderInput, "namespace" | "owner">;

function meta(input: Placement, name: string, namespaced: boolean) {
  return moduleObjectMeta("serverless", input, name, namespaced, {
    "app.kubernetes.io/part-of": "serverless",
  });
}

/** YAML text of the controller's configuration file; strings are JSON-quoted, which YAML reads as is. */
function functionConfig(s: ServerlessSettings): string {
  const q = JSON.stringify;
  return [
    `functionRequeueDuration: ${q(s.functionRequeueDuration)}`,
    `healthzLivenessTimeout: ${q(s.healthzLivenessTimeout)}`,
    `functionTraceCollectorEndpoint: ${q(s.tracingEndpoint)}`,
    `functionPublisherProxyAddress: ${q(s.eventingEndpoint)}`,
    "resourcesConfiguration:",
    "  function:",
    "    resources:",
    `      defaultPreset: ${q(s.defaultRuntimePodPreset)}`,
    "",
  ].join("\n");
}

function logConfig(s: ServerlessSettings): string {
  return `logLevel: ${JSON.stringify(s.logLevel)}\nlogFormat: ${JSON.stringify(s.logFormat)}\n`;
}

function configMaps(input: ServerlessRenderInput): KubeObject[] {
  return [
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: meta(input, CONFIG_MAP, true),
      data: { "function-config.yaml": functionConfig(input.settings) },
    },
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: meta(input, LOG_CONFIG_MAP, true),
      data: { "log-config.yaml": logConfig(input.settings) },
    },
  ];
}

/**
 * Kyma's Function CRD (generated from kyma-project/serverless's API types by `deno task
 * module-crds`, group renamed to this project's): its schema, CEL rules, printer columns, short
 * names and scale subresource, with the module's labels.
 */
function functionCrd(input: ServerlessRenderInput): KubeObject {
  const [crd] = input.crds;
  return withMetadata(crd, meta(input, FUNCTION_CRD, false));
}

/**
 * The Serverless controller's ServiceAccount and RBAC (the operator holds these rules itself, so
 * that it may grant them: src/kube/module_grants.ts).
 */
export function serverlessRbac(input: Placement): KubeObject[] {
  const rule = (apiGroups: string[], resources: string[], verbs: string[]) => ({
    apiGroups,
    resources,
    verbs,
  });
  const all = ["create", "delete", "get", "list", "patch", "update", "watch"];
  const subject = { kind: "ServiceAccount", name: SERVICE_ACCOUNT, namespace: input.namespace };
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: meta(input, SERVICE_ACCOUNT, true) },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: meta(input, "serverless-manager-role", false),
      rules: [
        rule(["serverless.platform-project.io"], ["functions", "functions/status"], [
          "get",
          "list",
          "patch",
          "update",
          "watch",
        ]),
        rule(["apps"], ["deployments"], all),
        rule(["autoscaling"], ["horizontalpodautoscalers"], all),
        rule([""], ["configmaps", "secrets", "serviceaccounts", "services"], all),
        rule([""], ["events"], ["create", "patch"]),
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: meta(input, "serverless-manager-rolebinding", false),
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: "serverless-manager-role",
      },
      subjects: [subject],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: meta(input, "serverless-leader-election-role", true),
      rules: [rule(["coordination.k8s.io"], ["leases"], all)],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: meta(input, "serverless-leader-election-rolebinding", true),
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "Role",
        name: "serverless-leader-election-role",
      },
      subjects: [subject],
    },
  ];
}

function service(input: ServerlessRenderInput): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: meta(input, SERVICE_ACCOUNT, true),
    spec: {
      selector: { [APP_LABEL]: CONTROLLER_DEPLOYMENT },
      ports: [{ name: "metrics", port: 8080, protocol: "TCP", targetPort: 8080 }],
    },
  };
}

function deployment(input: ServerlessRenderInput, maps: readonly KubeObject[]): KubeObject {
  const hash = fnv1a64(stableJson(maps.map((m) => m.data)));
  const podLabels = { [APP_LABEL]: CONTROLLER_DEPLOYMENT };
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: meta(input, CONTROLLER_DEPLOYMENT, true),
    spec: {
      replicas: 1,
      selector: { matchLabels: podLabels },
      template: {
        metadata: {
          labels: podLabels,
          annotations: { "sidecar.istio.io/inject": "false", [CONFIG_HASH_ANNOTATION]: hash },
        },
        spec: {
          serviceAccountName: SERVICE_ACCOUNT,
          // Pod Security's restricted profile (deploy/ enforces it on platform-system).
          securityContext: { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } },
          containers: [{
            name: "manager",
            image: input.image,
            args: [
              `--config-path=${CONFIG_DIR}/function-config.yaml`,
              `--log-config-path=${LOG_CONFIG_DIR}/log-config.yaml`,
            ],
            ports: [
              { containerPort: 8080, name: "metrics", protocol: "TCP" },
              { containerPort: 8090, name: "health", protocol: "TCP" },
            ],
            readinessProbe: { httpGet: { path: "/readyz", port: 8090 } },
            livenessProbe: { httpGet: { path: "/healthz", port: 8090 } },
            resources: {
              limits: { cpu: "1", memory: "512Mi" },
              requests: { cpu: "10m", memory: "64Mi" },
            },
            securityContext: {
              allowPrivilegeEscalation: false,
              capabilities: { drop: ["ALL"] },
              readOnlyRootFilesystem: true,
              runAsNonRoot: true,
            },
            volumeMounts: [
              { mountPath: CONFIG_DIR, name: "config", readOnly: true },
              { mountPath: LOG_CONFIG_DIR, name: "log-config", readOnly: true },
            ],
          }],
          volumes: [
            { name: "config", configMap: { name: CONFIG_MAP } },
            { name: "log-config", configMap: { name: LOG_CONFIG_MAP } },
          ],
        },
      },
    },
  };
}

/**
 * Every object of the Serverless module, CRD first and Deployment last so that a runtime applying
 * them in order creates what the controller needs before the controller.
 */
export function renderServerless(input: ServerlessRenderInput): KubeObject[] {
  const maps = configMaps(input);
  return [
    functionCrd(input),
    ...serverlessRbac(input),
    ...maps,
    service(input),
    deployment(input, maps),
  ];
}
