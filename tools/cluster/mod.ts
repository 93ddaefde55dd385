/**
 * A real local Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager,
 * kube-scheduler, kwok) built from Go modules, for end-to-end tests.
 *
 * @example
 * ```ts
 * const cluster = await up({ dir: ".cache/cluster/my-test" });
 * try {
 *   const r = await cluster.kubectl(["get", "nodes"]);
 * } finally {
 *   await cluster.down();
 * }
 * ```
 */
import { resolve } from "node:path";
import { kubeconfigPaths, type Users } from "./auth.ts";
import { type AuditEvent, countWrites, readWrites, type WriteFilter } from "./audit.ts";
import { auditLogPath } from "./components.ts";
import { type KubectlOptions, type KubectlResult, mustKubectl, runKubectl } from "./kubectl.ts";
import {
  type Log,
  restartComponent,
  startCluster,
  stopCluster,
  type StopOptions,
  usersPath,
} from "./lifecycle.ts";
import { DEFAULT_CLUSTER_DIR } from "./paths.ts";
import { type ClusterState, readState, statePath, writeState } from "./state.ts";
import {
  type IstiodInfo,
  type IstiodState,
  istioToken,
  type MeshOptions,
  restartIstiod,
} from "./istiod.ts";
import {
  REAL_NODE_LABEL,
  REAL_NODE_TAINT,
  realNodeNamespaceAnnotations,
  realNodePlacement,
} from "./node/layout.ts";
import {
  loadImage,
  PAUSE_IMAGE,
  PODCHECK_IMAGE,
  podcheckArchive,
  type RealNodeOptions,
  retagImage,
} from "./node/node.ts";

export { type Binaries, buildStatus, ensureBuilt, readVersions, type Versions } from "./build.ts";
export { clusterStatus, type ComponentStatus, type StopOptions } from "./lifecycle.ts";
export { GATEWAY, MESH_NAMESPACES, MESH_ROOT_NAMESPACE, NODE_NAME } from "./mesh.ts";
export {
  ISTIO_TOKEN_AUDIENCE,
  ISTIOD_CLUSTER_ID,
  ISTIOD_NAMESPACE,
  ISTIOD_USER,
  type IstiodInfo,
  type MeshOptions,
} from "./istiod.ts";
export { OPERATOR_USER } from "./operator_identity.ts";
export {
  INSTALL_HINT,
  REAL_NODE_LABEL,
  REAL_NODE_NAME,
  REAL_NODE_TAINT,
  realNodeNamespaceAnnotations,
  realNodePlacement,
} from "./node/layout.ts";
export { nodeBuildStatus } from "./node/build.ts";
export { PAUSE_IMAGE, PODCHECK_IMAGE, type RealNodeOptions } from "./node/node.ts";
export type { AuditEvent, KubectlOptions, KubectlResult, WriteFilter };

/** A running cluster. */
export interface ClusterHandle {
  /** Absolute cluster directory (state.json, kubeconfigs, pki/, logs/). */
  dir: string;
  /** Admin kubeconfig (user `admin`, group system:masters). */
  kubeconfig: string;
  /**
   * Operator kubeconfig: deploy/'s ServiceAccount (user OPERATOR_USER,
   * `system:serviceaccount:platform-system:platform-operator`), bound by deploy/'s RBAC, with a
   * token from the TokenRequest API (operator_identity.ts): not an admin, not in system:masters.
   */
  operatorKubeconfig: string;
  /** API server URL, `https://127.0.0.1:<port>`. */
  server: string;
  /** CA certificate (PEM file) that signed the API server's serving certificate. */
  caCert: string;
  /** Bearer token of the admin (the operator's is in `operatorKubeconfig`). */
  tokens: { admin: string };
  /** Path of the built kubectl. */
  kubectlPath: string;
  /** Path of the apiserver audit log (write verbs only). */
  auditLog: string;
  /** Runs kubectl with the admin kubeconfig (or `opts.kubeconfig`); never throws on exit code. */
  kubectl(args: string[], opts?: KubectlOptions): Promise<KubectlResult>;
  /** Stops kube-apiserver and starts it again on the same port; resolves once /readyz is OK. */
  restartApiserver(): Promise<void>;
  /** Number of write requests by `f.user` in the audit log (optionally since `f.sinceMs`). */
  countWrites(f: WriteFilter): Promise<number>;
  /** The matching write events themselves. */
  writes(f: WriteFilter): Promise<AuditEvent[]>;
  /** Stops all processes (by pid) and removes the cluster's data. */
  down(opts?: StopOptions): Promise<void>;
  /** The node with kubelet and containerd; only when started with `realNode`. */
  realNode?: RealNode;
  /** The real istiod; only when started with `mesh`. */
  istiod?: Istiod;
}

/** An answer of istiod's debug port. */
export interface IstiodResponse {
  status: number;
  body: string;
}

/**
 * The cluster's istiod (`up({ mesh: true })`): its addresses (`xds`, `debug`, `ready`), settings
 * and helpers for its debug endpoints.
 */
export interface Istiod extends IstiodInfo {
  /** Its current pid (changes on restart). */
  pid: number;
  /** Its log file. */
  log: string;
  /** A token of `namespace/serviceAccount` with audience `istio-ca` (TokenRequest, 1 h). */
  token(namespace: string, serviceAccount: string): Promise<string>;
  /**
   * An HTTP client (for fetch's `client`) whose requests come from `authSource`, so that istiod
   * authenticates them as a Pod's; throws when the machine has no non-loopback address.
   */
  authClient(): Deno.HttpClient;
  /**
   * GET `path` (e.g. `/debug/syncz`) on the monitoring port, from `authSource` with `token` as
   * bearer (istiod checks it), or from loopback with `loopback: true` (istiod checks nothing).
   */
  get(path: string, opts?: { token?: string; loopback?: boolean }): Promise<IstiodResponse>;
  /** Stops istiod and starts it again on the same ports; resolves once it is ready. */
  restart(): Promise<void>;
}

/** The real node of a cluster: where Pods that must really run are placed. */
export interface RealNode {
  /** Node name (`real-node-0`). */
  name: string;
  /** Its label (match it with a nodeSelector) and its NoSchedule taint (tolerate it). */
  label: typeof REAL_NODE_LABEL;
  taint: typeof REAL_NODE_TAINT;
  /** The nodeSelector and tolerations to put into a Pod spec to run it there. */
  placement: typeof realNodePlacement;
  /**
   * Annotates namespace `ns` (which must exist) so that its Pods created from now on run on the
   * real node, their manifests unchanged (see realNodeNamespaceAnnotations).
   */
  placeNamespace(ns: string): Promise<void>;
  /** Pod network: the bridge, its subnet and the host's address on it. */
  network: { bridge: string; subnet: string; hostIp: string };
  /**
   * Imports an image archive (`podman save`/`docker save` or OCI layout) into the node's
   * containerd; returns the image names. Pods use them with `imagePullPolicy: Never` (no registry
   * is reachable).
   */
  loadImage(archive: string): Promise<string[]>;
  /** Gives an image the node holds a further name `to`, as a rebuild with another tag would. */
  tagImage(from: string, to: string): Promise<void>;
  /** Image archive of the test workload `podcheckImage` (not loaded until asked). */
  podcheckArchive: string;
  /** The test workload's image name (see tools/cluster/go/nodeimages/podcheck). */
  podcheckImage: string;
  /** The sandbox image, loaded at start. */
  pauseImage: string;
}

/** Options of {@link up}. */
export interface UpOptions {
  /** Cluster directory; default `.cache/cluster/default`. */
  dir?: string;
  /** Progress messages; default silent. */
  log?: Log;
  /**
   * Also start a real node (kubelet, containerd, runc; Debian packages containerd, runc and
   * containernetworking-plugins), tainted so only Pods that tolerate it land there; turns
   * ServiceAccount admission on. `true` or options (e.g. other program paths).
   */
  realNode?: boolean | RealNodeOptions;
  /**
   * Also run a real istiod (pilot-discovery from the pinned istio.io/istio, built with
   * tools/istio-check) with Istio's own CRDs instead of the stand-in EnvoyFilter CRD. `true` or
   * options (e.g. `debugAllowedNamespaces`).
   */
  mesh?: boolean | MeshOptions;
}

function istiodOf(state: ClusterState, k: (args: string[]) => Promise<string>): Istiod | undefined {
  const st = state.istiod;
  if (!st) return undefined;
  let current: IstiodState = st;
  const authClient = () => {
    if (!current.authSource) {
      throw new Error("no non-loopback address on this machine: istiod cannot be asked as a Pod");
    }
    return Deno.createHttpClient({ localAddress: current.authSource });
  };
  const { pid: _pid, bin: _bin, args: _args, env: _env, health: _health, kubeconfig: _k, ...info } =
    st;
  const h: Istiod = {
    ...info,
    pid: st.pid,
    log: st.log,
    token: (ns, sa) => istioToken(k, ns, sa),
    authClient,
    get: async (path, opts = {}) => {
      const client = opts.loopback ? undefined : authClient();
      try {
        const headers: Record<string, string> = opts.token
          ? { authorization: `Bearer ${opts.token}` }
          : {};
        const res = await fetch(`${current.debug}${path}`, {
          client,
          headers,
          signal: AbortSignal.timeout(10_000),
        });
        return { status: res.status, body: await res.text() };
      } finally {
        client?.close();
      }
    },
    restart: async () => {
      current = await restartIstiod(current);
      const now = await readState(state.dir);
      if (now) await writeState({ ...now, istiod: current });
      h.pid = current.pid;
      h.readySeconds = current.readySeconds;
    },
  };
  return h;
}

function realNodeOf(state: ClusterState): RealNode | undefined {
  const n = state.realNode;
  if (!n?.net) return undefined;
  return {
    name: n.name,
    label: REAL_NODE_LABEL,
    taint: REAL_NODE_TAINT,
    placement: realNodePlacement,
    placeNamespace: async (ns) => {
      const notes = Object.entries(realNodeNamespaceAnnotations()).map(([k, v]) => `${k}=${v}`);
      await mustKubectl(state.kubectl, kubeconfigPaths(state.dir).admin, [
        "annotate",
        "--overwrite",
        "namespace",
        ns,
        ...notes,
      ]);
    },
    network: n.net,
    loadImage: async (archive) => loadImage(await readState(state.dir) ?? state, archive),
    tagImage: async (from, to) => retagImage(await readState(state.dir) ?? state, from, to),
    podcheckArchive: podcheckArchive(state.dir),
    podcheckImage: PODCHECK_IMAGE,
    pauseImage: PAUSE_IMAGE,
  };
}

function handle(state: ClusterState, users: Users): ClusterHandle {
  const { dir, server, caCert, kubectl } = state;
  const kc = kubeconfigPaths(dir);
  const audit = auditLogPath(dir);
  const h: ClusterHandle = {
    dir,
    kubeconfig: kc.admin,
    operatorKubeconfig: kc.operator,
    server,
    caCert,
    tokens: { admin: users.admin.token },
    kubectlPath: kubectl,
    auditLog: audit,
    kubectl: (args, opts) => runKubectl(kubectl, kc.admin, args, opts),
    restartApiserver: () => restartComponent(dir, "kube-apiserver"),
    countWrites: (f) => countWrites(audit, f),
    writes: (f) => readWrites(audit, f),
    down: async (opts) => {
      await stopCluster(dir, opts);
    },
    realNode: realNodeOf(state),
    istiod: istiodOf(state, (args) => mustKubectl(kubectl, kc.admin, args)),
  };
  return h;
}

/**
 * Builds the binaries if needed, starts a cluster in `opts.dir` (stopping one already running
 * there) with a Ready kwok node and the simulated mesh (with `mesh`, a real istiod and Istio's
 * CRDs), and returns its handle.
 */
export async function up(opts: UpOptions = {}): Promise<ClusterHandle> {
  const dir = resolve(opts.dir ?? DEFAULT_CLUSTER_DIR);
  const realNode = opts.realNode === true ? {} : opts.realNode || undefined;
  const mesh = opts.mesh === true ? {} : opts.mesh || undefined;
  const { state, users } = await startCluster(dir, opts.log ?? (() => {}), realNode, mesh);
  return handle(state, users);
}

/** A handle on a cluster already started in `dir` (e.g. by `cluster.ts up`). */
export async function attach(dirIn: string = DEFAULT_CLUSTER_DIR): Promise<ClusterHandle> {
  const dir = resolve(dirIn);
  const state = await readState(dir);
  if (!state) throw new Error(`no running cluster: ${statePath(dir)} is missing`);
  const users = JSON.parse(await Deno.readTextFile(usersPath(dir))) as Users;
  return handle(state, users);
}

/** Stops the cluster in `dir` (default `.cache/cluster/default`); returns the stopped names. */
export function down(dir: string = DEFAULT_CLUSTER_DIR, opts?: StopOptions): Promise<string[]> {
  return stopCluster(dir, opts);
}
