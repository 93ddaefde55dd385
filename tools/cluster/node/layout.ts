/**
 * Where the real node keeps its files (all under `<cluster dir>/node`), the Debian programs it
 * runs, and how it marks itself so that only Pods that ask for it land there.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";

/** Name the kubelet registers. */
export const REAL_NODE_NAME = "real-node-0";

/** Label of the real node (a Pod's nodeSelector). */
export const REAL_NODE_LABEL = { key: "platform-project.io/node", value: "real" } as const;

/** Taint of the real node: only Pods that tolerate it are scheduled there. */
export const REAL_NODE_TAINT = {
  key: "platform-project.io/node",
  value: "real",
  effect: "NoSchedule",
} as const;

/** What `apt-get` installs the real node's runtime pieces from. */
export const INSTALL_HINT = "apt-get install containerd runc containernetworking-plugins";

/** Programs of the real node that come from the machine (Debian packages), not from Go builds. */
export interface HostPrograms {
  /** containerd (package containerd). */
  containerd: string;
  /** ctr, containerd's client (package containerd). */
  ctr: string;
  /** The shim containerd starts per Pod (package containerd). */
  shim: string;
  /** runc (package runc). */
  runc: string;
  /** Directory of the CNI plugins bridge, host-local and loopback (containernetworking-plugins). */
  cniBinDir: string;
}

/** Debian's paths of {@link HostPrograms}. */
export const DEBIAN_PROGRAMS: HostPrograms = {
  containerd: "/usr/bin/containerd",
  ctr: "/usr/bin/ctr",
  shim: "/usr/bin/containerd-shim-runc-v2",
  runc: "/usr/sbin/runc",
  cniBinDir: "/usr/lib/cni",
};

/** The files of one real node. */
export interface NodeLayout {
  /** `<cluster dir>/node`. */
  dir: string;
  containerdConfig: string;
  containerdRoot: string;
  containerdState: string;
  /**
   * containerd's gRPC socket, the kubelet's CRI endpoint: under /run, not the cluster directory,
   * because a Unix socket's path is limited to 108 bytes (containerd refuses over 104 with the
   * `.ttrpc` suffix) and checkout paths can be long.
   */
  socket: string;
  /** The directory of `socket` (one per cluster directory; removed with the node). */
  socketDir: string;
  /** runc's state directory, so leftover containers are found and removed by `down`. */
  runcRoot: string;
  cniConfDir: string;
  /** host-local's IP allocations. */
  ipamDir: string;
  kubeletRoot: string;
  kubeletConfig: string;
  kubeletKubeconfig: string;
  podLogs: string;
  pki: string;
  images: string;
  /** Logs of containerd and kubelet (beside the control plane's). */
  containerdLog: string;
  kubeletLog: string;
}

/** The layout of the real node of cluster directory `clusterDir`. */
export function nodeLayout(clusterDir: string): NodeLayout {
  const dir = join(clusterDir, "node");
  const c = (...p: string[]) => join(dir, "containerd", ...p);
  const id = createHash("sha256").update(clusterDir).digest("hex").slice(0, 12);
  const socketDir = join("/run", "platform-project-node", id);
  return {
    dir,
    containerdConfig: c("config.toml"),
    containerdRoot: c("root"),
    containerdState: c("state"),
    socket: join(socketDir, "containerd.sock"),
    socketDir,
    runcRoot: c("state", "runc"),
    cniConfDir: join(dir, "cni", "net.d"),
    ipamDir: join(dir, "cni", "ipam"),
    kubeletRoot: join(dir, "kubelet"),
    kubeletConfig: join(dir, "kubelet-config.yaml"),
    kubeletKubeconfig: join(dir, "kubelet.kubeconfig"),
    podLogs: join(dir, "pod-logs"),
    pki: join(dir, "pki"),
    images: join(dir, "images"),
    containerdLog: join(clusterDir, "logs", "containerd.log"),
    kubeletLog: join(clusterDir, "logs", "kubelet.log"),
  };
}

/** The nodeSelector and toleration a Pod spec needs to run on the real node. */
export function realNodePlacement(): {
  nodeSelector: Record<string, string>;
  tolerations: { key: string; operator: "Equal"; value: string; effect: "NoSchedule" }[];
} {
  return {
    nodeSelector: { [REAL_NODE_LABEL.key]: REAL_NODE_LABEL.value },
    tolerations: [{ ...REAL_NODE_TAINT, operator: "Equal" }],
  };
}

/**
 * Namespace annotations that put every new Pod of the namespace on the real node (the API
 * server's PodNodeSelector and PodTolerationRestriction admission add the selector and the
 * toleration), without touching the Pods' manifests.
 */
export function realNodeNamespaceAnnotations(): Record<string, string> {
  const p = realNodePlacement();
  return {
    "scheduler.alpha.kubernetes.io/node-selector": Object.entries(p.nodeSelector)
      .map(([k, v]) => `${k}=${v}`).join(","),
    "scheduler.alpha.kubernetes.io/defaultTolerations": JSON.stringify(p.tolerations),
  };
}
