/** What the real-node tests share: when they can run, the podcheck Pod, the node's processes. */
import { buildStatus, type ClusterHandle, nodeBuildStatus } from "./mod.ts";
import { resolvePrograms } from "./node/node.ts";

const built = [await buildStatus(), await nodeBuildStatus()];
const canBuild = built.every((b) => b.stale.length === 0 || b.goAvailable);
const missing = await resolvePrograms().then(() => "", (e: Error) => e.message);

/** Why the real-node tests cannot run here, or "" (root, packages, binaries or Go are needed). */
export const REAL_NODE_SKIP: string = [!canBuild && "no binaries and no go", missing]
  .filter(Boolean).join("; ");

if (REAL_NODE_SKIP) console.error(`\n*** real node tests SKIPPED: ${REAL_NODE_SKIP} ***\n`);

/** A Pod for the real node running podcheck as 65532, read-only, without capabilities. */
export function podcheckPod(c: ClusterHandle, ns: string, name: string): string {
  const node = c.realNode!;
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: ns, labels: { app: name } },
    spec: {
      ...node.placement(),
      securityContext: { runAsUser: 65532, runAsGroup: 65532, runAsNonRoot: true },
      containers: [{
        name: "podcheck",
        image: node.podcheckImage,
        imagePullPolicy: "Never",
        ports: [{ containerPort: 8080 }],
        securityContext: {
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
          capabilities: { drop: ["ALL"] },
        },
        readinessProbe: { httpGet: { path: "/ready", port: 8080 }, periodSeconds: 1 },
      }],
    },
  });
}

/**
 * The node's processes: kubelet, containerd and shims name `dir` on their command line, and the
 * containers' processes have their root file system under it.
 */
export function processesUnder(dir: string): number[] {
  const pids: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const root = Deno.readLinkSync(`/proc/${e.name}/root`);
      const cmdline = Deno.readTextFileSync(`/proc/${e.name}/cmdline`);
      if (cmdline.includes(dir) || root.startsWith(dir + "/")) pids.push(Number(e.name));
    } catch { /* gone */ }
  }
  return pids;
}
