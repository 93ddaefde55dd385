/** Starting, stopping, restarting and inspecting the processes of one cluster directory. */
import { createHash } from "node:crypto";
import { join, resolve } from "node:path";
import { ensureBuilt } from "./build.ts";
import {
  kubeconfigPaths,
  newUsers,
  type Users,
  writeAuditPolicy,
  writeKubeconfig,
  writeTokenFile,
} from "./auth.ts";
import { type ComponentName, componentSpecs, internalDir } from "./components.ts";
import { installMesh } from "./mesh.ts";
import { type MeshOptions, startIstiod, stopIstiod } from "./istiod.ts";
import { ensurePilotDiscovery } from "../istio-check/build.ts";
import { installOperatorIdentity, OPERATOR_USER } from "./operator_identity.ts";
import { frontProxyClient, generatePki } from "./pki.ts";
import { ensureNodeBuilt } from "./node/build.ts";
import { apiserverKubeletClient } from "./node/kubelet.ts";
import { mountsUnder } from "./node/teardown.ts";
import { type RealNodeOptions, resolvePrograms, startRealNode, stopRealNode } from "./node/node.ts";
import { checkAloneOnMachine } from "./node/proxy.ts";
import { acquireRealNodeLock, releaseRealNodeLock } from "./node/machine_lock.ts";
import { freePorts, isAlive, probe, startProcess, stopProcess, waitHealthy } from "../processes.ts";
import { mustKubectl } from "./kubectl.ts";
import { exists } from "../files.ts";
import {
  type ClusterState,
  type ComponentState,
  readState,
  statePath,
  writeState,
} from "./state.ts";

/** Progress callback. */
export type Log = (msg: string) => void;

/** Files and folders `up` creates inside a cluster directory (and `down` removes). */
const OWNED = [
  "state.json",
  "kubeconfig",
  "kubeconfig-operator",
  "pki",
  "internal",
  "etcd-data",
  "node",
];

/** File holding the identities (tokens) of a cluster directory. */
export function usersPath(dir: string): string {
  return join(internalDir(dir), "users.json");
}

async function etcdDataDir(dir: string): Promise<string> {
  const shm = "/dev/shm";
  try {
    const probeDir = await Deno.makeTempDir({ dir: shm, prefix: "cluster-probe-" });
    await Deno.remove(probeDir);
  } catch {
    return join(dir, "etcd-data");
  }
  const id = createHash("sha256").update(dir).digest("hex").slice(0, 12);
  return join(shm, `cluster-etcd-${id}`);
}

async function healthClient(caCert: string): Promise<Deno.HttpClient> {
  return Deno.createHttpClient({ caCerts: [await Deno.readTextFile(caCert)] });
}

/**
 * Starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok in `dir`, then
 * the mesh, istiod (with `mesh`) and the node. A cluster already running in `dir` is stopped
 * first.
 */
export async function startCluster(
  dirIn: string,
  log: Log,
  realNode?: RealNodeOptions,
  mesh?: MeshOptions,
): Promise<{ state: ClusterState; users: Users }> {
  const dir = resolve(dirIn);
  // Missing packages fail here, before anything is built or started.
  const programs = realNode ? await resolvePrograms(realNode) : undefined;
  if (realNode) {
    // Another process's real node: wait for it (machine_lock.ts), then make sure.
    await acquireRealNodeLock(dir, log);
    await checkAloneOnMachine(dir).catch((e) => {
      releaseRealNodeLock(dir);
      throw e;
    });
  }
  const bins = await ensureBuilt(log);
  const nodeBins = realNode ? await ensureNodeBuilt(log) : undefined;
  // istiod is built with tools/istio-check, from the same pinned istio.io/istio.
  const pilotDiscovery = mesh ? await ensurePilotDiscovery(log) : undefined;
  if (await readState(dir)) {
    log(`stopping the previous cluster in ${dir}`);
    await stopCluster(dir, { keepLogs: false });
  }
  await removeOwned(dir, false);
  await Deno.mkdir(join(dir, "logs"), { recursive: true });
  await Deno.mkdir(internalDir(dir), { recursive: true });
  const started = performance.now();
  const pki = await generatePki(join(dir, "pki"));
  const kubeletClient = realNode ? await apiserverKubeletClient(pki, join(dir, "pki")) : undefined;
  const proxyClient = realNode ? await frontProxyClient(pki, join(dir, "pki")) : undefined;
  const users = newUsers();
  await writeTokenFile(join(internalDir(dir), "tokens.csv"), users);
  await Deno.writeTextFile(usersPath(dir), JSON.stringify(users, null, 2), { mode: 0o600 });
  await writeAuditPolicy(join(internalDir(dir), "audit-policy.yaml"));
  const [etcdClient, etcdPeer, apiserver, controllerManager, scheduler, kwok] = freePorts(6);
  const ports = { etcdClient, etcdPeer, apiserver, controllerManager, scheduler, kwok };
  const server = `https://127.0.0.1:${apiserver}`;
  const caPem = await Deno.readTextFile(pki.caCert);
  const kc = kubeconfigPaths(dir);
  for (const key of Object.keys(users) as (keyof Users)[]) {
    await writeKubeconfig(kc[key], server, caPem, users[key]);
  }
  const data = await etcdDataDir(dir);
  await Deno.remove(data, { recursive: true }).catch(() => {});
  const state: ClusterState = {
    dir,
    server,
    etcdDataDir: data,
    ports,
    caCert: pki.caCert,
    kubectl: bins.kubectl,
    startedAt: new Date().toISOString(),
    components: [],
  };
  const client = await healthClient(pki.caCert);
  try {
    const realNodeCerts = kubeletClient && proxyClient && {
      kubeletClientCert: kubeletClient.cert,
      kubeletClientKey: kubeletClient.key,
      proxyClientCert: proxyClient.cert,
      proxyClientKey: proxyClient.key,
    };
    const layout = { dir, etcdDataDir: data, ports, pki, bins, realNode: realNodeCerts };
    for (const spec of componentSpecs(layout)) {
      const t0 = performance.now();
      const pid = await startProcess(spec);
      state.components.push({ ...spec, pid });
      await writeState(state);
      await waitHealthy({ ...spec, url: spec.health, pid, client, timeoutMs: 90_000 });
      log(`${spec.name} ready (pid ${pid}, ${((performance.now() - t0) / 1000).toFixed(1)}s)`);
    }
    const k = (args: string[], o?: { stdin?: string }) =>
      mustKubectl(bins.kubectl, kc.admin, args, o);
    await installMesh(k, log, mesh ? "istio" : "stand-in");
    const token = await installOperatorIdentity(k);
    await writeKubeconfig(kc.operator, server, caPem, {
      name: OPERATOR_USER,
      groups: [],
      token,
    });
    if (mesh && pilotDiscovery) {
      const options = mesh;
      state.istiod = await startIstiod({
        dir,
        bin: pilotDiscovery,
        server,
        caPem,
        kubectl: k,
        log,
        options,
        onStarted: async (started) => {
          // Recorded before it is ready: a failed start still stops it by pid.
          state.istiod = started;
          await writeState(state);
        },
      });
      await writeState(state);
    }
    if (programs && nodeBins) {
      await startRealNode({ state, pki, bins: nodeBins, programs, kubectl: k, log }, realNode);
    }
  } catch (e) {
    log(`start failed, stopping what was started; logs stay in ${join(dir, "logs")}`);
    await stopCluster(dir, { keepLogs: true });
    throw e;
  } finally {
    client.close();
  }
  log(`cluster up in ${((performance.now() - started) / 1000).toFixed(1)}s: ${server}`);
  return { state, users };
}

async function removeOwned(dir: string, keepLogs: boolean): Promise<void> {
  // Never recurse into a mount a crashed real node left: `down` unmounts, or says what it could not.
  const mounted = await mountsUnder(join(dir, "node"));
  if (mounted.length > 0) throw new Error(`still mounted under ${dir}: ${mounted.join(", ")}`);
  for (const name of [...OWNED, ...(keepLogs ? [] : ["logs"])]) {
    await Deno.remove(join(dir, name), { recursive: true }).catch(() => {});
  }
  await Deno.remove(dir).catch(() => {}); // only succeeds when empty
}

/** Options of {@link stopCluster}. */
export interface StopOptions {
  /** Keep `DIR/logs` (process logs and the audit log). Default false. */
  keepLogs?: boolean;
}

/** Stops every process of `dir` by pid (SIGTERM, then SIGKILL) and removes its data. */
export async function stopCluster(dirIn: string, opts: StopOptions = {}): Promise<string[]> {
  const dir = resolve(dirIn);
  const state = await readState(dir);
  const stuck: string[] = [];
  let nodeError: unknown;
  if (state?.istiod && !await stopIstiod(state.istiod)) {
    stuck.push(`istiod (pid ${state.istiod.pid})`);
  }
  if (state?.realNode) {
    // First, while the API server still runs: the node's Pods are deleted through it.
    const apiserver = state.components.find((c) => c.name === "kube-apiserver");
    const kubectl = apiserver && isAlive(apiserver.pid)
      ? (args: string[]) => mustKubectl(state.kubectl, kubeconfigPaths(dir).admin, args)
      : undefined;
    await stopRealNode(state, kubectl).catch((e) => nodeError = e);
  }
  if (state) {
    for (const c of [...state.components].reverse()) {
      if (!await stopProcess(c.pid, c.bin, 15_000)) stuck.push(`${c.name} (pid ${c.pid})`);
    }
    if (stuck.length > 0) throw new Error(`could not stop: ${stuck.join(", ")}`);
    await Deno.remove(state.etcdDataDir, { recursive: true }).catch(() => {});
  }
  releaseRealNodeLock(dir);
  if (nodeError) throw nodeError;
  if (await exists(dir)) await removeOwned(dir, opts.keepLogs ?? false);
  return state ? [...state.istiod ? ["istiod"] : [], ...state.components.map((c) => c.name)] : [];
}

/** Restarts one component with its original command line and waits until it is healthy. */
export async function restartComponent(dirIn: string, name: ComponentName): Promise<void> {
  const dir = resolve(dirIn);
  const state = await readState(dir);
  if (!state) throw new Error(`no cluster state in ${statePath(dir)}`);
  const idx = state.components.findIndex((c) => c.name === name);
  if (idx < 0) throw new Error(`no component ${name} in ${statePath(dir)}`);
  const old: ComponentState = state.components[idx];
  if (!await stopProcess(old.pid, old.bin, 30_000)) {
    throw new Error(`${name} (pid ${old.pid}) did not stop`);
  }
  const pid = await startProcess(old);
  state.components[idx] = { ...old, pid };
  await writeState(state);
  const client = await healthClient(state.caCert);
  try {
    await waitHealthy({ ...old, url: old.health, pid, client, timeoutMs: 90_000 });
  } finally {
    client.close();
  }
}

/** Liveness and health of one component. */
export interface ComponentStatus {
  /** A control-plane component, `containerd`/`kubelet` of the real node, or `istiod`. */
  name: string;
  pid: number;
  alive: boolean;
  healthy: boolean;
  health: string;
  log: string;
}

/** Status of every component of `dir` (empty when no cluster state exists). */
export async function clusterStatus(dirIn: string): Promise<ComponentStatus[]> {
  const state = await readState(resolve(dirIn));
  if (!state) return [];
  const client = await healthClient(state.caCert).catch(() => undefined);
  try {
    const node = state.realNode;
    const nodeProcs = [node?.containerd, node?.kubelet, node?.apiRelay, node?.kubeProxy].flatMap((
      p,
    ) => p ? [{ ...p, health: p.health ?? "" }] : []);
    const istiod = state.istiod ? [state.istiod] : [];
    return await Promise.all([...state.components, ...nodeProcs, ...istiod].map(async (c) => {
      const alive = isAlive(c.pid);
      // containerd and apirelay have no HTTP health endpoint: running is all that is checked.
      const healthy = alive && (c.health === "" || await probe(c.health, client));
      return { name: c.name, pid: c.pid, alive, healthy, health: c.health, log: c.log };
    }));
  } finally {
    client?.close();
  }
}
