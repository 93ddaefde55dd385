/** The Serverless configuration check, the defaults shown in status, and the rendered objects. */
import assert from "node:assert/strict";
import { parseServerless, type ServerlessSpec } from "../../src/api/serverless.ts";
import { MANAGED_SELECTOR, OWNER_LABEL } from "../../src/reconcile/labels.ts";
import { reconcileServerless } from "../../src/reconcile/serverless/mod.ts";
import {
  checkConfiguration,
  configuredMessage,
  DEFAULT_EVENTING_ENDPOINT,
  DEFAULT_TRACING_ENDPOINT,
  type ServerlessSettings,
} from "../../src/reconcile/serverless/config.ts";
import {
  CONFIG_HASH_ANNOTATION,
  CONTROLLER_DEPLOYMENT,
  renderServerless,
} from "../../src/reconcile/serverless/render.ts";
import type { KubeObject } from "../../src/api/object.ts";
import {
  conditionOf,
  converge,
  FUNCTION_CRD_LIST,
  IMAGES,
  inputOf,
  serverless,
  statusOf,
  world,
} from "./serverless_fixtures.ts";

function spec(s: Record<string, unknown>): ServerlessSpec {
  const parsed = parseServerless(serverless(s));
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.value.spec;
}

function settings(s: Record<string, unknown> = {}): ServerlessSettings {
  const c = checkConfiguration(spec(s));
  if (!c.ok) throw new Error(JSON.stringify(c.errors));
  return c.settings;
}

function errorsOf(s: Record<string, unknown>): string[] {
  const c = checkConfiguration(spec(s));
  return c.ok ? [] : c.errors.map((e) => `${e.path}: ${e.message}`);
}

Deno.test("defaults: 5m, 10s, M, info, json and the in-cluster endpoints", () => {
  assert.deepEqual(settings(), {
    eventingEndpoint: DEFAULT_EVENTING_ENDPOINT,
    tracingEndpoint: DEFAULT_TRACING_ENDPOINT,
    functionRequeueDuration: "5m",
    healthzLivenessTimeout: "10s",
    defaultRuntimePodPreset: "M",
    logLevel: "info",
    logFormat: "json",
  });
});

Deno.test("the defaults are shown in status once configured", () => {
  const { world: w } = converge(world(serverless()));
  const status = w.object?.status as Record<string, string>;
  assert.equal(status.functionRequeueDuration, "5m");
  assert.equal(status.healthzLivenessTimeout, "10s");
  assert.equal(status.defaultRuntimePodPreset, "M");
  assert.equal(status.logLevel, "info");
  assert.equal(status.logFormat, "json");
  assert.equal(status.eventingEndpoint, DEFAULT_EVENTING_ENDPOINT);
  assert.equal(status.eventPublisherProxyURL, DEFAULT_EVENTING_ENDPOINT);
  assert.equal(status.tracingEndpoint, DEFAULT_TRACING_ENDPOINT);
  assert.equal(status.traceCollectorURL, DEFAULT_TRACING_ENDPOINT);
});

Deno.test("healthzLivenessTimeout accepts a bare number of seconds", () => {
  assert.equal(settings({ healthzLivenessTimeout: "30" }).healthzLivenessTimeout, "30s");
  assert.equal(settings({ healthzLivenessTimeout: "1m30s" }).healthzLivenessTimeout, "1m30s");
});

Deno.test("each bad value gives an error naming the field and the value", () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [
      { eventing: { endpoint: "ftp://x" } },
      /^spec\.eventing\.endpoint: "ftp:\/\/x" is not an absolute http\(s\) URL/,
    ],
    [
      { tracing: { endpoint: "/v1/traces" } },
      /^spec\.tracing\.endpoint: "\/v1\/traces" is not an absolute/,
    ],
    [{ tracing: { endpoint: " http://x" } }, /^spec\.tracing\.endpoint: " http:\/\/x" is not/],
    [
      { functionRequeueDuration: "5 minutes" },
      /^spec\.functionRequeueDuration: "5 minutes" is not a duration such as 300ms, 5m or 1h30m$/,
    ],
    [
      { functionRequeueDuration: "0s" },
      /^spec\.functionRequeueDuration: "0s" must be longer than zero$/,
    ],
    [
      { healthzLivenessTimeout: "ten" },
      /^spec\.healthzLivenessTimeout: "ten" is not a duration such as 10s or 1m, or a number of seconds/,
    ],
    [
      { healthzLivenessTimeout: "0" },
      /^spec\.healthzLivenessTimeout: "0" must be longer than zero$/,
    ],
    [
      { defaultRuntimePodPreset: "XXL" },
      /^spec\.defaultRuntimePodPreset: "XXL" is not one of XS, S, M, L, XL$/,
    ],
    [{ logLevel: "verbose" }, /^spec\.logLevel: "verbose" is not one of debug, info, warn/],
    [{ logFormat: "text" }, /^spec\.logFormat: "text" is not one of json, console$/],
  ];
  for (const [s, re] of cases) {
    const errs = errorsOf(s);
    assert.equal(errs.length, 1, `${JSON.stringify(s)}: ${errs}`);
    assert.match(errs[0], re);
  }
});

Deno.test("the Configured message says whether default or custom URLs are used", () => {
  assert.equal(
    configuredMessage(settings()),
    "Configured with default Publisher Proxy URL and default Trace Collector URL.",
  );
  assert.equal(
    configuredMessage(settings({ eventing: { endpoint: "https://events.example/publish" } })),
    "Configured with custom Publisher Proxy URL and default Trace Collector URL.",
  );
  assert.equal(
    configuredMessage(settings({ tracing: { endpoint: "http://otel.obs:4318/v1/traces" } })),
    "Configured with default Publisher Proxy URL and custom Trace Collector URL.",
  );
  const { plan } = converge(
    world(serverless({ tracing: { endpoint: "http://otel.obs:4318/v1/traces" } })),
  );
  assert.match(conditionOf(plan, "Configured")?.message ?? "", /custom Trace Collector URL/);
  assert.equal(statusOf(plan).traceCollectorURL, "http://otel.obs:4318/v1/traces");
});

function render(s: Record<string, unknown> = {}, namespace = "platform-system"): KubeObject[] {
  return renderServerless({
    namespace,
    owner: `${namespace}.default`,
    image: IMAGES.serverlessController,
    settings: settings(s),
    crds: FUNCTION_CRD_LIST,
  });
}

const find = (objs: KubeObject[], kind: string, name: string) =>
  objs.find((o) => o.kind === kind && o.metadata.name === name);

Deno.test("rendered: the controller Deployment, its ConfigMaps, RBAC, Service and the Function CRD", () => {
  const objs = render();
  assert.deepEqual(objs.map((o) => `${o.kind}/${o.metadata.name}`), [
    "CustomResourceDefinition/functions.serverless.platform-project.io",
    "ServiceAccount/serverless-controller-manager",
    "ClusterRole/serverless-manager-role",
    "ClusterRoleBinding/serverless-manager-rolebinding",
    "Role/serverless-leader-election-role",
    "RoleBinding/serverless-leader-election-rolebinding",
    "ConfigMap/serverless-config",
    "ConfigMap/serverless-log-config",
    "Service/serverless-controller-manager",
    "Deployment/serverless-ctrl-mngr",
  ]);
  const [key, value] = MANAGED_SELECTOR.split("=");
  for (const o of objs) {
    assert.equal(o.metadata.labels?.[key], value, `${o.kind} is labelled managed`);
    assert.equal(o.metadata.labels?.["operator.platform-project.io/module"], "serverless");
    assert.equal(o.metadata.labels?.[OWNER_LABEL], "platform-system.default");
    const clusterScoped = ["CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"]
      .includes(o.kind);
    assert.equal(o.metadata.namespace, clusterScoped ? undefined : "platform-system");
  }
  const crd = find(objs, "CustomResourceDefinition", "functions.serverless.platform-project.io")!;
  const crdSpec = crd.spec as {
    group: string;
    versions: { name: string; storage: boolean }[];
    names: { kind: string };
  };
  assert.equal(crdSpec.group, "serverless.platform-project.io");
  assert.deepEqual(crdSpec.versions.map((v) => [v.name, v.storage]), [["v1alpha2", true]]);
  assert.equal(crdSpec.names.kind, "Function");
  const binding = find(objs, "ClusterRoleBinding", "serverless-manager-rolebinding")!;
  assert.deepEqual((binding.subjects as unknown[])[0], {
    kind: "ServiceAccount",
    name: "serverless-controller-manager",
    namespace: "platform-system",
  });
});

Deno.test("rendered: settings reach the controller's configuration; a change rolls the Deployment", () => {
  const custom = render({
    functionRequeueDuration: "1h30m",
    logLevel: "debug",
    defaultRuntimePodPreset: "XL",
  });
  const config = find(custom, "ConfigMap", "serverless-config")!.data as Record<string, string>;
  assert.match(config["function-config.yaml"], /^functionRequeueDuration: "1h30m"$/m);
  assert.match(config["function-config.yaml"], /^healthzLivenessTimeout: "10s"$/m);
  assert.match(config["function-config.yaml"], /defaultPreset: "XL"/);
  assert.match(
    config["function-config.yaml"],
    new RegExp(`functionPublisherProxyAddress: "${DEFAULT_EVENTING_ENDPOINT}"`),
  );
  const log = find(custom, "ConfigMap", "serverless-log-config")!.data as Record<string, string>;
  assert.equal(log["log-config.yaml"], 'logLevel: "debug"\nlogFormat: "json"\n');
  const hash = (objs: KubeObject[]) => {
    const dep = find(objs, "Deployment", CONTROLLER_DEPLOYMENT)!;
    return (dep.spec as { template: { metadata: { annotations: Record<string, string> } } })
      .template.metadata
      .annotations[CONFIG_HASH_ANNOTATION];
  };
  assert.match(hash(custom), /^[0-9a-f]{16}$/);
  assert.equal(hash(render()), hash(render()), "same settings, same hash");
  assert.notEqual(hash(custom), hash(render()), "other settings, other hash");
  assert.notEqual(hash(render({ logFormat: "console" })), hash(render()));
});

Deno.test("a changed spec updates the installation and prunes what is no longer rendered", () => {
  const { world: w } = converge(world(serverless()));
  const stray = {
    ...w.installed.find((o) => o.kind === "ConfigMap")!,
    metadata: {
      ...w.installed.find((o) => o.kind === "ConfigMap")!.metadata,
      name: "serverless-old",
    },
  };
  const changed = {
    ...w,
    object: {
      ...w.object!,
      spec: { logLevel: "debug" },
      metadata: { ...w.object!.metadata, generation: 2 },
    },
    installed: [...w.installed, stray],
  };
  const plan = reconcileServerless(inputOf(changed));
  assert.deepEqual(plan.apply.map((o) => o.metadata.name).sort(), [
    "serverless-ctrl-mngr",
    "serverless-log-config",
  ]);
  assert.deepEqual(plan.delete, [{
    apiVersion: "v1",
    kind: "ConfigMap",
    namespace: "platform-system",
    name: "serverless-old",
  }]);
  assert.equal(statusOf(plan).state, "Processing");
  assert.match(
    conditionOf(plan, "Installed")?.message ?? "",
    /^Updating the installation: applying ConfigMap platform-system\/serverless-log-config, Deployment platform-system\/serverless-ctrl-mngr; removing ConfigMap platform-system\/serverless-old\.$/,
  );
  const after = converge(changed).world;
  assert.equal((after.object?.status as { logLevel: string }).logLevel, "debug");
  assert.ok(!after.installed.some((o) => o.metadata.name === "serverless-old"));
});

Deno.test("objects go into the namespace of the served Serverless", () => {
  const { world: w } = converge(world(serverless({}, { namespace: "team-a" })));
  const dep = w.installed.find((o) => o.kind === "Deployment")!;
  assert.equal(dep.metadata.namespace, "team-a");
  assert.equal(dep.metadata.labels?.[OWNER_LABEL], "team-a.default");
});
