/**
 * The real node's kubelet: its certificates (a client identity `system:node:<name>` the Node
 * authorizer knows, a serving certificate the API server verifies), its kubeconfig and its
 * KubeletConfiguration for a machine without systemd cgroups or swap limits.
 */
import { issueCert, type Pki } from "../pki.ts";
import type { ProcessSpec } from "../../processes.ts";
import type { PodNetwork } from "./cni.ts";
import { type NodeLayout, REAL_NODE_LABEL, REAL_NODE_NAME, REAL_NODE_TAINT } from "./layout.ts";
import { CLUSTER_DNS_IP } from "../services.ts";

/** What the kubelet's command line depends on. */
export interface KubeletInputs {
  layout: NodeLayout;
  pki: Pick<Pki, "caCert" | "caKey">;
  server: string;
  net: PodNetwork;
  kubeletBin: string;
  /** Port of the kubelet API (logs, exec), on the bridge's host address. */
  port: number;
  /** Port of /healthz, on 127.0.0.1. */
  healthzPort: number;
}

/** The API server's client certificate for calling kubelets (logs, exec). */
export function apiserverKubeletClient(
  pki: Pick<Pki, "caCert" | "caKey">,
  dir: string,
): Promise<{ cert: string; key: string }> {
  return issueCert(pki, dir, {
    name: "apiserver-kubelet-client",
    // system:masters: the kubelet's webhook authorization lets the API server do anything.
    subject: "/O=system:masters/CN=kube-apiserver-kubelet-client",
    usage: "clientAuth",
  });
}

/** Writes a kubeconfig (mode 0600) for a node process that signs in with a client certificate. */
export async function writeCertKubeconfig(
  path: string,
  server: string,
  caCert: string,
  user: string,
  client: { cert: string; key: string },
): Promise<void> {
  const caPem = await Deno.readTextFile(caCert);
  const kubeconfig = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{
      name: "local",
      cluster: { server, "certificate-authority-data": btoa(caPem) },
    }],
    users: [{
      name: user,
      user: { "client-certificate": client.cert, "client-key": client.key },
    }],
    contexts: [{ name: "local", context: { cluster: "local", user } }],
    "current-context": "local",
  };
  await Deno.writeTextFile(path, JSON.stringify(kubeconfig, null, 2), { mode: 0o600 });
}

/** Writes certificates, kubeconfig and configuration; returns the kubelet's process spec. */
export async function prepareKubelet(k: KubeletInputs): Promise<ProcessSpec & { health: string }> {
  const l = k.layout;
  const client = await issueCert(k.pki, l.pki, {
    name: "kubelet-client",
    subject: `/O=system:nodes/CN=system:node:${REAL_NODE_NAME}`,
    usage: "clientAuth",
  });
  // The node's address is the bridge's host address: the kubelet refuses a loopback node IP, and
  // the API server dials the node's InternalIP for logs and exec.
  const serving = await issueCert(k.pki, l.pki, {
    name: "kubelet-serving",
    subject: `/CN=${REAL_NODE_NAME}`,
    usage: "serverAuth",
    sans: [`IP:${k.net.hostIp}`, "IP:127.0.0.1", `DNS:${REAL_NODE_NAME}`],
  });
  await writeCertKubeconfig(l.kubeletKubeconfig, k.server, k.pki.caCert, "kubelet", client);
  const config = {
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    kind: "KubeletConfiguration",
    address: k.net.hostIp,
    port: k.port,
    readOnlyPort: 0,
    healthzBindAddress: "127.0.0.1",
    healthzPort: k.healthzPort,
    tlsCertFile: serving.cert,
    tlsPrivateKeyFile: serving.key,
    rotateCertificates: false,
    serverTLSBootstrap: false,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true, cacheTTL: "10s" },
      x509: { clientCAFile: k.pki.caCert },
    },
    authorization: { mode: "Webhook" },
    containerRuntimeEndpoint: `unix://${l.socket}`,
    // No systemd here, and no QoS cgroup tree or allocatable enforcement to set up.
    cgroupDriver: "cgroupfs",
    cgroupsPerQOS: false,
    enforceNodeAllocatable: [],
    failSwapOn: false,
    // The machine's iptables are not ours: no KUBE-FIREWALL or canary chains.
    makeIPTablesUtilChains: false,
    podLogsDir: l.podLogs,
    volumePluginDir: `${l.kubeletRoot}/volume-plugins`,
    // Pods ask cluster DNS (CoreDNS behind kube-dns, dns.ts) and nothing else: the machine's
    // resolver is off limits, so `dnsPolicy: Default` gets no nameserver.
    resolvConf: "",
    clusterDNS: [CLUSTER_DNS_IP],
    clusterDomain: "cluster.local",
    registerWithTaints: [REAL_NODE_TAINT],
    // A shared test machine's disk and memory are not this node's to guard: evict only at the end.
    evictionHard: {
      "memory.available": "1Mi",
      "nodefs.available": "1%",
      "nodefs.inodesFree": "1%",
      "imagefs.available": "1%",
    },
    // Images are loaded here, never pulled: garbage-collecting one would lose it.
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    serializeImagePulls: false,
    nodeStatusUpdateFrequency: "5s",
    syncFrequency: "10s",
  };
  await Deno.writeTextFile(l.kubeletConfig, JSON.stringify(config, null, 2) + "\n");
  return {
    name: "kubelet",
    bin: k.kubeletBin,
    log: l.kubeletLog,
    health: `http://127.0.0.1:${k.healthzPort}/healthz`,
    args: [
      `--config=${l.kubeletConfig}`,
      `--kubeconfig=${l.kubeletKubeconfig}`,
      `--root-dir=${l.kubeletRoot}`,
      `--cert-dir=${l.pki}`,
      `--hostname-override=${REAL_NODE_NAME}`,
      `--node-ip=${k.net.hostIp}`,
      `--node-labels=${REAL_NODE_LABEL.key}=${REAL_NODE_LABEL.value}`,
      "--v=1",
    ],
  };
}
