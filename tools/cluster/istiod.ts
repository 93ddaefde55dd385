/**
 * A real istiod beside the local control plane (`up({ mesh: true })`): `pilot-discovery
 * discovery` built from the `istio.io/istio` that tools/istio-check pins, run as a process
 * outside the cluster and watching the real API server as its own ServiceAccount
 * (`mesh-system/istiod`, bound to the rules of Istio's istiod ClusterRole and Role). Every
 * setting is taken from the module's source; docs/istiod.md lists and explains each.
 *
 * Every port is on 127.0.0.1 and chosen free per cluster (parallel tests do not collide). istiod
 * never checks a request from a loopback address (pilot/pkg/xds/debug.go
 * `allowAuthenticatedOrLocalhost`): a client that must be authenticated as a Pod would be
 * connects from `authSource`, a non-loopback address of this machine, to the same loopback port
 * (no packet leaves the machine).
 */
import { dirname, join } from "node:path";
import { stringify } from "yaml";
import { writeKubeconfig } from "./auth.ts";
import { internalDir } from "./components.ts";
import { MESH_ROOT_NAMESPACE } from "./mesh.ts";
import { OPERATOR_NAMESPACE } from "./operator_identity.ts";
import {
  freePorts,
  isAlive,
  type ProcessSpec,
  startProcess,
  stopProcess,
  waitHealthy,
} from "../processes.ts";
import { tailFile } from "../files.ts";

/** istiod's namespace (`POD_NAMESPACE`), which is also the mesh's config root namespace. */
export const ISTIOD_NAMESPACE = MESH_ROOT_NAMESPACE;
/** istiod's ServiceAccount (Istio's chart names it `istiod`). */
export const ISTIOD_SERVICE_ACCOUNT = "istiod";
/** The user the API server authenticates istiod as. */
export const ISTIOD_USER = `system:serviceaccount:${ISTIOD_NAMESPACE}:${ISTIOD_SERVICE_ACCOUNT}`;
/** istiod's cluster id (`CLUSTER_ID`): Istio's default, which pilot-agent also sends by default. */
export const ISTIOD_CLUSTER_ID = "Kubernetes";
/** The audience istiod asks TokenReview for (`TOKEN_AUDIENCES`, pkg/security/security.go). */
export const ISTIO_TOKEN_AUDIENCE = "istio-ca";
/** The name istiod's Pod would have (`POD_NAME`: leader election identity). */
export const ISTIOD_POD_NAME = "istiod-local";

/** Options of the mesh with a real istiod (`up({ mesh: {...} })`). */
export interface MeshOptions {
  /**
   * `DEBUG_ENDPOINT_AUTH_ALLOWED_NAMESPACES`: namespaces whose ServiceAccount tokens may read
   * every debug endpoint (istiod's own namespace always may). Default: the operator's namespace
   * (`platform-system`), which reads `/debug/syncz`. `[]` leaves only istiod's namespace.
   */
  debugAllowedNamespaces?: string[];
}

/** The loopback ports of one istiod. */
export interface IstiodPorts {
  /** Plaintext xDS (gRPC, ADS), Istio's 15010. */
  xds: number;
  /** HTTP: readiness `/ready` (and the debug endpoints again), Istio's 8080. */
  http: number;
  /** Monitoring: `/metrics`, `/version` and the debug endpoints, Istio's 15014. */
  monitoring: number;
  /** ControlZ introspection, Istio's 9876. */
  ctrlz: number;
}

/** What a client of istiod needs, kept in `state.json` (`istiod`). */
export interface IstiodInfo {
  /** `host:port` of plaintext xDS (ADS over gRPC, no TLS, no client authentication). */
  xds: string;
  /** Base URL of the monitoring port: `/debug/syncz`, `/debug/config_dump?proxyID=`, ... */
  debug: string;
  /** istiod's readiness URL (200 once its caches, CRDs included, are synced). */
  ready: string;
  ports: IstiodPorts;
  /** `CLUSTER_ID`. */
  clusterId: string;
  /** istiod's namespace (`POD_NAMESPACE`). */
  namespace: string;
  /** `meshConfig.rootNamespace`: a token of this namespace may read every debug endpoint. */
  rootNamespace: string;
  /** `DEBUG_ENDPOINT_AUTH_ALLOWED_NAMESPACES`. */
  debugAllowedNamespaces: string[];
  /** The audience a token for the debug endpoints must have. */
  tokenAudience: string;
  /**
   * A non-loopback IPv4 address of this machine to connect from, so that istiod authenticates
   * the request as it would a Pod's (from loopback it checks nothing). Undefined when the machine
   * has none.
   */
  authSource?: string;
  /** Seconds from start to ready, as measured by `up`. */
  readySeconds: number;
}

/** istiod's entry in `state.json`: its process and what clients need. */
export interface IstiodState extends ProcessSpec, IstiodInfo {
  pid: number;
  /** Its readiness URL, probed by `status`. */
  health: string;
  /** istiod's kubeconfig (its ServiceAccount's token). */
  kubeconfig: string;
}

/**
 * Istio's istiod ClusterRoles and Role with its chart's default values, for ServiceAccount
 * `mesh-system/istiod`: manifests/charts/istio-control/istio-discovery/templates/clusterrole.yaml
 * and role.yaml (global.istiod.enableAnalysis false, taint.enabled false, pilotCertProvider
 * istiod so no CSR rules, no ENABLE_CLUSTER_TRUST_BUNDLE_API, MCS group multicluster.x-k8s.io),
 * with their bindings (clusterrolebinding.yaml, rolebinding.yaml).
 */
export function istiodRbac(ns: string = ISTIOD_NAMESPACE): Record<string, unknown>[] {
  const labels = { app: "istiod", release: "istiod", "app.kubernetes.io/name": "istiod" };
  const rule = (apiGroups: string[], resources: string[], verbs: string[]) => ({
    apiGroups,
    resources,
    verbs,
  });
  const read = ["get", "list", "watch"];
  const write = ["get", "watch", "list", "update", "patch", "create", "delete"];
  const istioGroups = [
    "config.istio.io",
    "security.istio.io",
    "networking.istio.io",
    "authentication.istio.io",
    "rbac.istio.io",
    "telemetry.istio.io",
    "extensions.istio.io",
  ];
  const gatewayStatus = [
    "backendtlspolicies/status",
    "gatewayclasses/status",
    "gateways/status",
    "grpcroutes/status",
    "httproutes/status",
    "referencegrants/status",
    "tcproutes/status",
    "tlsroutes/status",
    "udproutes/status",
    "listenersets/status",
  ];
  const clusterRole = `istiod-clusterrole-${ns}`;
  const gatewayRole = `istiod-gateway-controller-${ns}`;
  const subject = { kind: "ServiceAccount", name: ISTIOD_SERVICE_ACCOUNT, namespace: ns };
  const binding = (kind: "ClusterRole" | "Role", name: string) => ({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: `${kind}Binding`,
    metadata: { name, labels, ...(kind === "Role" ? { namespace: ns } : {}) },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind, name },
    subjects: [subject],
  });
  return [
    {
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: { name: ISTIOD_SERVICE_ACCOUNT, namespace: ns, labels },
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: clusterRole, labels },
      rules: [
        rule(["admissionregistration.k8s.io"], ["mutatingwebhookconfigurations"], [
          ...read,
          "update",
          "patch",
        ]),
        rule(["admissionregistration.k8s.io"], ["validatingwebhookconfigurations"], [
          ...read,
          "update",
        ]),
        rule(istioGroups, ["*"], read),
        rule(["networking.istio.io"], ["workloadentries"], write),
        rule(["networking.istio.io"], ["workloadentries/status", "serviceentries/status"], write),
        rule(["security.istio.io"], ["authorizationpolicies/status"], write),
        rule([""], ["services/status"], write),
        rule(["apiextensions.k8s.io"], ["customresourcedefinitions"], read),
        rule([""], ["pods", "nodes", "services", "namespaces", "endpoints"], read),
        rule(["discovery.k8s.io"], ["endpointslices"], read),
        rule(["networking.k8s.io"], ["ingresses", "ingressclasses"], read),
        rule(["networking.k8s.io"], ["ingresses/status"], ["*"]),
        rule([""], ["configmaps"], ["create", "get", "list", "watch", "update"]),
        rule(["authentication.k8s.io"], ["tokenreviews"], ["create"]),
        rule(["authorization.k8s.io"], ["subjectaccessreviews"], ["create"]),
        rule(["gateway.networking.k8s.io", "gateway.networking.x-k8s.io"], ["*"], read),
        rule(["gateway.networking.x-k8s.io"], ["xbackendtrafficpolicies/status"], [
          "update",
          "patch",
        ]),
        rule(["gateway.networking.k8s.io"], gatewayStatus, ["update", "patch"]),
        rule(["gateway.networking.k8s.io"], ["gatewayclasses"], [
          "create",
          "update",
          "patch",
          "delete",
        ]),
        rule(["inference.networking.k8s.io"], ["inferencepools"], read),
        rule(["inference.networking.k8s.io"], ["inferencepools/status"], ["update", "patch"]),
        rule([""], ["secrets"], read),
        rule(["multicluster.x-k8s.io"], ["serviceexports"], [...read, "create", "delete"]),
        rule(["multicluster.x-k8s.io"], ["serviceimports"], read),
      ],
    },
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: gatewayRole, labels },
      rules: [
        rule(["apps"], ["deployments"], write),
        rule(["autoscaling"], ["horizontalpodautoscalers"], write),
        rule(["policy"], ["poddisruptionbudgets"], write),
        rule([""], ["services"], write),
        rule([""], ["serviceaccounts"], write),
      ],
    },
    binding("ClusterRole", clusterRole),
    binding("ClusterRole", gatewayRole),
    {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "istiod", namespace: ns, labels },
      rules: [
        rule(["networking.istio.io"], ["gateways"], ["create"]),
        rule([""], ["secrets"], ["create", "get", "watch", "list", "update", "delete"]),
        rule([""], ["configmaps"], ["delete"]),
        rule(["coordination.k8s.io"], ["leases"], ["get", "update", "patch", "create"]),
      ],
    },
    binding("Role", "istiod"),
  ];
}

/** istiod's mesh config (`--meshConfig`): Istio's defaults but for the root namespace. */
export function meshConfigYaml(rootNamespace: string = MESH_ROOT_NAMESPACE): string {
  return stringify({ rootNamespace });
}

/** The first non-loopback IPv4 address of this machine, if any (see {@link IstiodInfo}). */
export function nonLoopbackAddress(): string | undefined {
  return Deno.networkInterfaces().find((i) => i.family === "IPv4" && !i.address.startsWith("127."))
    ?.address;
}

/** Where istiod's files go: kubeconfig, mesh config, mesh networks. */
function istiodDir(dir: string): string {
  return join(internalDir(dir), "istiod");
}

/** Everything needed to derive istiod's command line. */
export interface IstiodLayout {
  dir: string;
  bin: string;
  ports: IstiodPorts;
  kubeconfig: string;
  meshConfig: string;
  networksConfig: string;
  debugAllowedNamespaces: string[];
  /** `POD_NAME` and the name of its log; default {@link ISTIOD_POD_NAME} and `istiod.log`. */
  podName?: string;
}

/**
 * istiod's command line and environment (each explained in docs/istiod.md): every listener on a
 * loopback port of its own, no TLS listener (no CA, no certificates), no webhooks, no injector,
 * debug endpoint authentication on.
 */
export function istiodSpec(l: IstiodLayout): ProcessSpec & { health: string } {
  const loop = (port: number) => `127.0.0.1:${port}`;
  return {
    name: l.podName ?? "istiod",
    bin: l.bin,
    log: join(l.dir, "logs", l.podName ? `${l.podName}.log` : "istiod.log"),
    health: `http://${loop(l.ports.http)}/ready`,
    args: [
      "discovery",
      `--kubeconfig=${l.kubeconfig}`,
      `--meshConfig=${l.meshConfig}`,
      `--networksConfig=${l.networksConfig}`,
      `--grpcAddr=${loop(l.ports.xds)}`,
      `--httpAddr=${loop(l.ports.http)}`,
      `--monitoringAddr=${loop(l.ports.monitoring)}`,
      "--httpsAddr=",
      "--secureGRPCAddr=",
      "--ctrlz_address=127.0.0.1",
      `--ctrlz_port=${l.ports.ctrlz}`,
      "--domain=cluster.local",
      "--shutdownDuration=1s",
    ],
    env: {
      POD_NAMESPACE: ISTIOD_NAMESPACE,
      POD_NAME: l.podName ?? ISTIOD_POD_NAME,
      SERVICE_ACCOUNT: ISTIOD_SERVICE_ACCOUNT,
      REVISION: "default",
      CLUSTER_ID: ISTIOD_CLUSTER_ID,
      PILOT_CERT_PROVIDER: "istiod",
      ENABLE_CA_SERVER: "false",
      VALIDATION_WEBHOOK_CONFIG_NAME: "",
      INJECTION_WEBHOOK_CONFIG_NAME: "",
      INJECT_ENABLED: "false",
      PILOT_ENABLE_ANALYSIS: "false",
      ENABLE_DEBUG_ENDPOINT_AUTH: "true",
      DEBUG_ENDPOINT_AUTH_ALLOWED_NAMESPACES: l.debugAllowedNamespaces.join(","),
      TOKEN_AUDIENCES: ISTIO_TOKEN_AUDIENCE,
    },
  };
}

/** Runs kubectl as the admin; throws on failure, returns stdout. */
export type AdminKubectl = (args: string[], opts?: { stdin?: string }) => Promise<string>;

/** What {@link startIstiod} needs of the cluster being started. */
export interface IstiodStart {
  dir: string;
  bin: string;
  server: string;
  caPem: string;
  kubectl: AdminKubectl;
  log: (msg: string) => void;
  options: MeshOptions;
  /** Called once the process runs, before it is ready (to record its pid). */
  onStarted?: (st: IstiodState) => Promise<void>;
}

/** A token of `namespace/serviceAccount` for istiod (audience `istio-ca`) from TokenRequest. */
export async function istioToken(
  k: AdminKubectl,
  namespace: string,
  serviceAccount: string,
  duration = "1h",
): Promise<string> {
  const token = (await k([
    "create",
    "token",
    serviceAccount,
    "-n",
    namespace,
    `--audience=${ISTIO_TOKEN_AUDIENCE}`,
    `--duration=${duration}`,
  ])).trim();
  if (!/^[\w-]+\.[\w-]+\.[\w-]+$/.test(token)) {
    throw new Error(`kubectl create token gave no token: ${token.slice(0, 80)}`);
  }
  return token;
}

/** The line istiod logs once its caches are synced, and the duration it gives. */
const SYNCED = /All caches have been synced up in ([0-9.]+m?s)/;

/**
 * Creates istiod's identity (ServiceAccount, roles, a TokenRequest token in its own kubeconfig),
 * writes its mesh config, starts it and waits until `/ready` answers 200: its informers, Istio's
 * CRDs included, are synced. Returns its state (pid, addresses, measured ready time).
 */
export async function startIstiod(s: IstiodStart): Promise<IstiodState> {
  const files = istiodDir(s.dir);
  await Deno.mkdir(files, { recursive: true });
  await s.kubectl(["apply", "-f", "-"], {
    stdin: istiodRbac().map((d) => JSON.stringify(d)).join("\n"),
  });
  // The API server's own audience: istiod calls it with this token, as a Pod would with its own.
  const token = (await s.kubectl([
    "create",
    "token",
    ISTIOD_SERVICE_ACCOUNT,
    "-n",
    ISTIOD_NAMESPACE,
    "--duration=720h",
  ])).trim();
  const kubeconfig = join(files, "kubeconfig");
  await writeKubeconfig(kubeconfig, s.server, s.caPem, {
    name: ISTIOD_USER,
    groups: [],
    token,
  });
  const meshConfig = join(files, "mesh.yaml");
  const networksConfig = join(files, "meshNetworks.yaml");
  await Deno.writeTextFile(meshConfig, meshConfigYaml());
  await Deno.writeTextFile(networksConfig, stringify({ networks: {} }));
  const [xds, http, monitoring, ctrlz] = freePorts(4);
  const ports = { xds, http, monitoring, ctrlz };
  const debugAllowedNamespaces = s.options.debugAllowedNamespaces ?? [OPERATOR_NAMESPACE];
  const spec = istiodSpec({
    dir: s.dir,
    bin: s.bin,
    ports,
    kubeconfig,
    meshConfig,
    networksConfig,
    debugAllowedNamespaces,
  });
  const t0 = performance.now();
  const pid = await startProcess(spec);
  const state: IstiodState = {
    ...spec,
    pid,
    kubeconfig,
    xds: `127.0.0.1:${xds}`,
    debug: `http://127.0.0.1:${monitoring}`,
    ready: spec.health,
    ports,
    clusterId: ISTIOD_CLUSTER_ID,
    namespace: ISTIOD_NAMESPACE,
    rootNamespace: MESH_ROOT_NAMESPACE,
    debugAllowedNamespaces,
    tokenAudience: ISTIO_TOKEN_AUDIENCE,
    authSource: nonLoopbackAddress(),
    readySeconds: 0,
  };
  await s.onStarted?.(state);
  state.readySeconds = await waitIstiodReady(state, t0);
  const synced = SYNCED.exec(await Deno.readTextFile(spec.log))?.[1];
  s.log(
    `istiod ready (pid ${pid}, ${state.readySeconds.toFixed(1)}s; caches with Istio's CRDs ` +
      `synced in ${synced ?? "?"}): xDS ${state.xds}, debug ${state.debug}`,
  );
  return state;
}

/** Waits for `/ready`; returns the seconds since `t0`. */
async function waitIstiodReady(st: IstiodState, t0: number): Promise<number> {
  await waitHealthy({
    name: "istiod",
    url: st.health,
    pid: st.pid,
    log: st.log,
    timeoutMs: 120_000,
  });
  return (performance.now() - t0) / 1000;
}

/** Stops istiod by pid (SIGTERM, then SIGKILL); true once it is gone. */
export function stopIstiod(st: IstiodState): Promise<boolean> {
  return stopProcess(st.pid, st.bin, 15_000);
}

/** Stops istiod and starts it again with the same command line; returns the new state. */
export async function restartIstiod(st: IstiodState): Promise<IstiodState> {
  if (!await stopIstiod(st)) throw new Error(`istiod (pid ${st.pid}) did not stop`);
  const t0 = performance.now();
  const pid = await startProcess(st);
  const next = { ...st, pid };
  next.readySeconds = await waitIstiodReady(next, t0);
  return next;
}

/**
 * Another replica of the same istiod beside `st`, as istiod's Deployment scaled up has: the same
 * binary, identity, mesh config and settings, its own loopback ports, `POD_NAME` and log. Resolves
 * once it is ready; stop it with {@link stopIstiod} (the cluster's `down` knows only the first).
 */
export async function startIstiodReplica(st: IstiodState, podName: string): Promise<IstiodState> {
  const arg = (name: string) =>
    st.args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? "";
  const [xds, http, monitoring, ctrlz] = freePorts(4);
  const ports = { xds, http, monitoring, ctrlz };
  const spec = istiodSpec({
    dir: dirname(dirname(st.log)),
    bin: st.bin,
    ports,
    kubeconfig: st.kubeconfig,
    meshConfig: arg("meshConfig"),
    networksConfig: arg("networksConfig"),
    debugAllowedNamespaces: st.debugAllowedNamespaces,
    podName,
  });
  const t0 = performance.now();
  const pid = await startProcess(spec);
  const next: IstiodState = {
    ...st,
    ...spec,
    pid,
    xds: `127.0.0.1:${xds}`,
    debug: `http://127.0.0.1:${monitoring}`,
    ready: spec.health,
    ports,
    readySeconds: 0,
  };
  next.readySeconds = await waitIstiodReady(next, t0);
  return next;
}

/** Whether istiod's process runs. */
export function istiodAlive(st: IstiodState): boolean {
  return isAlive(st.pid);
}

/** The last lines of istiod's log. */
export function istiodLogTail(st: IstiodState, lines = 30): Promise<string> {
  return tailFile(st.log, lines);
}
