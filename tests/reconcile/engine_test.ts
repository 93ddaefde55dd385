/**
 * The global rate limit engine's reducer (src/reconcile/engine/): every shape of the Redis Secret
 * (plain, password, a user and a password with a colon, TLS with a CA, TLS with a client
 * certificate, Sentinel, Cluster), the objects exactly, a missing or bad Secret changing nothing,
 * the Pod template's digest following the Secret's version, and deletion limited to the engine's
 * own labelled objects.
 */
import assert from "node:assert/strict";
import {
  DEFAULT_ENGINE_RESOURCES,
  engineInstall,
  type EngineSettings,
  PASSWORD_ENV,
  readRedisSecret,
  reconcileEngine,
  REDIS_TLS_DIR,
  secretDigest,
  XDS_TLS_DIR,
  XDS_TLS_SECRET_DIGEST_ANNOTATION,
  xdsTlsSecretDigest,
} from "../../src/reconcile/engine/mod.ts";
import type { KubeObject } from "../../src/api/object.ts";
import {
  GLOBAL_ENGINE_LABELS,
  REDIS_SECRET_DIGEST_ANNOTATION,
} from "../../src/api/global_engine.ts";
import { DEFAULT_ENGINE_IMAGE, RATELIMIT_ENGINE_VERSION } from "../../src/api/images.ts";

const SETTINGS: EngineSettings = {
  secret: { namespace: "platform-ratelimit", name: "redis" },
  image: DEFAULT_ENGINE_IMAGE,
  replicas: 2,
  resources: DEFAULT_ENGINE_RESOURCES,
  operatorNamespace: "platform-system",
};

const CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const KEY = "-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----\n";

function b64(text: string): string {
  return btoa(String.fromCharCode(...new TextEncoder().encode(text)));
}

function secret(data: Record<string, string>, resourceVersion = "100"): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "redis", namespace: "platform-ratelimit", uid: "u1", resourceVersion },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
  };
}

function only(objects: KubeObject[], kind: string): KubeObject {
  const found = objects.filter((o) => o.kind === kind);
  assert.equal(found.length, 1, kind);
  return found[0];
}

type Container = {
  env: Record<string, unknown>[];
  volumeMounts?: unknown[];
};
type PodSpec = { containers: Container[]; volumes?: unknown[] };

function podSpec(plan: { apply: KubeObject[] }): PodSpec {
  const d = only(plan.apply, "Deployment") as { spec?: { template: { spec: PodSpec } } };
  return d.spec!.template.spec;
}

/** The engine Pod template's annotations. */
function templateAnnotations(plan: { apply: KubeObject[] }): Record<string, string> {
  return (only(plan.apply, "Deployment") as {
    spec?: { template: { metadata: { annotations: Record<string, string> } } };
  }).spec!.template.metadata.annotations;
}

/** The env as name -> value (or its source), in order. */
function envOf(plan: { apply: KubeObject[] }): [string, unknown][] {
  return podSpec(plan).containers[0].env.map((e) => [e.name as string, e.value ?? e.valueFrom]);
}

/** The env every shape has, before the Redis-specific part. */
const COMMON: [string, unknown][] = [
  ["LOG_FORMAT", "json"],
  ["USE_STATSD", "false"],
  ["USE_PROMETHEUS", "true"],
  ["PROMETHEUS_ADDR", ":9090"],
  ["PORT", "8080"],
  ["GRPC_PORT", "8081"],
  ["DEBUG_PORT", "6070"],
  ["CONFIG_TYPE", "GRPC_XDS_SOTW"],
  ["CONFIG_GRPC_XDS_SERVER_URL", "platform-operator-xds.platform-system.svc:18001"],
  ["CONFIG_GRPC_XDS_NODE_ID", { fieldRef: { fieldPath: "metadata.name" } }],
  ["XDS_CLIENT_BACKOFF_INITIAL_INTERVAL", "1s"],
  ["FORCE_START_WITHOUT_INITIAL_CONFIG", "true"],
  ["REDIS_SOCKET_TYPE", "tcp"],
];
const HEALTH: [string, unknown] = ["REDIS_HEALTH_CHECK_ACTIVE_CONNECTION", "true"];
const password = (key: string) => ({ secretKeyRef: { name: "redis", key } });

Deno.test("a plain Secret: the engine's five objects, exactly", () => {
  const plan = reconcileEngine({
    settings: SETTINGS,
    secret: secret({ address: "redis.platform-ratelimit.svc:6379" }),
    observed: [],
  });
  assert.deepEqual(plan.delete, []);
  const labels = { ...GLOBAL_ENGINE_LABELS };
  const metadata = { name: "ratelimit-engine", namespace: "platform-ratelimit", labels };
  assert.deepEqual(plan.apply.map((o) => o.kind), [
    "ServiceAccount",
    "Deployment",
    "Service",
    "PodDisruptionBudget",
    "NetworkPolicy",
  ]);
  assert.deepEqual(plan.apply[0], {
    apiVersion: "v1",
    kind: "ServiceAccount",
    metadata,
    automountServiceAccountToken: false,
  });
  assert.deepEqual(plan.apply[1], {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata,
    spec: {
      replicas: 2,
      revisionHistoryLimit: 3,
      selector: { matchLabels: labels },
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template: {
        metadata: {
          labels,
          annotations: {
            [REDIS_SECRET_DIGEST_ANNOTATION]: secretDigest("100"),
            "sidecar.istio.io/inject": "false",
            "kubectl.kubernetes.io/default-container": "ratelimit",
          },
        },
        spec: {
          serviceAccountName: "ratelimit-engine",
          automountServiceAccountToken: false,
          terminationGracePeriodSeconds: 30,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 65532,
            runAsGroup: 65532,
            fsGroup: 65532,
            seccompProfile: { type: "RuntimeDefault" },
          },
          affinity: {
            podAntiAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [{
                weight: 100,
                podAffinityTerm: {
                  topologyKey: "kubernetes.io/hostname",
                  labelSelector: { matchLabels: labels },
                },
              }],
            },
          },
          containers: [{
            name: "ratelimit",
            image: `ghcr.io/platform-project/ratelimit-engine:${RATELIMIT_ENGINE_VERSION.slice(1)}`,
            imagePullPolicy: "IfNotPresent",
            env: [
              ...COMMON.map(([name, v]) =>
                typeof v === "string" ? { name, value: v } : { name, valueFrom: v }
              ),
              { name: "REDIS_TYPE", value: "SINGLE" },
              { name: "REDIS_URL", value: "redis.platform-ratelimit.svc:6379" },
              { name: "REDIS_HEALTH_CHECK_ACTIVE_CONNECTION", value: "true" },
            ],
            ports: [
              { name: "grpc", containerPort: 8081, protocol: "TCP" },
              { name: "http", containerPort: 8080, protocol: "TCP" },
              { name: "debug", containerPort: 6070, protocol: "TCP" },
              { name: "metrics", containerPort: 9090, protocol: "TCP" },
            ],
            readinessProbe: {
              httpGet: { path: "/healthcheck", port: "http" },
              periodSeconds: 5,
              timeoutSeconds: 2,
              failureThreshold: 2,
            },
            livenessProbe: {
              tcpSocket: { port: "http" },
              initialDelaySeconds: 5,
              periodSeconds: 10,
              timeoutSeconds: 2,
              failureThreshold: 3,
            },
            resources: {
              requests: { cpu: "100m", memory: "64Mi" },
              limits: { cpu: "1", memory: "256Mi" },
            },
            securityContext: {
              allowPrivilegeEscalation: false,
              readOnlyRootFilesystem: true,
              runAsNonRoot: true,
              capabilities: { drop: ["ALL"] },
              seccompProfile: { type: "RuntimeDefault" },
            },
          }],
        },
      },
    },
  });
  assert.deepEqual(plan.apply[2], {
    apiVersion: "v1",
    kind: "Service",
    metadata,
    spec: {
      type: "ClusterIP",
      selector: labels,
      ports: [
        { name: "grpc", port: 8081, targetPort: "grpc", protocol: "TCP" },
        { name: "http-metrics", port: 9090, targetPort: "metrics", protocol: "TCP" },
      ],
    },
  });
  assert.deepEqual(plan.apply[3], {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata,
    spec: { maxUnavailable: 1, selector: { matchLabels: labels } },
  });
  assert.deepEqual(plan.apply[4], {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata,
    spec: {
      podSelector: { matchLabels: labels },
      policyTypes: ["Ingress"],
      ingress: [
        { ports: [{ port: 8081, protocol: "TCP" }, { port: 9090, protocol: "TCP" }] },
        {
          from: [{
            namespaceSelector: {
              matchLabels: { "kubernetes.io/metadata.name": "platform-system" },
            },
            podSelector: { matchLabels: { "app.kubernetes.io/name": "platform-operator" } },
          }],
          ports: [{ port: 6070, protocol: "TCP" }, { port: 8080, protocol: "TCP" }],
        },
      ],
    },
  });
  assert.deepEqual(plan.events.map((e) => [e.type, e.reason]), [["Normal", "EngineConfigured"]]);
  assert.match(
    plan.events[0].message,
    /Redis redis\.platform-ratelimit\.svc:6379 \(single, no password, no TLS\)/,
  );
  assert.equal(plan.status, undefined);
  assert.deepEqual(engineInstall(SETTINGS, secret({ address: "r:6379" })), {
    state: "Installed",
    problems: [],
  });
});

Deno.test("a password: REDIS_AUTH is always user:password, the password by secretKeyRef", () => {
  const plan = reconcileEngine({
    settings: SETTINGS,
    secret: secret({ address: "r:6379", password: "s3cret" }),
    observed: [],
  });
  assert.deepEqual(envOf(plan), [
    ...COMMON,
    ["REDIS_TYPE", "SINGLE"],
    ["REDIS_URL", "r:6379"],
    HEALTH,
    [PASSWORD_ENV, password("password")],
    ["REDIS_AUTH", `default:$(${PASSWORD_ENV})`],
  ]);
  // The password is nowhere in what the operator writes.
  assert.ok(!JSON.stringify(plan).includes("s3cret"));
});

Deno.test("a user and a password with a colon: the user literal, the password whole", () => {
  const plan = reconcileEngine({
    settings: SETTINGS,
    secret: secret({ address: "r:6379", username: "rl$(X)", password: "pa:ss" }),
    observed: [],
  });
  const env = Object.fromEntries(envOf(plan));
  // `$` doubled: Kubernetes would otherwise expand $(X) in the user name.
  assert.equal(env.REDIS_AUTH, `rl$$(X):$(${PASSWORD_ENV})`);
  assert.deepEqual(env[PASSWORD_ENV], password("password"));
  assert.ok(!JSON.stringify(plan).includes("pa:ss"));
});

Deno.test("TLS with a CA: REDIS_TLS, the CA file from a Secret volume", () => {
  const plan = reconcileEngine({
    settings: SETTINGS,
    secret: secret({ address: "r:6380", tls: "true", "ca.crt": CA }),
    observed: [],
  });
  assert.deepEqual(envOf(plan).slice(COMMON.length), [
    ["REDIS_TYPE", "SINGLE"],
    ["REDIS_URL", "r:6380"],
    HEALTH,
    ["REDIS_TLS", "true"],
    ["REDIS_TLS_CACERT", `${REDIS_TLS_DIR}/ca.crt`],
  ]);
  const pod = podSpec(plan);
  assert.deepEqual(pod.containers[0].volumeMounts, [
    { name: "redis-tls", mountPath: REDIS_TLS_DIR, readOnly: true },
  ]);
  assert.deepEqual(pod.volumes, [{
    name: "redis-tls",
    secret: { secretName: "redis", defaultMode: 0o440, items: [{ key: "ca.crt", path: "ca.crt" }] },
  }]);
  assert.ok(!JSON.stringify(plan).includes("MIIB"));
});

Deno.test("TLS with a client certificate: certificate and key files, no CA", () => {
  const plan = reconcileEngine({
    settings: SETTINGS,
    secret: secret({ address: "r:6380", tls: "true", "tls.crt": CA, "tls.key": KEY }),
    observed: [],
  });
  assert.deepEqual(envOf(plan).slice(COMMON.length + 3), [
    ["REDIS_TLS", "true"],
    ["REDIS_TLS_CLIENT_CERT", `${REDIS_TLS_DIR}/tls.crt`],
    ["REDIS_TLS_CLIENT_KEY", `${REDIS_TLS_DIR}/tls.key`],
  ]);
  assert.deepEqual(podSpec(plan).volumes, [{
    name: "redis-tls",
    secret: {
      secretName: "redis",
      defaultMode: 0o440,
      items: [{ key: "tls.crt", path: "tls.crt" }, { key: "tls.key", path: "tls.key" }],
    },
  }]);
  // TLS without any file: the image's roots, no volume.
  const bare = reconcileEngine({
    settings: SETTINGS,
    secret: secret({ address: "r:6380", tls: "true" }),
    observed: [],
  });
  assert.equal(podSpec(bare).volumes, undefined);
  assert.equal(podSpec(bare).containers[0].volumeMounts, undefined);
});

Deno.test("Sentinel: the master name and Sentinels, both passwords by secretKeyRef", () => {
  const plan = reconcileEngine({
    settings: SETTINGS,
    secret: secret({
      address: "mymaster,s1:26379,s2:26379",
      type: "sentinel",
      password: "p",
      sentinelPassword: "q",
    }),
    observed: [],
  });
  assert.deepEqual(envOf(plan).slice(COMMON.length), [
    ["REDIS_TYPE", "SENTINEL"],
    ["REDIS_URL", "mymaster,s1:26379,s2:26379"],
    HEALTH,
    [PASSWORD_ENV, password("password")],
    ["REDIS_AUTH", `default:$(${PASSWORD_ENV})`],
    ["REDIS_SENTINEL_AUTH", password("sentinelPassword")],
  ]);
});

Deno.test("Cluster: the nodes and the pipeline window the engine requires", () => {
  const plan = reconcileEngine({
    settings: SETTINGS,
    secret: secret({ address: "n1:6379,n2:6379,n3:6379", type: "cluster" }),
    observed: [],
  });
  assert.deepEqual(envOf(plan).slice(COMMON.length), [
    ["REDIS_TYPE", "CLUSTER"],
    ["REDIS_URL", "n1:6379,n2:6379,n3:6379"],
    ["REDIS_PIPELINE_WINDOW", "150us"],
    HEALTH,
  ]);
});

/** Objects as a running engine has them, one of each kind, from a good Secret. */
function running(): KubeObject[] {
  return reconcileEngine({
    settings: SETTINGS,
    secret: secret({ address: "r:6379" }),
    observed: [],
  }).apply;
}

const BAD: [string, Record<string, string>, RegExp][] = [
  ["no address", { password: "hunter2x" }, /address is missing/],
  [
    "an unknown type",
    { address: "r:6379", type: "ring" },
    /type "ring" is not one of single, sentinel, cluster/,
  ],
  [
    "half a client certificate",
    { address: "r:6379", tls: "true", "tls.crt": CA },
    /half a client certificate: tls.crt without tls.key/,
  ],
  [
    "a key without its certificate",
    { address: "r:6379", tls: "true", "tls.key": KEY },
    /half a client certificate: tls.key without tls.crt/,
  ],
  ["a CA without TLS", { address: "r:6379", "ca.crt": CA }, /ca.crt given without tls: "true"/],
  [
    "tls neither true nor false",
    { address: "r:6379", tls: "yes" },
    /tls "yes" is not "true" or "false"/,
  ],
  ["two addresses for single", { address: "a:1,b:2" }, /is not one host:port/],
  ["no port", { address: "redis" }, /is not one host:port/],
  ["a port out of range", { address: "r:70000" }, /is not one host:port/],
  [
    "sentinel without sentinels",
    { address: "mymaster", type: "sentinel" },
    /<master name>,<sentinel host:port>/,
  ],
  [
    "a user with a colon",
    { address: "r:6379", username: "a:b", password: "hunter2x" },
    /username contains ":"/,
  ],
  [
    "a user without a password",
    { address: "r:6379", username: "rl" },
    /username is given without password/,
  ],
  [
    "a sentinel password for single",
    { address: "r:6379", sentinelPassword: "q" },
    /sentinelPassword is given for type single/,
  ],
  [
    "a CA that is not PEM",
    { address: "r:6379", tls: "true", "ca.crt": "junk" },
    /ca.crt is not PEM/,
  ],
];

for (const [what, data, problem] of BAD) {
  Deno.test(`a bad Secret (${what}) changes nothing and says why`, () => {
    const observed = running();
    const plan = reconcileEngine({ settings: SETTINGS, secret: secret(data, "200"), observed });
    assert.deepEqual(plan.apply, []);
    assert.deepEqual(plan.delete, []);
    assert.equal(plan.events.length, 1);
    assert.equal(plan.events[0].type, "Warning");
    assert.equal(plan.events[0].reason, "RedisSecretInvalid");
    assert.match(plan.events[0].message, problem);
    assert.match(plan.events[0].message, /^Secret platform-ratelimit\/redis cannot configure/);
    const install = engineInstall(SETTINGS, secret(data));
    assert.equal(install.state, "SecretInvalid");
    assert.ok(install.problems.some((p) => problem.test(p)), install.problems.join("; "));
    // No secret value is quoted in the message.
    for (const k of ["password", "sentinelPassword", "tls.key"]) {
      if (data[k]) assert.ok(!plan.events[0].message.includes(data[k]), k);
    }
  });
}

Deno.test("a bad Secret names every problem at once", () => {
  const read = readRedisSecret(secret({ type: "ring", tls: "true", "tls.crt": CA }));
  assert.equal(read.ok, false);
  assert.deepEqual(!read.ok && read.problems, [
    'type "ring" is not one of single, sentinel, cluster',
    "address is missing: Redis's host:port",
    "half a client certificate: tls.crt without tls.key",
  ]);
});

Deno.test("a missing Secret, or no flag: nothing written, nothing deleted", () => {
  const observed = running();
  const missing = reconcileEngine({ settings: SETTINGS, secret: undefined, observed });
  assert.deepEqual(missing, { apply: [], delete: [], events: [] });
  assert.deepEqual(engineInstall(SETTINGS, undefined), {
    state: "SecretMissing",
    problems: ["Secret platform-ratelimit/redis does not exist"],
  });
  const off = reconcileEngine({
    settings: undefined,
    secret: secret({ address: "r:1" }),
    observed,
  });
  assert.deepEqual(off, { apply: [], delete: [], events: [] });
  assert.equal(engineInstall(undefined, undefined).state, "NotConfigured");
});

Deno.test("a Secret outside the engine's namespace is refused: its Pods could not read it", () => {
  const settings = { ...SETTINGS, secret: { namespace: "default", name: "redis" } };
  const plan = reconcileEngine({ settings, secret: secret({ address: "r:6379" }), observed: [] });
  assert.deepEqual(plan.apply, []);
  assert.match(plan.events[0].message, /not in namespace platform-ratelimit/);
});

Deno.test("a new resourceVersion changes the Pod template's digest, and nothing else", () => {
  const at = (rv: string) =>
    reconcileEngine({
      settings: SETTINGS,
      secret: secret({ address: "r:6379" }, rv),
      observed: [],
    });
  const a = at("100");
  const b = at("101");
  const annotation = (p: { apply: KubeObject[] }) =>
    templateAnnotations(p)[REDIS_SECRET_DIGEST_ANNOTATION];
  assert.notEqual(annotation(a), annotation(b));
  assert.equal(annotation(a), annotation(at("100")));
  assert.match(annotation(a), /^[0-9a-f]{14}$/);
  const withoutDigest = (p: { apply: KubeObject[] }) =>
    JSON.stringify(p.apply).replace(annotation(p), "");
  assert.equal(withoutDigest(a), withoutDigest(b));
});

Deno.test("deletes only the engine's own labelled objects that are no longer rendered", () => {
  const labels = { ...GLOBAL_ENGINE_LABELS };
  const stale: KubeObject = {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name: "ratelimit-engine-old", namespace: "platform-ratelimit", labels },
  };
  const foreign: KubeObject = {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: "redis",
      namespace: "platform-ratelimit",
      labels: { "app.kubernetes.io/name": "ratelimit-engine" },
    },
  };
  const elsewhere: KubeObject = {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "x", namespace: "other", labels },
  };
  const plan = reconcileEngine({
    settings: SETTINGS,
    secret: secret({ address: "r:6379" }),
    observed: [...running(), stale, foreign, elsewhere],
  });
  assert.deepEqual(plan.delete, [{
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    namespace: "platform-ratelimit",
    name: "ratelimit-engine-old",
  }]);
  assert.equal(plan.apply.length, 5);
});

Deno.test("the engine's version is the one tools/ratelimit-engine/go.mod pins", async () => {
  const gomod = await Deno.readTextFile(
    new URL("../../tools/ratelimit-engine/go.mod", import.meta.url),
  );
  const m = /^\s*github\.com\/envoyproxy\/ratelimit (v\S+)/m.exec(gomod);
  assert.equal(m?.[1], RATELIMIT_ENGINE_VERSION);
});

Deno.test("a value that is not UTF-8 text is refused, naming its key", () => {
  const bad: KubeObject = {
    ...secret({}),
    data: { address: btoa("r:6379"), password: btoa(String.fromCharCode(0xff, 0xfe)) },
  };
  const read = readRedisSecret(bad);
  assert.deepEqual(!read.ok && read.problems, ["password is not UTF-8 text"]);
});

Deno.test("--global-engine-xds-url: the engines dial what the flag says instead of the Service", () => {
  const plan = reconcileEngine({
    settings: { ...SETTINGS, xdsServerUrl: "10.86.1.1:18001" },
    secret: secret({ address: "redis.platform-ratelimit.svc:6379" }),
    observed: [],
  });
  const env = new Map(envOf(plan));
  assert.equal(env.get("CONFIG_GRPC_XDS_SERVER_URL"), "10.86.1.1:18001");
});

Deno.test("replicas and resources come from the settings (the operator's flags)", () => {
  const resources = { requests: { cpu: "250m" }, limits: { memory: "512Mi" } };
  const plan = reconcileEngine({
    settings: { ...SETTINGS, replicas: 1, resources },
    secret: secret({ address: "r:6379" }),
    observed: [],
  });
  const d = only(plan.apply, "Deployment") as KubeObject & {
    spec: { replicas: number; template: { spec: { containers: { resources: unknown }[] } } };
  };
  assert.equal(d.spec.replicas, 1);
  assert.deepEqual(d.spec.template.spec.containers[0].resources, resources);
  // A single engine may still be drained: the budget lets one Pod go, never blocks for good.
  assert.deepEqual(
    (only(plan.apply, "PodDisruptionBudget") as KubeObject & { spec: unknown }).spec,
    { maxUnavailable: 1, selector: { matchLabels: { ...GLOBAL_ENGINE_LABELS } } },
  );
});

// TLS to the operator's xDS server (--global-engine-xds-tls-secret): the engines' side.

const TLS_SETTINGS: EngineSettings = {
  ...SETTINGS,
  xdsTls: {
    secret: { namespace: "platform-ratelimit", name: "engine-xds-tls" },
    clientCertRequired: true,
  },
};

/** The engines' xDS TLS Secret (cert-manager's kubernetes.io/tls keys). */
function xdsSecret(data: Record<string, string>, resourceVersion = "300"): KubeObject {
  const s = secret(data, resourceVersion);
  return { ...s, type: "kubernetes.io/tls", metadata: { ...s.metadata, name: "engine-xds-tls" } };
}

const XDS_FILES = { "ca.crt": CA, "tls.crt": CA, "tls.key": KEY };

Deno.test("TLS to the xDS server: the CA, the server name and the client certificate as files of the second Secret", () => {
  const plan = reconcileEngine({
    settings: TLS_SETTINGS,
    secret: secret({ address: "r:6380", tls: "true", "ca.crt": CA }),
    xdsTlsSecret: xdsSecret(XDS_FILES),
    observed: [],
  });
  const env = envOf(plan);
  const url = env.findIndex(([n]) => n === "CONFIG_GRPC_XDS_SERVER_URL");
  assert.deepEqual(env.slice(url, url + 6), [
    ["CONFIG_GRPC_XDS_SERVER_URL", "platform-operator-xds.platform-system.svc:18001"],
    ["CONFIG_GRPC_XDS_SERVER_USE_TLS", "true"],
    ["CONFIG_GRPC_XDS_SERVER_TLS_CACERT", `${XDS_TLS_DIR}/ca.crt`],
    // The name the operator's certificate must hold: the host dialed.
    ["CONFIG_GRPC_XDS_SERVER_TLS_SAN", "platform-operator-xds.platform-system.svc"],
    ["CONFIG_GRPC_XDS_CLIENT_TLS_CERT", `${XDS_TLS_DIR}/tls.crt`],
    ["CONFIG_GRPC_XDS_CLIENT_TLS_KEY", `${XDS_TLS_DIR}/tls.key`],
  ]);
  const pod = podSpec(plan);
  assert.deepEqual(pod.containers[0].volumeMounts, [
    { name: "redis-tls", mountPath: REDIS_TLS_DIR, readOnly: true },
    { name: "xds-tls", mountPath: XDS_TLS_DIR, readOnly: true },
  ]);
  assert.deepEqual(pod.volumes?.[1], {
    name: "xds-tls",
    secret: {
      secretName: "engine-xds-tls",
      defaultMode: 0o440,
      items: ["ca.crt", "tls.crt", "tls.key"].map((k) => ({ key: k, path: k })),
    },
  });
  // Files only: no certificate or key in what the operator writes, nothing by secretKeyRef.
  assert.ok(!JSON.stringify(plan).includes("MIIB") && !JSON.stringify(plan).includes("MHc"));
  assert.ok(!JSON.stringify(env).includes("engine-xds-tls"));
  const annotations = templateAnnotations(plan);
  assert.equal(annotations[XDS_TLS_SECRET_DIGEST_ANNOTATION], xdsTlsSecretDigest("300"));
  assert.equal(annotations[REDIS_SECRET_DIGEST_ANNOTATION], secretDigest("100"));
  assert.match(
    plan.events[0].message,
    /over TLS \(with a client certificate, Secret platform-ratelimit\/engine-xds-tls version /,
  );
  // A server name of the flag, and an address dialed: the flag's name wins.
  const named = reconcileEngine({
    settings: {
      ...TLS_SETTINGS,
      xdsServerUrl: "10.88.0.1:18001",
      xdsTls: { ...TLS_SETTINGS.xdsTls!, serverName: "xds.example.internal" },
    },
    secret: secret({ address: "r:6379" }),
    xdsTlsSecret: xdsSecret(XDS_FILES),
    observed: [],
  });
  assert.equal(
    Object.fromEntries(envOf(named)).CONFIG_GRPC_XDS_SERVER_TLS_SAN,
    "xds.example.internal",
  );
  assert.deepEqual(podSpec(named).volumes?.map((v) => (v as { name: string }).name), ["xds-tls"]);
  // Without a client CA at the operator, a Secret with ca.crt alone: TLS, no client certificate.
  const caOnly = reconcileEngine({
    settings: { ...TLS_SETTINGS, xdsTls: { ...TLS_SETTINGS.xdsTls!, clientCertRequired: false } },
    secret: secret({ address: "r:6379" }),
    xdsTlsSecret: xdsSecret({ "ca.crt": CA }),
    observed: [],
  });
  const caEnv = Object.fromEntries(envOf(caOnly));
  assert.equal(caEnv.CONFIG_GRPC_XDS_SERVER_USE_TLS, "true");
  assert.equal(caEnv.CONFIG_GRPC_XDS_CLIENT_TLS_CERT, undefined);
  assert.deepEqual(
    (podSpec(caOnly).volumes?.[0] as { secret: { items: unknown[] } }).secret.items,
    [{ key: "ca.crt", path: "ca.crt" }],
  );
  // Without the flag: no TLS variable, no volume, no digest of a second Secret.
  const plain = reconcileEngine({
    settings: SETTINGS,
    secret: secret({ address: "r:6379" }),
    xdsTlsSecret: xdsSecret(XDS_FILES),
    observed: [],
  });
  assert.ok(!JSON.stringify(plain).includes("CONFIG_GRPC_XDS_SERVER_USE_TLS"));
  assert.ok(!JSON.stringify(plain).includes(XDS_TLS_SECRET_DIGEST_ANNOTATION));
});

Deno.test("TLS to the xDS server: a rotated certificate (a new Secret version) rolls the engines; the Redis digest stays", () => {
  const digestOf = (xdsVersion: string) => {
    const plan = reconcileEngine({
      settings: TLS_SETTINGS,
      secret: secret({ address: "r:6379" }, "100"),
      xdsTlsSecret: xdsSecret(XDS_FILES, xdsVersion),
      observed: [],
    });
    return templateAnnotations(plan);
  };
  const before = digestOf("300");
  const after = digestOf("301");
  assert.notEqual(
    after[XDS_TLS_SECRET_DIGEST_ANNOTATION],
    before[XDS_TLS_SECRET_DIGEST_ANNOTATION],
  );
  assert.equal(after[REDIS_SECRET_DIGEST_ANNOTATION], before[REDIS_SECRET_DIGEST_ANNOTATION]);
});

Deno.test("TLS to the xDS server: a missing or bad second Secret changes nothing and says why; never a cleartext engine", () => {
  const redis = secret({ address: "r:6379" });
  const missing = reconcileEngine({ settings: TLS_SETTINGS, secret: redis, observed: [] });
  assert.deepEqual(missing.apply, []);
  assert.deepEqual(missing.delete, []);
  assert.deepEqual(missing.events.map((e) => [e.type, e.reason]), [[
    "Warning",
    "RedisSecretInvalid",
  ]]);
  assert.match(
    missing.events[0].message,
    /^Secrets platform-ratelimit\/redis and platform-ratelimit\/engine-xds-tls cannot configure the global rate limit engine: Secret platform-ratelimit\/engine-xds-tls \(--global-engine-xds-tls-secret\) does not exist\. The running engine, if any, is left as it was$/,
  );
  assert.deepEqual(engineInstall(TLS_SETTINGS, redis, undefined), {
    state: "SecretMissing",
    problems: [
      "Secret platform-ratelimit/engine-xds-tls (--global-engine-xds-tls-secret) does not exist",
    ],
  });
  const cases: [Record<string, string>, RegExp][] = [
    [
      { "tls.crt": CA, "tls.key": KEY },
      /has no ca\.crt: the CA the engines check the operator's xDS certificate with/,
    ],
    [
      { "ca.crt": CA, "tls.crt": CA },
      /half a client certificate in Secret platform-ratelimit\/engine-xds-tls: tls\.crt without tls\.key/,
    ],
    [
      { "ca.crt": CA },
      /has no tls\.crt and tls\.key, and the operator requires a client certificate of the engines \(--global-engine-xds-client-ca-file\)/,
    ],
    [
      { "ca.crt": "not pem", "tls.crt": CA, "tls.key": CA },
      /ca\.crt of .* is not a PEM certificate; tls\.key of .* is not a PEM private key/,
    ],
  ];
  for (const [data, message] of cases) {
    const plan = reconcileEngine({
      settings: TLS_SETTINGS,
      secret: redis,
      xdsTlsSecret: xdsSecret(data),
      observed: [],
    });
    assert.deepEqual(plan.apply, [], JSON.stringify(data));
    assert.equal(plan.events[0].reason, "RedisSecretInvalid");
    assert.match(plan.events[0].message, message);
    assert.ok(!plan.events[0].message.includes("MIIB"), "no value quoted");
    assert.equal(engineInstall(TLS_SETTINGS, redis, xdsSecret(data)).state, "SecretInvalid");
  }
  // Both Secrets bad: every problem of both named.
  const both = engineInstall(TLS_SETTINGS, secret({ type: "nope" }), xdsSecret({}));
  assert.equal(both.state, "SecretInvalid");
  assert.ok(both.problems.some((p) => /type "nope"/.test(p)), both.problems.join("; "));
  assert.ok(both.problems.some((p) => /has no ca\.crt/.test(p)), both.problems.join("; "));
  // A Secret outside the engine's namespace.
  assert.equal(
    engineInstall(
      {
        ...TLS_SETTINGS,
        xdsTls: { ...TLS_SETTINGS.xdsTls!, secret: { namespace: "default", name: "x" } },
      },
      redis,
      xdsSecret(XDS_FILES),
    ).state,
    "SecretInvalid",
  );
});
