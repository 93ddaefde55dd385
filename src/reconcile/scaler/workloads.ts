/**
 * KEDA's Deployments, Services, external-metrics APIService and admission webhook configuration,
 * after KEDA's release manifest, with each component's configuration from the Scaler applied:
 * logging flags, resources, env, pod annotations and the sidecar label.
 */
import type { EnvVar, ScalerComponent } from "../../api/scaler.ts";
import type { KubeObject } from "../../api/object.ts";
import type { ModuleImages } from "../../api/images.ts";
import type { ComponentConfig } from "./config.ts";
import {
  KEDA_CLUSTER_OBJECTS,
  KEDA_DEPLOYMENTS,
  KEDA_SERVICE_ACCOUNTS,
  kedaMeta,
  type KedaTarget,
  METRICS_SERVICE_ADDRESS_FLAG,
} from "./names.ts";
import { canonicalQuantity } from "../../api/quantity.ts";

/** Label that turns the service-mesh sidecar on or off for a Pod. */
export const SIDECAR_LABEL = "sidecar.istio.io/inject";

type Env = Record<string, unknown>;
const fieldEnv = (name: string, fieldPath: string): Env => ({
  name,
  valueFrom: { fieldRef: { fieldPath } },
});
const port = (name: string, containerPort: number) => ({ containerPort, name, protocol: "TCP" });
const probe = (path: string, p: number, scheme?: "HTTPS") => ({
  httpGet: { path, port: p, ...(scheme ? { scheme } : {}) },
});

interface ComponentShape {
  command: string[];
  args: (target: KedaTarget) => string[];
  ports: object[];
  env: Env[];
  liveness: object;
  readiness: object;
}

const SHAPES: Record<ScalerComponent, ComponentShape> = {
  operator: {
    command: ["/keda"],
    args: () => [
      "--leader-elect",
      "--disable-compression=true",
      "--enable-cert-rotation=true",
      "--cert-secret-name=kedaorg-certs",
      `--operator-service-name=${KEDA_DEPLOYMENTS.operator}`,
      `--metrics-server-service-name=${KEDA_DEPLOYMENTS.metricServer}`,
      `--webhooks-service-name=${KEDA_DEPLOYMENTS.admissionWebhook}`,
      "--k8s-cluster-domain=cluster.local",
    ],
    ports: [port("http", 8080), port("metricsservice", 9666)],
    env: [
      { name: "WATCH_NAMESPACE" },
      fieldEnv("POD_NAME", "metadata.name"),
      fieldEnv("POD_NAMESPACE", "metadata.namespace"),
      { name: "OPERATOR_NAME", value: KEDA_DEPLOYMENTS.operator },
      { name: "KEDA_HTTP_DEFAULT_TIMEOUT", value: "3000" },
      { name: "KEDA_HTTP_MIN_TLS_VERSION", value: "TLS12" },
    ],
    liveness: probe("/healthz", 8081),
    readiness: probe("/readyz", 8081),
  },
  metricServer: {
    command: ["/keda-adapter"],
    args: (t) => [
      "--secure-port=6443",
      "--stderrthreshold=ERROR",
      "--disable-compression=true",
      `${METRICS_SERVICE_ADDRESS_FLAG}${KEDA_DEPLOYMENTS.operator}.${t.namespace}.svc.cluster.local:9666`,
      "--client-ca-file=/certs/ca.crt",
      "--tls-cert-file=/certs/tls.crt",
      "--tls-private-key-file=/certs/tls.key",
      "--cert-dir=/certs",
      "--v=0",
    ],
    ports: [port("https", 6443), port("metrics", 8080)],
    env: [
      { name: "WATCH_NAMESPACE" },
      fieldEnv("POD_NAMESPACE", "metadata.namespace"),
      { name: "KEDA_HTTP_DEFAULT_TIMEOUT", value: "3000" },
      { name: "KEDA_HTTP_MIN_TLS_VERSION", value: "TLS12" },
    ],
    liveness: probe("/healthz", 6443, "HTTPS"),
    readiness: probe("/readyz", 6443, "HTTPS"),
  },
  admissionWebhook: {
    command: ["/keda-admission-webhooks"],
    args: () => [
      "--cert-dir=/certs",
      "--health-probe-bind-address=:8081",
      "--metrics-bind-address=:8080",
    ],
    ports: [port("http", 9443), port("metrics", 8080)],
    env: [{ name: "WATCH_NAMESPACE" }, fieldEnv("POD_NAMESPACE", "metadata.namespace")],
    liveness: probe("/healthz", 8081),
    readiness: probe("/readyz", 8081),
  },
};

function defined<T extends object>(obj: T | undefined): T | undefined {
  if (!obj) return undefined;
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as T;
}

/** A user env entry as the API server stores it: an empty value is dropped, a divisor canonical. */
function canonicalEnv(e: EnvVar): Env {
  const from = e.valueFrom;
  if (!from) return e.value ? { name: e.name, value: e.value } : { name: e.name };
  const rf = from.resourceFieldRef;
  const valueFrom = defined({
    configMapKeyRef: defined(from.configMapKeyRef),
    secretKeyRef: defined(from.secretKeyRef),
    fieldRef: defined(from.fieldRef),
    resourceFieldRef: rf
      ? defined({
        ...rf,
        divisor: rf.divisor === undefined ? undefined : canonicalQuantity(rf.divisor),
      })
      : undefined,
  });
  return { name: e.name, valueFrom };
}

/** The component's own env with the user's entries merged in: same name replaces in place, new ones follow. */
export function mergeEnv(own: readonly Env[], user: readonly EnvVar[]): Env[] {
  const out = [...own];
  for (const e of user) {
    const i = out.findIndex((x) => x.name === e.name);
    if (i >= 0) out[i] = canonicalEnv(e);
    else out.push(canonicalEnv(e));
  }
  return out;
}

function deployment(
  target: KedaTarget,
  c: ScalerComponent,
  cfg: ComponentConfig,
  image: string,
): KubeObject {
  const name = KEDA_DEPLOYMENTS[c];
  const shape = SHAPES[c];
  const own: Record<string, string> = c === "metricServer" && cfg.sidecar
    ? { "traffic.sidecar.istio.io/excludeInboundPorts": "6443" }
    : {};
  const annotations = { ...own, ...cfg.annotations };
  const args = [
    ...shape.args(target),
    `--zap-log-level=${cfg.args.level}`,
    `--zap-encoder=${cfg.args.encoder}`,
    `--zap-time-encoding=${cfg.args.timeEncoding}`,
  ];
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: kedaMeta(target, name, true),
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: {
          labels: {
            app: name,
            "app.kubernetes.io/name": name,
            [SIDECAR_LABEL]: String(cfg.sidecar),
          },
          ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
        },
        spec: {
          serviceAccountName: KEDA_SERVICE_ACCOUNTS[c],
          securityContext: { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } },
          containers: [{
            name,
            image,
            command: shape.command,
            args,
            env: mergeEnv(shape.env, cfg.env),
            ports: shape.ports,
            livenessProbe: shape.liveness,
            readinessProbe: shape.readiness,
            resources: cfg.resources,
            securityContext: {
              allowPrivilegeEscalation: false,
              capabilities: { drop: ["ALL"] },
              readOnlyRootFilesystem: true,
            },
            volumeMounts: [{ mountPath: "/certs", name: "certificates", readOnly: true }],
          }],
          volumes: [{
            name: "certificates",
            secret: { optional: true, secretName: "kedaorg-certs" },
          }],
        },
      },
    },
  };
}

function service(
  target: KedaTarget,
  name: string,
  ports: { name: string; port: number; targetPort: number }[],
): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: kedaMeta(target, name, true),
    spec: { ports: ports.map((p) => ({ ...p, protocol: "TCP" })), selector: { app: name } },
  };
}

function webhook(target: KedaTarget, kind: string, plural: string, group = "keda.sh") {
  return {
    name: `v${kind.toLowerCase()}.kb.io`,
    admissionReviewVersions: ["v1"],
    clientConfig: {
      service: {
        name: KEDA_DEPLOYMENTS.admissionWebhook,
        namespace: target.namespace,
        path: `/validate-${group.replaceAll(".", "-")}-v1alpha1-${kind.toLowerCase()}`,
        port: 443,
      },
    },
    // Ignore: an unavailable webhook must not block users' writes of KEDA objects.
    failurePolicy: "Ignore",
    rules: [{
      apiGroups: [group],
      apiVersions: ["v1alpha1"],
      operations: ["CREATE", "UPDATE"],
      resources: [plural],
    }],
    sideEffects: "None",
  };
}

/** KEDA's Services, Deployments, APIService and ValidatingWebhookConfiguration. */
export function kedaWorkloads(
  target: KedaTarget,
  components: Record<ScalerComponent, ComponentConfig>,
  images: ModuleImages,
): KubeObject[] {
  return [
    service(target, KEDA_DEPLOYMENTS.operator, [{
      name: "metricsservice",
      port: 9666,
      targetPort: 9666,
    }]),
    service(target, KEDA_DEPLOYMENTS.metricServer, [
      { name: "https", port: 443, targetPort: 6443 },
      { name: "metrics", port: 8080, targetPort: 8080 },
    ]),
    service(target, KEDA_DEPLOYMENTS.admissionWebhook, [{
      name: "https",
      port: 443,
      targetPort: 9443,
    }]),
    deployment(target, "operator", components.operator, images.kedaOperator),
    deployment(target, "metricServer", components.metricServer, images.kedaMetricsServer),
    deployment(
      target,
      "admissionWebhook",
      components.admissionWebhook,
      images.kedaAdmissionWebhooks,
    ),
    {
      apiVersion: "apiregistration.k8s.io/v1",
      kind: "APIService",
      metadata: kedaMeta(target, KEDA_CLUSTER_OBJECTS.apiService, false),
      spec: {
        group: "external.metrics.k8s.io",
        groupPriorityMinimum: 100,
        service: { name: KEDA_DEPLOYMENTS.metricServer, namespace: target.namespace, port: 443 },
        version: "v1beta1",
        versionPriority: 100,
      },
    },
    {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: kedaMeta(target, KEDA_CLUSTER_OBJECTS.webhook, false),
      webhooks: [
        webhook(target, "ScaledObject", "scaledobjects"),
        webhook(target, "ScaledJob", "scaledjobs"),
        webhook(target, "TriggerAuthentication", "triggerauthentications"),
        webhook(target, "ClusterTriggerAuthentication", "clustertriggerauthentications"),
        webhook(target, "CloudEventSource", "cloudeventsources", "eventing.keda.sh"),
        webhook(
          target,
          "ClusterCloudEventSource",
          "clustercloudeventsources",
          "eventing.keda.sh",
        ),
      ],
    },
  ];
}
