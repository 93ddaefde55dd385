/** What `cluster.ts up --real-node` and `deno task dev --real-node` print about the real node. */
import type { RealNode } from "../mod.ts";

/** A few lines: what was added and how to place a Pod on the real node with a local image. */
export function realNodeHowTo(n: RealNode, dir: string): string {
  const p = n.placement();
  return [
    "",
    `Real node ${n.name}: kubelet + containerd + runc, Pod network ${n.network.subnet} on bridge ` +
    `${n.network.bridge} (the host is ${n.network.hostIp}).`,
    `Only Pods with this nodeSelector and toleration run there (every other Pod stays on kwok):`,
    `  nodeSelector: ${JSON.stringify(p.nodeSelector)}`,
    `  tolerations: ${JSON.stringify(p.tolerations)}`,
    "No registry is reachable: load an image archive (podman/docker save, or OCI layout) first,",
    "then use the image with imagePullPolicy: Never:",
    `  ./deno task cluster load-image ARCHIVE --dir ${dir}`,
    `  (in code: (await attach(dir)).realNode.loadImage(path), tools/cluster/mod.ts)`,
    `A test image ready to load: ${n.podcheckArchive} (${n.podcheckImage}).`,
    "Pods there reach the API server as in any cluster, at the kubernetes Service's address.",
    "",
  ].join("\n");
}
