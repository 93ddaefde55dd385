/**
 * Starting and stopping the real node of a cluster: the pod network, containerd with the pause
 * image made here, kubelet at the API server's version, registered as `real-node-0` with a label
 * and a NoSchedule taint so that only Pods asking for it run there, then what makes Services and
 * names work as in any cluster: kube-proxy, the `kubernetes` Service's endpoint (proxy.ts) and
 * CoreDNS behind `kube-dns` (dns.ts).
 */
import { join } from "node:path";
import { freePorts, isAlive, startProcess, waitHealthy } from "../../processes.ts";
import { tailFile } from "../../files.ts";
import type { Pki } from "../pki.ts";
import { type ClusterState, writeState } from "../state.ts";
import type { NodeBinaries } from "./build.ts";
import { claimPodNetwork, writeCniConfig } from "./cni.ts";
import {
  checkPrograms,
  containerdConfig,
  containerdEnv,
  importImage,
  tagImage,
  waitContainerd,
} from "./containerd.ts";
import { prepareKubelet } from "./kubelet.ts";
import { DEBIAN_PROGRAMS, type HostPrograms, nodeLayout, REAL_NODE_NAME } from "./layout.ts";
import { ociArchive } from "./oci.ts";
import { clusterDnsManifests, corednsImage } from "./dns.ts";
import {
  apiRelaySpec,
  bridgeForwarding,
  checkAloneOnMachine,
  kubernetesEndpointSlice,
  prepareKubeProxy,
} from "./proxy.ts";
import type { RealNodeState } from "./state.ts";
import { teardownNode } from "./teardown.ts";

/** The sandbox image, made here from go/nodeimages/pause. */
export const PAUSE_IMAGE = "localhost/platform-project/pause:1";

/** The test workload's image, made here from go/nodeimages/podcheck (loaded on demand). */
export const PODCHECK_IMAGE = "localhost/platform-project/podcheck:1";

/** Options of the real node. */
export interface RealNodeOptions {
  /** Where containerd, ctr, the shim, runc and the CNI plugins are; default Debian's paths. */
  programs?: Partial<HostPrograms>;
  /** How long the node may take to become Ready; default 120 s. */
  readyTimeoutMs?: number;
  /** Further kubelet flags, after the ones set here (e.g. `--v=4`). */
  kubeletFlags?: string[];
}

/** The programs `opts` names, checked: throws naming what is missing and how to install it. */
export async function resolvePrograms(opts: RealNodeOptions = {}): Promise<HostPrograms> {
  const programs = { ...DEBIAN_PROGRAMS, ...opts.programs };
  await checkPrograms(programs);
  if (Deno.uid() !== 0) {
    throw new Error("the real node needs root: containerd, runc and the Pod bridge need it");
  }
  return programs;
}

/** Path of the podcheck image archive of a cluster (written when the node starts). */
export function podcheckArchive(clusterDir: string): string {
  return join(nodeLayout(clusterDir).images, "podcheck.oci.tar");
}

/** What {@link startRealNode} needs of the started control plane. */
export interface NodeContext {
  state: ClusterState;
  pki: Pki;
  bins: NodeBinaries;
  programs: HostPrograms;
  /** Runs kubectl as admin (with `stdin` for `apply -f -`); resolves with stdout or throws. */
  kubectl: (args: string[], o?: { stdin?: string }) => Promise<string>;
  log: (msg: string) => void;
}

/** Writes the node's image archives; returns those loaded at start (the sandbox, CoreDNS). */
async function writeImages(c: NodeContext, dir: string): Promise<string[]> {
  await Deno.mkdir(dir, { recursive: true });
  const pause = join(dir, "pause.oci.tar");
  const coredns = join(dir, "coredns.oci.tar");
  // 65535 is the pause image's user upstream too: the sandbox needs no root.
  const images: [string, string, string, string, string][] = [
    [pause, PAUSE_IMAGE, "pause", c.bins.pause, "65535:65535"],
    [podcheckArchive(c.state.dir), PODCHECK_IMAGE, "podcheck", c.bins.podcheck, "65532:65532"],
    [coredns, corednsImage(c.bins.corednsVersion), "coredns", c.bins.coredns, "65532:65532"],
  ];
  for (const [file, ref, name, bin, user] of images) {
    const binary = await Deno.readFile(bin);
    await Deno.writeFile(file, ociArchive({ ref, name, binary, user }));
  }
  return [pause, coredns];
}

/**
 * Waits until the node is Ready and the node lifecycle controller has taken its own taints off
 * (`node.kubernetes.io/not-ready`, `unreachable`): Ready alone can be seen a moment before the
 * NoExecute taint goes, and a Pod scheduled then is evicted again.
 */
async function waitNodeReady(c: NodeContext, node: RealNodeState, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  const kubelet = node.kubelet!;
  let seen = "not found";
  for (;;) {
    const out = await c.kubectl(["get", "node", REAL_NODE_NAME, "--ignore-not-found", "-o", "json"])
      .catch(() => "");
    if (out.trim()) {
      const n = JSON.parse(out) as {
        spec?: { taints?: { key: string }[] };
        status?: { conditions?: { type: string; status: string }[] };
      };
      const ready = n.status?.conditions?.find((x) => x.type === "Ready")?.status ?? "Unknown";
      const lifecycle = (n.spec?.taints ?? []).map((x) => x.key).filter((k) =>
        k.startsWith("node.kubernetes.io/")
      );
      if (ready === "True" && lifecycle.length === 0) return;
      seen = `Ready=${ready}` + (lifecycle.length ? `, taints ${lifecycle.join(", ")}` : "");
    }
    const why = !isAlive(kubelet.pid)
      ? `kubelet (pid ${kubelet.pid}) exited`
      : Date.now() > deadline
      ? `node ${REAL_NODE_NAME} not Ready and untainted after ${ms / 1000} s (${seen})`
      : "";
    if (why) {
      throw new Error(`${why}; last lines of ${kubelet.log}:\n${await tailFile(kubelet.log, 20)}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * Starts the real node beside a running control plane and waits until it is Ready. On failure
 * whatever was started is stopped and removed again, and the error says what failed, with the
 * log's last lines.
 */
export async function startRealNode(c: NodeContext, opts: RealNodeOptions = {}): Promise<void> {
  const t0 = performance.now();
  const dir = c.state.dir;
  const l = nodeLayout(dir);
  // kubelet makes Unix sockets under its root (pod-resources/<10 digits>); a socket's path is
  // limited to 108 bytes, and kubelet's own error ("bind: invalid argument") does not say why.
  const longest = join(l.kubeletRoot, "pod-resources", "0123456789");
  if (longest.length > 107) {
    throw new Error(
      `the cluster directory ${dir} is too long for the real node: kubelet's sockets under it ` +
        `would need ${longest.length} bytes, more than a Unix socket path's 107; use a shorter one`,
    );
  }
  const node: RealNodeState = {
    name: REAL_NODE_NAME,
    clusterDir: dir,
    programs: c.programs,
    images: [],
  };
  c.state.realNode = node;
  await writeState(c.state);
  try {
    for (
      const d of [l.containerdRoot, l.containerdState, l.socketDir, l.kubeletRoot, l.podLogs, l.pki]
    ) {
      await Deno.mkdir(d, { recursive: true });
    }
    // kube-proxy's chains are the machine's: refuse before anything is started.
    await checkAloneOnMachine(dir);
    node.net = await claimPodNetwork(dir);
    await writeState(c.state);
    await bridgeForwarding(node.net.bridge);
    await writeCniConfig(node.net, l);
    const archives = await writeImages(c, l.images);
    await Deno.writeTextFile(l.containerdConfig, containerdConfig(l, c.programs, PAUSE_IMAGE));
    const spec = {
      name: "containerd",
      bin: c.programs.containerd,
      args: ["--config", l.containerdConfig],
      log: l.containerdLog,
      env: containerdEnv(c.programs),
    };
    node.containerd = { ...spec, pid: await startProcess(spec) };
    await writeState(c.state);
    await waitContainerd(c.programs, l, () => isAlive(node.containerd!.pid), 30_000).catch(
      async (e) => {
        throw new Error(
          `${e.message}; last lines of ${l.containerdLog}:\n${await tailFile(l.containerdLog, 20)}`,
        );
      },
    );
    for (const a of archives) node.images.push(...await importImage(c.programs, l, a));
    c.log(
      `containerd ready with ${PAUSE_IMAGE} (pid ${node.containerd.pid}, bridge ${node.net.bridge} ${node.net.subnet})`,
    );
    const [port, healthzPort, relayPort, proxyHealthz, proxyMetrics] = freePorts(5);
    const kubelet = await prepareKubelet({
      layout: l,
      pki: c.pki,
      server: c.state.server,
      net: node.net,
      kubeletBin: c.bins.kubelet,
      port,
      healthzPort,
    });
    kubelet.args.push(...opts.kubeletFlags ?? []);
    node.kubelet = { ...kubelet, pid: await startProcess(kubelet) };
    await writeState(c.state);
    await waitHealthy({
      ...kubelet,
      url: kubelet.health,
      pid: node.kubelet.pid,
      timeoutMs: 60_000,
    });
    await waitNodeReady(c, node, opts.readyTimeoutMs ?? 120_000);
    await startServices(c, node, { relayPort, proxyHealthz, proxyMetrics });
    c.log(
      `node ${REAL_NODE_NAME} Ready in ${
        ((performance.now() - t0) / 1000).toFixed(1)
      }s (kubelet ${c.bins.version}, pid ${node.kubelet.pid})`,
    );
  } catch (e) {
    c.log(`the real node did not start; stopping it (logs stay in ${join(dir, "logs")})`);
    await stopRealNode(c.state, undefined).catch((err) => c.log(err.message));
    throw e;
  }
}

/**
 * The `kubernetes` Service's endpoint (the relay), kube-proxy, then CoreDNS, each waited for:
 * kube-proxy healthy (its rules written), CoreDNS's Deployment rolled out (its Pods Ready).
 */
async function startServices(
  c: NodeContext,
  node: RealNodeState,
  ports: { relayPort: number; proxyHealthz: number; proxyMetrics: number },
): Promise<void> {
  const t0 = performance.now();
  const l = nodeLayout(c.state.dir);
  const net = node.net!;
  const relay = apiRelaySpec(l, net, c.bins.apiRelay, ports.relayPort, c.state.ports.apiserver);
  node.apiRelay = { ...relay, pid: await startProcess(relay) };
  await writeState(c.state);
  await c.kubectl(["apply", "-f", "-"], { stdin: kubernetesEndpointSlice(net, ports.relayPort) });
  const proxy = await prepareKubeProxy({
    layout: l,
    pki: c.pki,
    server: c.state.server,
    net,
    kubeProxyBin: c.bins.kubeProxy,
    healthzPort: ports.proxyHealthz,
    metricsPort: ports.proxyMetrics,
  });
  node.kubeProxy = { ...proxy, pid: await startProcess(proxy) };
  await writeState(c.state);
  await waitHealthy({ ...proxy, url: proxy.health, pid: node.kubeProxy.pid, timeoutMs: 60_000 });
  if (!isAlive(node.apiRelay.pid)) {
    throw new Error(
      `apirelay exited; last lines of ${relay.log}:\n${await tailFile(relay.log, 20)}`,
    );
  }
  c.log(
    `kube-proxy ready (pid ${node.kubeProxy.pid}, iptables); kubernetes Service via ` +
      `${net.hostIp}:${ports.relayPort} (${((performance.now() - t0) / 1000).toFixed(1)}s)`,
  );
  await c.kubectl(["apply", "-f", "-"], {
    stdin: clusterDnsManifests(corednsImage(c.bins.corednsVersion)),
  });
  await c.kubectl([
    "-n",
    "kube-system",
    "rollout",
    "status",
    "deployment/coredns",
    "--timeout=120s",
  ]).catch(async (e) => {
    const pods = await c.kubectl(["-n", "kube-system", "get", "pods", "-o", "wide"])
      .catch(() => "");
    throw new Error(`CoreDNS did not become ready: ${(e as Error).message}\n${pods}`);
  });
  c.log(`CoreDNS ${c.bins.corednsVersion} ready behind kube-dns`);
}

/**
 * Stops the real node of `state` and removes its traces. With `kubectl` (the API server still
 * up), its Pods are deleted first so the kubelet stops them in order.
 */
export async function stopRealNode(
  state: ClusterState,
  kubectl: ((args: string[]) => Promise<string>) | undefined,
): Promise<void> {
  const node = state.realNode;
  if (!node) return;
  if (kubectl && node.kubelet && isAlive(node.kubelet.pid)) {
    await kubectl([
      "delete",
      "pods",
      "--all-namespaces",
      `--field-selector=spec.nodeName=${node.name}`,
      "--grace-period=2",
      "--timeout=20s",
    ]).catch(() => {});
  }
  const problems = await teardownNode(node, nodeLayout(state.dir));
  delete state.realNode;
  await writeState(state);
  if (problems.length > 0) throw new Error(`the real node left: ${problems.join("; ")}`);
}

function runningNode(state: ClusterState): NonNullable<ClusterState["realNode"]> {
  const node = state.realNode;
  if (!node?.containerd || !isAlive(node.containerd.pid)) {
    throw new Error(`no real node runs in ${state.dir} (start the cluster with realNode: true)`);
  }
  return node;
}

/** Imports an image archive into the real node's containerd; returns the image names. */
export async function loadImage(state: ClusterState, archive: string): Promise<string[]> {
  return await importImage(runningNode(state).programs, nodeLayout(state.dir), archive);
}

/** Gives an image the real node holds a further name (`ctr images tag`). */
export async function retagImage(state: ClusterState, from: string, to: string): Promise<void> {
  await tagImage(runningNode(state).programs, nodeLayout(state.dir), from, to);
}
