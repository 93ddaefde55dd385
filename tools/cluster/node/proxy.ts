/**
 * Services on the real node, as in any cluster: kube-proxy (iptables mode, built with the kubelet)
 * runs as a process of the node with its own identity (`system:kube-proxy`, which the
 * `system:node-proxier` binding grants what it reads) and turns every Service's ClusterIP into
 * DNAT rules to the Service's endpoints.
 *
 * What is particular to this machine, and why:
 * - Pods get a route to the Service range through the bridge (cni.ts) and no default route, and
 *   the bridge alone forwards (its own `forwarding` sysctl, not the machine's `ip_forward`), so a
 *   Pod calling a ClusterIP is DNATed by the host and forwarded back onto the bridge.
 * - kube-proxy masquerades all Service traffic (`masqueradeAll`): the answer of a Pod on the same
 *   bridge then comes back through the host, which undoes the DNAT.
 * - NodePorts answer on the bridge's address only, localhost NodePorts are off (no
 *   `route_localnet` for the machine), conntrack sysctls and kube-proxy's OOM score stay as the
 *   machine has them.
 * - The API server listens on loopback only, and an endpoint may not be a loopback address, so
 *   the `kubernetes` Service's endpoint is the bridge's host address, where `apirelay` (on that
 *   device only) passes connections through to the API server. The API server runs with
 *   `--endpoint-reconciler-type=none`: the node writes that EndpointSlice.
 * - kube-proxy's chains (KUBE-SERVICES and the rest) are the machine's, not one node's: only one
 *   real node runs on a machine at a time (checkAloneOnMachine), and stopping it removes them
 *   (cleanupKubeProxyRules) once no other kube-proxy runs.
 */
import { join } from "node:path";
import { executableOf, isAlive, type ProcessSpec } from "../../processes.ts";
import { issueCert, type Pki } from "../pki.ts";
import { otherRealNodes, type PodNetwork } from "./cni.ts";
import { writeCertKubeconfig } from "./kubelet.ts";
import { type NodeLayout, REAL_NODE_NAME } from "./layout.ts";

/** What kube-proxy's and the relay's command lines depend on. */
export interface ProxyInputs {
  layout: NodeLayout;
  pki: Pick<Pki, "caCert" | "caKey">;
  server: string;
  net: PodNetwork;
  kubeProxyBin: string;
  /** /healthz on 127.0.0.1. */
  healthzPort: number;
  /** /metrics on 127.0.0.1. */
  metricsPort: number;
}

/** Writes kube-proxy's certificate, kubeconfig and configuration; returns its process spec. */
export async function prepareKubeProxy(k: ProxyInputs): Promise<ProcessSpec & { health: string }> {
  const l = k.layout;
  // The default ClusterRoleBinding system:node-proxier names this user.
  const client = await issueCert(k.pki, l.pki, {
    name: "kube-proxy-client",
    subject: "/CN=system:kube-proxy",
    usage: "clientAuth",
  });
  const kubeconfig = join(l.dir, "kube-proxy.kubeconfig");
  await writeCertKubeconfig(kubeconfig, k.server, k.pki.caCert, "kube-proxy", client);
  const config = {
    apiVersion: "kubeproxy.config.k8s.io/v1alpha1",
    kind: "KubeProxyConfiguration",
    clientConnection: { kubeconfig },
    hostnameOverride: REAL_NODE_NAME,
    mode: "iptables",
    healthzBindAddress: `127.0.0.1:${k.healthzPort}`,
    metricsBindAddress: `127.0.0.1:${k.metricsPort}`,
    detectLocalMode: "BridgeInterface",
    detectLocal: { bridgeInterface: k.net.bridge },
    clusterCIDR: k.net.subnet,
    nodePortAddresses: [`${k.net.hostIp}/32`],
    // The machine's settings stay the machine's: 0 leaves each as it is.
    oomScoreAdj: 0,
    conntrack: {
      maxPerCore: 0,
      min: 0,
      tcpEstablishedTimeout: "0s",
      tcpCloseWaitTimeout: "0s",
    },
    iptables: {
      masqueradeAll: true,
      localhostNodePorts: false,
      syncPeriod: "30s",
      minSyncPeriod: "0s",
    },
  };
  const configFile = join(l.dir, "kube-proxy-config.yaml");
  await Deno.writeTextFile(configFile, JSON.stringify(config, null, 2) + "\n");
  return {
    name: "kube-proxy",
    bin: k.kubeProxyBin,
    log: join(dirnameOf(l.kubeletLog), "kube-proxy.log"),
    health: `http://127.0.0.1:${k.healthzPort}/healthz`,
    args: [`--config=${configFile}`, "--v=1"],
  };
}

function dirnameOf(path: string): string {
  return path.slice(0, path.lastIndexOf("/"));
}

/** The relay's process spec: the bridge's `hostIp:port`, on the bridge only, to the API server. */
export function apiRelaySpec(
  l: NodeLayout,
  net: PodNetwork,
  bin: string,
  port: number,
  apiserverPort: number,
): ProcessSpec {
  return {
    name: "apirelay",
    bin,
    log: join(dirnameOf(l.kubeletLog), "apirelay.log"),
    args: [`${net.hostIp}:${port}`, net.bridge, `127.0.0.1:${apiserverPort}`],
  };
}

/** The `kubernetes` Service's EndpointSlice: the relay's address and port. */
export function kubernetesEndpointSlice(net: PodNetwork, port: number): string {
  return JSON.stringify({
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: "kubernetes",
      namespace: "default",
      labels: {
        "kubernetes.io/service-name": "kubernetes",
        "endpointslice.kubernetes.io/managed-by": "real-node.platform-project.io",
      },
    },
    addressType: "IPv4",
    endpoints: [{ addresses: [net.hostIp], conditions: { ready: true } }],
    ports: [{ name: "https", port, protocol: "TCP" }],
  });
}

/** Lets the bridge, and nothing else of the machine, forward (Pod to ClusterIP to Pod). */
export async function bridgeForwarding(bridge: string): Promise<void> {
  await Deno.writeTextFile(`/proc/sys/net/ipv4/conf/${bridge}/forwarding`, "1");
}

/** Pids of running kube-proxy processes on the machine (any real node's), but `except`. */
export function runningKubeProxies(except?: number): number[] {
  const pids: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    const pid = Number(e.name);
    if (!Number.isInteger(pid) || pid === except) continue;
    const argv0 = executableOf(pid);
    if (argv0 && argv0.endsWith("/kube-proxy") && isAlive(pid)) pids.push(pid);
  }
  return pids;
}

/**
 * Throws when another real node runs on the machine (its bridge's cluster exists) or another
 * kube-proxy does: kube-proxy's chains would be both nodes', and its rules for 10.96.0.1 would
 * take the other node's Pods' traffic too.
 */
export async function checkAloneOnMachine(clusterDir: string): Promise<void> {
  const others = await otherRealNodes(clusterDir);
  const proxies = runningKubeProxies();
  if (others.length === 0 && proxies.length === 0) return;
  const what = others.length > 0
    ? `another real node runs on this machine (cluster ${others[0]})`
    : `another kube-proxy runs on this machine (pid ${proxies[0]}: ${
      Deno.readTextFileSync(`/proc/${proxies[0]}/cmdline`).split("\0").join(" ").trim()
    })`;
  throw new Error(
    `${what}: kube-proxy's iptables chains are the machine's, so only one real node runs at a ` +
      `time; stop the other cluster first`,
  );
}

async function xtables(cmd: string, args: string[]): Promise<{ ok: boolean; out: string }> {
  try {
    const o = await new Deno.Command(cmd, { args: ["-w", "5", ...args], stdin: "null" }).output();
    const dec = new TextDecoder();
    return { ok: o.success, out: o.success ? dec.decode(o.stdout) : dec.decode(o.stderr) };
  } catch (e) {
    return { ok: false, out: String(e) };
  }
}

/** The words of one `iptables -S` rule, its quoted comment as one word without the quotes. */
function ruleWords(line: string): string[] {
  return (line.match(/"[^"]*"|\S+/g) ?? []).map((w) => w.replace(/^"(.*)"$/, "$1"));
}

/**
 * Removes kube-proxy's iptables rules and chains from the machine, IPv4 and IPv6, unless another
 * kube-proxy still runs (they are its chains too): the rules of the built-in chains that jump to
 * a `KUBE-` chain, then every `KUBE-` chain. Not `kube-proxy --cleanup`, which also flushes every
 * IPVS rule of the machine (and loads ip_vs), not only kube-proxy's. Returns what went wrong.
 */
export async function cleanupKubeProxyRules(): Promise<string[]> {
  if (runningKubeProxies().length > 0) return [];
  const problems: string[] = [];
  for (const cmd of ["iptables", "ip6tables"]) {
    for (const table of ["nat", "filter", "mangle"]) {
      const listed = await xtables(cmd, ["-t", table, "-S"]);
      if (!listed.ok) continue; // no such table or family here: nothing of kube-proxy's either
      const lines = listed.out.split("\n");
      const chains = lines.filter((l) => /^-N KUBE-/.test(l)).map((l) => l.split(" ")[1]);
      for (const line of lines) {
        const w = ruleWords(line);
        if (w[0] !== "-A" || w[1].startsWith("KUBE-")) continue;
        if (!w.some((x, i) => i > 0 && w[i - 1] === "-j" && x.startsWith("KUBE-"))) continue;
        const r = await xtables(cmd, ["-t", table, "-D", ...w.slice(1)]);
        if (!r.ok) problems.push(`${cmd} -t ${table} -D ${w.slice(1).join(" ")}: ${r.out.trim()}`);
      }
      for (const op of ["-F", "-X"]) {
        for (const chain of chains) {
          const r = await xtables(cmd, ["-t", table, op, chain]);
          if (!r.ok) problems.push(`${cmd} -t ${table} ${op} ${chain}: ${r.out.trim()}`);
        }
      }
    }
  }
  return problems;
}
