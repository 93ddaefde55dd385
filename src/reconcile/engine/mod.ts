/**
 * The global rate limit engine's deployment (issue #43 point 2): from the platform team's Redis
 * Secret (secret.ts), the objects that run envoyproxy/ratelimit in namespace `platform-ratelimit`
 * (GLOBAL_ENGINE_SERVICE): its ServiceAccount, Deployment, Service, PodDisruptionBudget and a
 * NetworkPolicy, each labelled GLOBAL_ENGINE_LABELS. Pure: the controller (src/controllers/engine.ts)
 * hands in the Secret and the objects observed, and carries out the Plan.
 *
 * What it guarantees: a Secret that cannot configure the engine changes nothing on the running
 * engine (a working engine is never dropped because its Secret went bad) and says why, as a
 * Warning Event on the Secret and as `engineInstall`'s summary; a Secret removed keeps the engine
 * as it is (its Pods keep their connection settings until they restart); nothing is deleted that
 * does not carry every label of GLOBAL_ENGINE_LABELS in the engine's namespace.
 */
import type { KubeObject } from "../../api/object.ts";
import {
  engineXdsServerUrl,
  GLOBAL_ENGINE_CONTAINER,
  GLOBAL_ENGINE_LABELS,
  GLOBAL_ENGINE_SERVICE,
  OPERATOR_POD_LABELS,
  REDIS_SECRET_DIGEST_ANNOTATION,
} from "../../api/global_engine.ts";
import { type EventSpec, type ObjectRef, type Plan, refOf, sameRef } from "../plan.ts";
import { textDigest } from "../hash.ts";
import { readRedisSecret, REDIS_SECRET_KEYS, type RedisConnection } from "./secret.ts";
import type { EngineResources } from "./sizing.ts";
import {
  type EngineXdsTls,
  readXdsTlsSecret,
  XDS_TLS_DIR,
  XDS_TLS_SECRET_DIGEST_ANNOTATION,
  xdsTlsEnv,
  type XdsTlsFiles,
  xdsTlsItems,
  xdsTlsSecretDigest,
} from "./xds_tls.ts";

export {
  DEFAULT_REDIS_USER,
  readRedisSecret,
  REDIS_SECRET_KEYS,
  REDIS_TYPES,
  type RedisConnection,
  type RedisSecretReading,
  type RedisType,
} from "./secret.ts";
export {
  type EngineXdsTls,
  readXdsTlsSecret,
  XDS_TLS_DIR,
  XDS_TLS_SECRET_DIGEST_ANNOTATION,
  XDS_TLS_SECRET_KEYS,
  type XdsTlsFiles,
  xdsTlsSecretDigest,
  type XdsTlsSecretReading,
} from "./xds_tls.ts";
// The defaults live in sizing.ts (the flags' parser needs them, not the engine); their names stay
// importable from here.
export {
  DEFAULT_ENGINE_REPLICAS,
  DEFAULT_ENGINE_RESOURCES,
  type EngineResources,
  MAX_ENGINE_REPLICAS,
} from "./sizing.ts";

/** How the operator was told to run the engine (its flags). */
export interface EngineSettings {
  /** The Redis Secret (`--global-redis-secret`): in the engine's namespace, where its Pods read it. */
  secret: { namespace: string; name: string };
  /** The engine's image (`--global-engine-image`). */
  image: string;
  replicas: number;
  resources: EngineResources;
  /** The operator's namespace: where its xDS Service is and its Pods run. */
  operatorNamespace: string;
  /**
   * What the engines dial for their configuration (`--global-engine-xds-url`); default the xDS
   * Service in the operator's namespace (`engineXdsServerUrl`).
   */
  xdsServerUrl?: string;
  /**
   * TLS to the operator's xDS server (`--global-engine-xds-tls-secret`); undefined: plaintext, as
   * the operator then serves it.
   */
  xdsTls?: EngineXdsTls;
}

/** Where the engine's Pods find the Secret's certificates (a Secret volume). */
export const REDIS_TLS_DIR = "/etc/ratelimit-engine/redis-tls";

/** The variable holding the password, from which `REDIS_AUTH` is composed in the Pod. */
export const PASSWORD_ENV = "PLATFORM_REDIS_PASSWORD";

/** Whether the engine can be installed, as a RateLimit's status can say it. */
export type EngineInstallState = "NotConfigured" | "SecretMissing" | "SecretInvalid" | "Installed";

/** The engine's installation, summed up for status and logs. */
export interface EngineInstall {
  /**
   * NotConfigured: no `--global-redis-secret`. SecretMissing: the named Secret does not exist (an
   * engine installed before keeps running). SecretInvalid: it cannot configure the engine (an
   * engine installed before keeps running as it was). Installed: the engine's objects are those
   * of this Secret (applied by the controller; whether its Pods are Ready is read elsewhere).
   */
  state: EngineInstallState;
  /** Why, for every state but Installed: one line each. */
  problems: string[];
}

/** What the reducer reads. */
export interface EngineInput {
  /** Undefined without `--global-redis-secret`. */
  settings: EngineSettings | undefined;
  /** The Redis Secret as cached; undefined when it does not exist. */
  secret: KubeObject | undefined;
  /** The objects observed in the engine's namespace with the engine's labels. */
  observed: readonly KubeObject[];
  /** The xDS TLS Secret as cached (with `settings.xdsTls`); undefined when it does not exist. */
  xdsTlsSecret?: KubeObject;
}

/** The kinds the reducer writes, in apply order. */
export const ENGINE_KINDS = [
  { apiVersion: "v1", kind: "ServiceAccount" },
  { apiVersion: "apps/v1", kind: "Deployment" },
  { apiVersion: "v1", kind: "Service" },
  { apiVersion: "policy/v1", kind: "PodDisruptionBudget" },
  { apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy" },
] as const;

function secretText(ref: { namespace: string; name: string }): string {
  return `${ref.namespace}/${ref.name}`;
}

/**
 * The engine's installation from the flag's settings, the Redis Secret and, with TLS to the xDS
 * server, the xDS TLS Secret (see EngineInstall): a missing Secret before an invalid one; every
 * problem of both Secrets named.
 */
export function engineInstall(
  settings: EngineSettings | undefined,
  secret: KubeObject | undefined,
  xdsTlsSecret?: KubeObject,
): EngineInstall {
  if (!settings) {
    return {
      state: "NotConfigured",
      problems: ["the operator runs without --global-redis-secret: no global rate limit engine"],
    };
  }
  const named = secretText(settings.secret);
  const tls = settings.xdsTls;
  const outside = [settings.secret, ...(tls ? [tls.secret] : [])]
    .filter((ref) => ref.namespace !== GLOBAL_ENGINE_SERVICE.namespace);
  if (outside.length > 0) {
    return {
      state: "SecretInvalid",
      problems: outside.map((ref) =>
        `Secret ${
          secretText(ref)
        } is not in namespace ${GLOBAL_ENGINE_SERVICE.namespace}, where the engine's Pods can read it`
      ),
    };
  }
  const missing = [
    ...(!secret ? [`Secret ${named} does not exist`] : []),
    ...(tls && !xdsTlsSecret
      ? [`Secret ${secretText(tls.secret)} (--global-engine-xds-tls-secret) does not exist`]
      : []),
  ];
  if (missing.length > 0) return { state: "SecretMissing", problems: missing };
  const read = readRedisSecret(secret!);
  const problems = [
    ...(read.ok ? [] : read.problems),
    ...(tls ? xdsTlsReading(tls, xdsTlsSecret!).problems : []),
  ];
  if (problems.length > 0) return { state: "SecretInvalid", problems };
  return { state: "Installed", problems: [] };
}

/** The xDS TLS Secret read, as files or problems (none without TLS). */
function xdsTlsReading(
  tls: EngineXdsTls,
  secret: KubeObject,
): { files?: XdsTlsFiles; problems: string[] } {
  const read = readXdsTlsSecret(secret, tls);
  return read.ok ? { files: read.files, problems: [] } : { problems: read.problems };
}

/**
 * The Plan: the engine's objects from a valid Secret (and the deletion of engine-labelled objects
 * no longer rendered); from a bad Secret, nothing but a Warning Event on it; without a Secret or
 * without the flag, nothing at all.
 */
export function reconcileEngine(input: EngineInput): Plan {
  const plan: Plan = { apply: [], delete: [], events: [] };
  const { settings, secret } = input;
  const install = engineInstall(settings, secret, input.xdsTlsSecret);
  if (!settings || !secret) return plan;
  if (install.state !== "Installed") {
    plan.events.push(invalidEvent(settings, install.problems));
    return plan;
  }
  const read = readRedisSecret(secret);
  const tls = settings.xdsTls && input.xdsTlsSecret
    ? xdsTlsReading(settings.xdsTls, input.xdsTlsSecret).files
    : undefined;
  if (!read.ok || (settings.xdsTls && !tls)) return plan; // engineInstall said Installed: unreachable
  const objects = engineObjects(
    settings,
    read.connection,
    secret.metadata.resourceVersion ?? "",
    tls && { files: tls, resourceVersion: input.xdsTlsSecret?.metadata.resourceVersion ?? "" },
  );
  const desired = objects.map(refOf);
  plan.apply = objects;
  plan.delete = input.observed.filter((o) => isEngineObject(o))
    .map(refOf)
    .filter((ref) => !desired.some((d) => sameRef(d, ref)));
  plan.events.push({
    type: "Normal",
    reason: "EngineConfigured",
    message:
      `the global rate limit engine (Deployment ${GLOBAL_ENGINE_SERVICE.namespace}/${GLOBAL_ENGINE_SERVICE.name}) counts in Redis ${read.connection.address} (${
        describe(read.connection)
      }), Secret version ${secretDigest(secret.metadata.resourceVersion ?? "")}${
        settings.xdsTls && input.xdsTlsSecret
          ? `; it takes its configuration over TLS (${
            tls?.clientCert ? "with a client certificate, " : ""
          }Secret ${secretText(settings.xdsTls.secret)} version ${
            xdsTlsSecretDigest(input.xdsTlsSecret.metadata.resourceVersion ?? "")
          })`
          : ""
      }`,
  });
  return plan;
}

function invalidEvent(settings: EngineSettings, problems: string[]): EventSpec {
  const tls = settings.xdsTls;
  const named = tls
    ? `Secrets ${secretText(settings.secret)} and ${secretText(tls.secret)}`
    : `Secret ${secretText(settings.secret)}`;
  return {
    type: "Warning",
    reason: "RedisSecretInvalid",
    message: `${named} cannot configure the global rate limit engine: ${
      problems.join("; ")
    }. The running engine, if any, is left as it was`,
  };
}

function describe(c: RedisConnection): string {
  const auth = c.password ? `user ${c.username} with a password` : "no password";
  const tls = c.tls
    ? `TLS${c.caCert ? " with the Secret's CA" : ""}${
      c.clientCert ? " and client certificate" : ""
    }`
    : "no TLS";
  return `${c.type}, ${auth}, ${tls}`;
}

/** True for an object the operator made for the engine: in its namespace, with all its labels. */
export function isEngineObject(obj: KubeObject): boolean {
  const labels = obj.metadata.labels ?? {};
  return obj.metadata.namespace === GLOBAL_ENGINE_SERVICE.namespace &&
    Object.entries(GLOBAL_ENGINE_LABELS).every(([k, v]) => labels[k] === v) &&
    ENGINE_KINDS.some((t) => t.apiVersion === obj.apiVersion && t.kind === obj.kind);
}

/** The digest of the Secret's version that the Pod template carries. */
export function secretDigest(resourceVersion: string): string {
  return textDigest(`redis-secret\u0000${resourceVersion}`);
}

/** Escapes `$` for a Kubernetes env value, where `$(NAME)` would be expanded. */
function literalEnv(text: string): string {
  return text.split("$").join("$$");
}

/** The engine's environment (envoyproxy/ratelimit src/settings/settings.go). */
export function engineEnv(
  settings: EngineSettings,
  c: RedisConnection,
  xdsTls?: XdsTlsFiles,
): Record<string, unknown>[] {
  const s = GLOBAL_ENGINE_SERVICE;
  const lit = (name: string, value: string) => ({ name, value });
  const fromSecret = (name: string, key: string) => ({
    name,
    valueFrom: { secretKeyRef: { name: settings.secret.name, key } },
  });
  const tlsFile = (name: string, key: string) => lit(name, `${REDIS_TLS_DIR}/${key}`);
  const xdsUrl = settings.xdsServerUrl ?? engineXdsServerUrl(settings.operatorNamespace);
  return [
    lit("LOG_FORMAT", "json"),
    lit("USE_STATSD", "false"),
    lit("USE_PROMETHEUS", "true"),
    lit("PROMETHEUS_ADDR", `:${s.metricsPort}`),
    lit("PORT", String(s.httpPort)),
    lit("GRPC_PORT", String(s.grpcPort)),
    lit("DEBUG_PORT", String(s.debugPort)),
    lit("CONFIG_TYPE", "GRPC_XDS_SOTW"),
    lit("CONFIG_GRPC_XDS_SERVER_URL", xdsUrl),
    // The operator's certificate checked against the Secret's CA, and the engine's own shown.
    ...(settings.xdsTls && xdsTls ? xdsTlsEnv(settings.xdsTls, xdsTls, xdsUrl) : []),
    // Each engine names itself by its Pod: the operator's xDS server tells the streams apart.
    { name: "CONFIG_GRPC_XDS_NODE_ID", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } },
    lit("XDS_CLIENT_BACKOFF_INITIAL_INTERVAL", "1s"),
    lit("FORCE_START_WITHOUT_INITIAL_CONFIG", "true"),
    lit("REDIS_SOCKET_TYPE", "tcp"),
    lit("REDIS_TYPE", c.type.toUpperCase()),
    lit("REDIS_URL", literalEnv(c.address)),
    // Radix's write flush interval: required by the engine for Redis Cluster (150 to 500 µs).
    ...(c.type === "cluster" ? [lit("REDIS_PIPELINE_WINDOW", "150us")] : []),
    lit("REDIS_HEALTH_CHECK_ACTIVE_CONNECTION", "true"),
    // Always user:password: the engine splits REDIS_AUTH at its first colon, so a password alone
    // that holds one would be taken for a user (docs/global-engine.md). Composed in the Pod from
    // the password's variable, which Kubernetes expands in a later variable's value.
    ...(c.password
      ? [
        fromSecret(PASSWORD_ENV, REDIS_SECRET_KEYS.password),
        lit("REDIS_AUTH", `${literalEnv(c.username)}:$(${PASSWORD_ENV})`),
      ]
      : []),
    ...(c.sentinelPassword
      ? [fromSecret("REDIS_SENTINEL_AUTH", REDIS_SECRET_KEYS.sentinelPassword)]
      : []),
    ...(c.tls ? [lit("REDIS_TLS", "true")] : []),
    ...(c.caCert ? [tlsFile("REDIS_TLS_CACERT", REDIS_SECRET_KEYS.caCert)] : []),
    ...(c.clientCert
      ? [
        tlsFile("REDIS_TLS_CLIENT_CERT", REDIS_SECRET_KEYS.clientCert),
        tlsFile("REDIS_TLS_CLIENT_KEY", REDIS_SECRET_KEYS.clientKey),
      ]
      : []),
  ];
}

/** The restricted container security context, as the operator's own (deploy/deployment.yaml). */
const CONTAINER_SECURITY = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ["ALL"] },
  seccompProfile: { type: "RuntimeDefault" },
};

/**
 * The engine's objects for `settings` and a valid Secret's connection at `resourceVersion`; with
 * `xdsTls`, the xDS TLS Secret's files and version (`settings.xdsTls`).
 */
export function engineObjects(
  settings: EngineSettings,
  c: RedisConnection,
  resourceVersion: string,
  xdsTls?: { files: XdsTlsFiles; resourceVersion: string },
): KubeObject[] {
  const s = GLOBAL_ENGINE_SERVICE;
  const labels = { ...GLOBAL_ENGINE_LABELS };
  const metadata = () => ({ name: s.name, namespace: s.namespace, labels: { ...labels } });
  const tlsFiles = [
    ...(c.caCert ? [REDIS_SECRET_KEYS.caCert] : []),
    ...(c.clientCert ? [REDIS_SECRET_KEYS.clientCert, REDIS_SECRET_KEYS.clientKey] : []),
  ];
  // Secret volumes: Redis's certificates, and those of TLS to the operator's xDS server.
  const volumes = [
    ...(tlsFiles.length > 0
      ? [{ name: "redis-tls", dir: REDIS_TLS_DIR, secret: settings.secret.name, items: tlsFiles }]
      : []),
    ...(xdsTls && settings.xdsTls
      ? [{
        name: "xds-tls",
        dir: XDS_TLS_DIR,
        secret: settings.xdsTls.secret.name,
        items: xdsTlsItems(xdsTls.files),
      }]
      : []),
  ];
  const port = (name: string, containerPort: number) => ({
    name,
    containerPort,
    protocol: "TCP",
  });
  const deployment = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: metadata(),
    spec: {
      replicas: settings.replicas,
      revisionHistoryLimit: 3,
      selector: { matchLabels: { ...labels } },
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template: {
        metadata: {
          labels: { ...labels },
          annotations: {
            [REDIS_SECRET_DIGEST_ANNOTATION]: secretDigest(resourceVersion),
            ...(xdsTls && settings.xdsTls
              ? { [XDS_TLS_SECRET_DIGEST_ANNOTATION]: xdsTlsSecretDigest(xdsTls.resourceVersion) }
              : {}),
            // The engine is reached in plaintext from the proxies' outbound cluster; a sidecar in
            // front of it would also let the mesh into its debug port past the NetworkPolicy.
            "sidecar.istio.io/inject": "false",
            "kubectl.kubernetes.io/default-container": GLOBAL_ENGINE_CONTAINER,
          },
        },
        spec: {
          serviceAccountName: s.name,
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
                  labelSelector: { matchLabels: { ...labels } },
                },
              }],
            },
          },
          containers: [{
            name: GLOBAL_ENGINE_CONTAINER,
            image: settings.image,
            imagePullPolicy: "IfNotPresent",
            env: engineEnv(settings, c, settings.xdsTls ? xdsTls?.files : undefined),
            ports: [
              port("grpc", s.grpcPort),
              port("http", s.httpPort),
              port("debug", s.debugPort),
              port("metrics", s.metricsPort),
            ],
            // Ready while the engine holds a Redis connection (REDIS_HEALTH_CHECK_ACTIVE_CONNECTION):
            // the Service then sends calls only to engines that can count.
            readinessProbe: {
              httpGet: { path: "/healthcheck", port: "http" },
              periodSeconds: 5,
              timeoutSeconds: 2,
              failureThreshold: 2,
            },
            // Alive while it answers at all: Redis down is not fixed by a restart (and an engine
            // that starts without Redis exits at once), so liveness does not ask about Redis.
            livenessProbe: {
              tcpSocket: { port: "http" },
              initialDelaySeconds: 5,
              periodSeconds: 10,
              timeoutSeconds: 2,
              failureThreshold: 3,
            },
            resources: {
              requests: { ...settings.resources.requests },
              limits: { ...settings.resources.limits },
            },
            securityContext: CONTAINER_SECURITY,
            ...(volumes.length > 0
              ? {
                volumeMounts: volumes.map((v) => ({
                  name: v.name,
                  mountPath: v.dir,
                  readOnly: true,
                })),
              }
              : {}),
          }],
          ...(volumes.length > 0
            ? {
              volumes: volumes.map((v) => ({
                name: v.name,
                secret: {
                  secretName: v.secret,
                  defaultMode: 0o440,
                  items: v.items.map((key) => ({ key, path: key })),
                },
              })),
            }
            : {}),
        },
      },
    },
  };
  return [
    {
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: metadata(),
      automountServiceAccountToken: false,
    },
    deployment,
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: metadata(),
      spec: {
        type: "ClusterIP",
        selector: { ...labels },
        ports: [
          // Named grpc: Istio treats the port as HTTP/2 (its outbound cluster GLOBAL_ENGINE_CLUSTER).
          { name: "grpc", port: s.grpcPort, targetPort: "grpc", protocol: "TCP" },
          { name: "http-metrics", port: s.metricsPort, targetPort: "metrics", protocol: "TCP" },
        ],
      },
    },
    {
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: metadata(),
      // One Pod at a time may go: with two, one serves; with one (--global-engine-replicas=1),
      // minAvailable 1 would block every node drain for good.
      spec: { maxUnavailable: 1, selector: { matchLabels: { ...labels } } },
    },
    {
      apiVersion: "networking.k8s.io/v1",
      kind: "NetworkPolicy",
      metadata: metadata(),
      spec: {
        podSelector: { matchLabels: { ...labels } },
        policyTypes: ["Ingress"],
        ingress: [
          // The proxies' calls and Prometheus's scrapes, from anywhere.
          {
            ports: [{ port: s.grpcPort, protocol: "TCP" }, {
              port: s.metricsPort,
              protocol: "TCP",
            }],
          },
          // The loaded configuration (/rlconfig) and health, read back by the operator only.
          {
            from: [{
              namespaceSelector: {
                matchLabels: { "kubernetes.io/metadata.name": settings.operatorNamespace },
              },
              podSelector: { matchLabels: { ...OPERATOR_POD_LABELS } },
            }],
            ports: [{ port: s.debugPort, protocol: "TCP" }, { port: s.httpPort, protocol: "TCP" }],
          },
        ],
      },
    },
  ] as KubeObject[];
}

/** The references of every object the reducer writes. */
export function engineRefs(): ObjectRef[] {
  const s = GLOBAL_ENGINE_SERVICE;
  return ENGINE_KINDS.map((t) => ({ ...t, namespace: s.namespace, name: s.name }));
}
