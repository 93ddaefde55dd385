/** The KEDA objects the Scaler installs, and how each spec field reaches them. */
import assert from "node:assert/strict";
import { CONDITION_MESSAGE_MAX } from "../../src/api/message.ts";
import { parseScaler } from "../../src/api/scaler.ts";
import { kedaConfig } from "../../src/reconcile/scaler/config.ts";
import { KEDA_VERSION } from "../../src/reconcile/scaler/names.ts";
import { renderKeda } from "../../src/reconcile/scaler/render.ts";
import { MANAGED_SELECTOR, OWNER_LABEL } from "../../src/reconcile/labels.ts";
import { reconcileScaler } from "../../src/reconcile/scaler/mod.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { conditionOf, IMAGES, inputOf, installed, scaler, statusOf } from "./scaler_fixtures.ts";
import { KEDA_CRD_LIST } from "./serverless_fixtures.ts";
import { rolledOut } from "./module_fixtures.ts";

function render(spec: Record<string, unknown> = {}, namespace = "platform-system"): KubeObject[] {
  const parsed = parseScaler(scaler(spec));
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  const config = kedaConfig(parsed.value.spec);
  if (!config.ok) throw new Error(JSON.stringify(config.errors));
  return renderKeda(
    { namespace, owner: `${namespace}.default` },
    config.components,
    IMAGES,
    KEDA_CRD_LIST,
  );
}

/** The validation message a spec gets, or undefined when it is valid. */
function invalid(spec: Record<string, unknown>): string | undefined {
  const w = installed();
  const object = { ...w.object!, spec, metadata: { ...w.object!.metadata, generation: 2 } };
  const plan = reconcileScaler(inputOf({ ...w, object }));
  const c = conditionOf(plan, "Installed");
  return c?.reason === "ValidationErr" ? c.message : undefined;
}

interface Container {
  name: string;
  image: string;
  args: string[];
  env: Record<string, unknown>[];
  resources: { limits: Record<string, string>; requests: Record<string, string> };
}
interface Pod {
  metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
  spec: { containers: Container[] };
}

function pod(objs: KubeObject[], name: string): Pod {
  const dep = objs.find((o) => o.kind === "Deployment" && o.metadata.name === name);
  assert.ok(dep, `no Deployment ${name}`);
  return (dep.spec as { template: Pod }).template;
}

const container = (objs: KubeObject[], name: string) => pod(objs, name).spec.containers[0];
const OP = "keda-operator";
const MS = "keda-operator-metrics-apiserver";
const WH = "keda-admission-webhooks";

Deno.test("KEDA objects: Deployments, ServiceAccounts, RBAC, Services, APIService, webhook, CRDs", () => {
  const objs = render();
  const names = objs.map((o) => `${o.kind}/${o.metadata.name}`);
  for (
    const n of [
      "Deployment/keda-operator",
      "Deployment/keda-operator-metrics-apiserver",
      "Deployment/keda-admission-webhooks",
      "ServiceAccount/keda-operator",
      "ServiceAccount/keda-metrics-server",
      "ServiceAccount/keda-webhook",
      "ClusterRole/keda-operator",
      "ClusterRoleBinding/keda-operator",
      "Role/keda-operator",
      "RoleBinding/keda-operator",
      "Service/keda-operator",
      "Service/keda-operator-metrics-apiserver",
      "Service/keda-admission-webhooks",
      "APIService/v1beta1.external.metrics.k8s.io",
      "ValidatingWebhookConfiguration/keda-admission",
      "CustomResourceDefinition/scaledobjects.keda.sh",
      "CustomResourceDefinition/scaledjobs.keda.sh",
      "CustomResourceDefinition/triggerauthentications.keda.sh",
      "CustomResourceDefinition/clustertriggerauthentications.keda.sh",
    ]
  ) assert.ok(names.includes(n), n);
  assert.equal(new Set(names).size, names.length, "no object twice");
  const [key, value] = MANAGED_SELECTOR.split("=");
  const namespaced = new Set(["Deployment", "ServiceAccount", "Service", "Role", "RoleBinding"]);
  for (const o of objs) {
    assert.equal(o.metadata.labels?.[key], value);
    assert.equal(o.metadata.labels?.["operator.platform-project.io/module"], "keda");
    assert.equal(o.metadata.labels?.[OWNER_LABEL], "platform-system.default");
    assert.equal(
      o.metadata.namespace,
      namespaced.has(o.kind) ? "platform-system" : undefined,
      `${o.kind} ${o.metadata.name}`,
    );
  }
  const crd = objs.find((o) => o.metadata.name === "scaledobjects.keda.sh")!.spec as {
    group: string;
    versions: { name: string }[];
    scope: string;
  };
  assert.deepEqual([crd.group, crd.versions[0].name, crd.scope], [
    "keda.sh",
    "v1alpha1",
    "Namespaced",
  ]);
  const api = objs.find((o) => o.kind === "APIService")!.spec as {
    service: Record<string, unknown>;
  };
  assert.deepEqual(api.service, { name: MS, namespace: "platform-system", port: 443 });
  const dep = objs.find((o) => o.kind === "Deployment" && o.metadata.name === OP)!;
  assert.equal(dep.metadata.labels?.["app.kubernetes.io/version"], KEDA_VERSION);
  assert.equal(container(objs, OP).image, IMAGES.kedaOperator);
  assert.equal(container(objs, MS).image, IMAGES.kedaMetricsServer);
  assert.equal(container(objs, WH).image, IMAGES.kedaAdmissionWebhooks);
});

Deno.test("kedaVersion is what the observed keda-operator Deployment reports", () => {
  const w = installed();
  const plan = reconcileScaler(inputOf(w));
  assert.equal(statusOf(plan).kedaVersion, KEDA_VERSION);
  const older = w.installed.map((o) =>
    o.metadata.name === OP && o.kind === "Deployment"
      ? {
        ...o,
        metadata: {
          ...o.metadata,
          labels: { ...o.metadata.labels, "app.kubernetes.io/version": "2.19.0" },
        },
      }
      : o
  );
  const upgrading = reconcileScaler(inputOf({ ...w, installed: older }));
  assert.equal(statusOf(upgrading).kedaVersion, "2.19.0", "until the upgrade is applied");
  assert.ok(upgrading.apply.some((o) => o.metadata.name === OP), "the pinned version is applied");
});

Deno.test("kedaVersion moves to a new version only once KEDA's Pods run it", () => {
  const w = installed();
  // The new version's template is applied (generation 2) and its Pods are not all up yet.
  const rolling = (status: Record<string, unknown>) =>
    w.installed.map((o) =>
      o.metadata.name === OP && o.kind === "Deployment"
        ? {
          ...o,
          metadata: {
            ...o.metadata,
            generation: 2,
            labels: { ...o.metadata.labels, "app.kubernetes.io/version": "2.21.0" },
          },
          status,
        }
        : o
    );
  const shownOld = {
    ...w.object!,
    status: { ...(w.object!.status as object), kedaVersion: "2.20.0" },
  };
  const { kedaVersion: _, ...noVersion } = w.object!.status as Record<string, unknown>;
  const shownNone = { ...w.object!, status: noVersion };
  const midway = [
    { ...rolledOut(1), observedGeneration: 1 },
    { ...rolledOut(2), replicas: 2, updatedReplicas: 1 },
    { ...rolledOut(2), unavailableReplicas: 1 },
  ];
  for (const status of midway) {
    const plan = reconcileScaler(inputOf({ ...w, object: shownOld, installed: rolling(status) }));
    assert.equal(statusOf(plan).kedaVersion, "2.20.0", JSON.stringify(status));
    const fresh = reconcileScaler(inputOf({ ...w, object: shownNone, installed: rolling(status) }));
    assert.equal(statusOf(fresh).kedaVersion, undefined, "nothing shown, nothing confirmed");
  }
  const done = reconcileScaler(
    inputOf({ ...w, object: shownOld, installed: rolling(rolledOut(2)) }),
  );
  assert.equal(statusOf(done).kedaVersion, "2.21.0");
});

Deno.test("logging: defaults, one field at a time, text as console", () => {
  const zap = (objs: KubeObject[], name: string) =>
    container(objs, name).args.filter((a) => a.startsWith("--zap-"));
  const defaults = ["--zap-log-level=info", "--zap-encoder=console", "--zap-time-encoding=rfc3339"];
  for (const n of [OP, MS, WH]) assert.deepEqual(zap(render(), n), defaults);
  const objs = render({
    logging: {
      operator: { level: "debug" },
      metricServer: { format: "text" },
      admissionWebhook: { format: "json", timeEncoding: "epoch" },
    },
  });
  assert.deepEqual(zap(objs, OP), [
    "--zap-log-level=debug",
    "--zap-encoder=console",
    "--zap-time-encoding=rfc3339",
  ]);
  assert.deepEqual(zap(objs, MS), defaults);
  assert.deepEqual(zap(objs, WH), [
    "--zap-log-level=info",
    "--zap-encoder=json",
    "--zap-time-encoding=epoch",
  ]);
});

Deno.test("resources: KEDA's defaults, per-quantity overrides in canonical form", () => {
  assert.deepEqual(container(render(), OP).resources, {
    limits: { cpu: "1", memory: "1000Mi" },
    requests: { cpu: "100m", memory: "100Mi" },
  });
  const objs = render({
    resources: {
      operator: { limits: { cpu: "2000m", memory: "1.5Gi" }, requests: { cpu: "0.5" } },
    },
  });
  assert.deepEqual(container(objs, OP).resources, {
    limits: { cpu: "2", memory: "1536Mi" },
    requests: { cpu: "500m", memory: "100Mi" },
  });
  assert.deepEqual(
    container(objs, MS).resources.limits,
    { cpu: "1", memory: "1000Mi" },
    "other components keep theirs",
  );
  const low = render({ resources: { metricServer: { limits: { memory: "64Mi" } } } });
  assert.equal(
    container(low, MS).resources.requests.memory,
    "64Mi",
    "a limit below the default request lowers it",
  );
});

Deno.test("env: merged into the operator and metrics server, by name, keeping what KEDA needs", () => {
  const objs = render({
    env: [
      { name: "KEDA_HTTP_MIN_TLS_VERSION", value: "TLS13" },
      { name: "EXTRA", valueFrom: { secretKeyRef: { name: "s", key: "k" } } },
      { name: "EMPTY", value: "" },
      {
        name: "LIMIT",
        valueFrom: { resourceFieldRef: { resource: "limits.memory", divisor: "1024Ki" } },
      },
    ],
  });
  const env = container(objs, OP).env;
  const names = env.map((e) => e.name);
  assert.deepEqual(names.slice(0, 6), [
    "WATCH_NAMESPACE",
    "POD_NAME",
    "POD_NAMESPACE",
    "OPERATOR_NAME",
    "KEDA_HTTP_DEFAULT_TIMEOUT",
    "KEDA_HTTP_MIN_TLS_VERSION",
  ]);
  assert.deepEqual(
    env[5],
    { name: "KEDA_HTTP_MIN_TLS_VERSION", value: "TLS13" },
    "replaced in place",
  );
  assert.deepEqual(env.slice(6), [
    { name: "EXTRA", valueFrom: { secretKeyRef: { name: "s", key: "k" } } },
    { name: "EMPTY" },
    {
      name: "LIMIT",
      valueFrom: { resourceFieldRef: { resource: "limits.memory", divisor: "1Mi" } },
    },
  ]);
  assert.deepEqual(
    env[0],
    { name: "WATCH_NAMESPACE" },
    "an empty value is left out, as the API server does",
  );
  assert.ok(container(objs, MS).env.some((e) => e.name === "EXTRA"));
  assert.ok(
    !container(objs, WH).env.some((e) => e.name === "EXTRA"),
    "the admission webhooks keep their own env",
  );
});

Deno.test("env: a protected entry is kept as KEDA needs it, and the Scaler shows Warning", () => {
  const w = installed({ env: [{ name: "POD_NAME", value: "x" }] });
  const plan = reconcileScaler(inputOf(w));
  assert.equal(statusOf(plan).state, "Warning");
  assert.match(
    conditionOf(plan, "Installed")!.message,
    /env POD_NAME was not changed: KEDA needs the value the operator sets/,
  );
  const podName = container(w.installed, OP).env.find((e) => e.name === "POD_NAME");
  assert.deepEqual(podName, {
    name: "POD_NAME",
    valueFrom: { fieldRef: { fieldPath: "metadata.name", apiVersion: "v1" } },
  });
});

Deno.test("pod annotations and sidecar injection per component", () => {
  const objs = render({
    podAnnotations: { operator: { "prometheus.io/scrape": "true" }, admissionWebhook: { a: "b" } },
    istio: {
      operator: { enabledSidecarInjection: true },
      metricServer: { enabledSidecarInjection: true },
    },
  });
  assert.deepEqual(pod(objs, OP).metadata.annotations, { "prometheus.io/scrape": "true" });
  assert.deepEqual(pod(objs, WH).metadata.annotations, { a: "b" });
  assert.deepEqual(pod(objs, MS).metadata.annotations, {
    "traffic.sidecar.istio.io/excludeInboundPorts": "6443",
  });
  assert.equal(pod(objs, OP).metadata.labels["sidecar.istio.io/inject"], "true");
  assert.equal(pod(objs, MS).metadata.labels["sidecar.istio.io/inject"], "true");
  assert.equal(
    pod(objs, WH).metadata.labels["sidecar.istio.io/inject"],
    "false",
    "never for the webhooks",
  );
  const off = render();
  for (const n of [OP, MS, WH]) {
    assert.equal(pod(off, n).metadata.labels["sidecar.istio.io/inject"], "false");
    assert.equal(pod(off, n).metadata.annotations, undefined);
  }
});

Deno.test("ValidationErr names the field for each spec that cannot be applied", () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [
      { resources: { operator: { limits: { cpu: "500m" }, requests: { cpu: "1" } } } },
      /spec\.resources\.operator\.requests\.cpu: "1" is above the limit 500m/,
    ],
    [
      { resources: { admissionWebhook: { requests: { memory: "-1Mi" } } } },
      /spec\.resources\.admissionWebhook\.requests\.memory: "-1Mi" must not be negative/,
    ],
    [
      { env: [{ name: "A", value: "1", valueFrom: { fieldRef: { fieldPath: "x" } } }] },
      /spec\.env\[0\]: "A" has both value and valueFrom/,
    ],
    [
      { env: [{ name: "A", valueFrom: {} }] },
      /spec\.env\[0\]\.valueFrom: must name exactly one source, not 0/,
    ],
    [
      { env: [{ name: "A" }, { name: "A", value: "2" }] },
      /spec\.env\[1\]\.name: "A" is listed more than once/,
    ],
    [{ env: [{ name: "A=B" }] }, /spec\.env\[0\]\.name: "A=B" is not a valid variable name/],
    [
      { podAnnotations: { operator: { "bad key!": "x" } } },
      /spec\.podAnnotations\.operator\["bad key!"\]: is not a valid annotation key/,
    ],
    [
      { podAnnotations: { metricServer: { "a/b/c": "x" } } },
      /spec\.podAnnotations\.metricServer\["a\/b\/c"\]: is not a valid annotation key/,
    ],
  ];
  for (const [spec, re] of cases) {
    const msg = invalid(spec);
    assert.ok(msg, `${JSON.stringify(spec)} should be invalid`);
    assert.match(msg, /^Invalid configuration: /);
    assert.match(msg, re);
  }
  assert.equal(
    invalid({ podAnnotations: { operator: { "example.com/ok-key_1.x": "v" } } }),
    undefined,
  );
});

Deno.test("a spec field this operator does not know (a newer CRD) is a ValidationErr, never ignored", () => {
  const w = installed();
  const object = { ...w.object!, spec: { resources: { operator: { limits: { gpu: "1" } } } } };
  const plan = reconcileScaler(inputOf({ ...w, object }));
  assert.equal(
    conditionOf(plan, "Installed")!.message,
    "The Scaler object is invalid: spec.resources.operator.limits.gpu: unknown field; did you mean cpu? (this operator does not know it: is the CRD newer than the operator?)",
  );
  assert.deepEqual([plan.apply, plan.delete], [[], []]);
});

Deno.test("a spec the schema rejects is a ValidationErr naming the field, and changes nothing", () => {
  const w = installed();
  const object = { ...w.object!, spec: { resources: { operator: { limits: { cpu: "lots" } } } } };
  const plan = reconcileScaler(inputOf({ ...w, object }));
  assert.equal(statusOf(plan).state, "Error");
  assert.match(
    conditionOf(plan, "Installed")!.message,
    /^The Scaler object is invalid: spec\.resources\.operator\.limits\.cpu: "lots" is not a Kubernetes quantity/,
  );
  assert.deepEqual([plan.apply, plan.delete], [[], []]);
});

Deno.test("thousands of problems: the message fits the CRD's limit and counts the rest", () => {
  const check = (message: string | undefined, head: RegExp, problems: number) => {
    assert.ok(message);
    assert.match(message, head);
    assert.ok(message.length <= CONDITION_MESSAGE_MAX, String(message.length));
    const left = Number(/; and (\d+) more problems$/.exec(message)?.[1]);
    assert.equal(message.split("; ").length - 1 + left, problems, message.slice(-100));
  };
  // The operator's own checks: each variable name with "=" is a problem.
  const env = Array.from({ length: 2000 }, (_, i) => ({ name: `VAR_${i}=x`, value: "v" }));
  check(invalid({ env }), /^Invalid configuration: spec\.env\[0\]\.name: /, 2000);
  // The schema's: each env entry without a name.
  const w = installed();
  const object = { ...w.object!, spec: { env: Array.from({ length: 2000 }, () => ({})) } };
  const plan = reconcileScaler(inputOf({ ...w, object }));
  check(
    conditionOf(plan, "Installed")!.message,
    /^The Scaler object is invalid: spec\.env\[0\]\.name: /,
    2000,
  );
});
