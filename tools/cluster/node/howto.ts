/** What `cluster.ts up --real-node` and `deno task dev --real-node` print about the real node. */
import type { RealNode } from "../mod.ts";

/** A few lines: what was added and how to place a Pod on the real node with a local image. */
export function realNodeHowTo(n: RealNode): string {
  const p = n.placement();
  return [
    "",
    `Real node ${n.name}: kubelet + containerd + runc, Pod network ${n.network.subnet} on bridge ` +
    `${n.network.bridge} (the host is ${n.network.hostIp}).`,
    `Only Pods with this nodeSelector and toleration run there (every other Pod stays on kwok):`,
    `  nodeSelector: ${JSON.stringify(p.nodeSelector)}`,
    `  tolerations: ${JSON.stringify(p.tolerations)}`,
    "No registry is reachable: load images first (a podman/docker save archive or an OCI layout",
    "archive) with loadImage(path) of the cluster handle (tools/cluster/mod.ts), and use them with",
    "imagePullPolicy: Never. Ready to try:",
    `  ${n.podcheckArchive}  (image ${n.podcheckImage})`,
    "",
  ].join("\n");
}
