/**
 * Faults of the real node's own parts, for the fault tests (issue #45 point 3): kubelet or
 * containerd stopped (SIGTERM, as a service manager restarts them) and started again with the
 * same command, under the Pods that run; and a "reboot": every container killed at once (SIGKILL,
 * as when the power goes), kubelet and containerd stopped, then both started again. The node's
 * state on disk stays (as a disk does across a reboot); kube-proxy and the API relay, host
 * processes of this machine's node, go on running.
 */
import { isAlive, startProcess, stopProcess } from "../processes.ts";
import { ctr, waitContainerd } from "./node/containerd.ts";
import { nodeLayout } from "./node/layout.ts";
import type { NodeProcess } from "./node/state.ts";
import { readState, writeState } from "./state.ts";

/** A part of the node to stop and start. */
export type NodePart = "kubelet" | "containerd";

/** What one stop and start took. */
export interface NodeRestart {
  /** Containers killed (reboot only). */
  killed: number;
  /** From the first stop to the last part answering again (ms). */
  ms: number;
}

async function waitKubelet(p: NodeProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && isAlive(p.pid)) {
    const ok = await fetch(p.health!, { signal: AbortSignal.timeout(2_000) })
      .then(async (r) => (await r.text(), r.ok), () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`kubelet (pid ${p.pid}) not healthy on ${p.health} within ${timeoutMs} ms`);
}

/**
 * Stops `parts` of the real node of the cluster in `dir` (kubelet before containerd), waits
 * `downMs`, and starts them again (containerd first), each waited for; with `reboot`, first kills
 * every container. The new pids are written to the cluster's state, so `down` stops them.
 */
export async function restartNodeParts(
  dir: string,
  parts: readonly NodePart[],
  o: { reboot?: boolean; downMs?: number } = {},
): Promise<NodeRestart> {
  const state = await readState(dir);
  const node = state?.realNode;
  if (!state || !node?.kubelet || !node.containerd) throw new Error(`no real node in ${dir}`);
  const l = nodeLayout(state.dir);
  const t0 = Date.now();
  let killed = 0;
  if (parts.includes("kubelet") && !await stopProcess(node.kubelet.pid, node.kubelet.bin, 15_000)) {
    throw new Error(`kubelet (pid ${node.kubelet.pid}) did not stop`);
  }
  if (o.reboot) {
    const ls = await ctr(node.programs, l, ["tasks", "list", "--quiet"], 20_000);
    const ids = ls.stdout.split("\n").filter(Boolean);
    for (const id of ids) {
      if ((await ctr(node.programs, l, ["tasks", "kill", "--signal", "SIGKILL", id])).ok) killed++;
    }
  }
  if (
    parts.includes("containerd") &&
    !await stopProcess(node.containerd.pid, node.containerd.bin, 15_000)
  ) {
    throw new Error(`containerd (pid ${node.containerd.pid}) did not stop`);
  }
  await new Promise((r) => setTimeout(r, o.downMs ?? 0));
  if (parts.includes("containerd")) {
    const c = node.containerd;
    c.pid = await startProcess(c);
    await writeState(state);
    await waitContainerd(node.programs, l, () => isAlive(c.pid), 30_000);
  }
  if (parts.includes("kubelet")) {
    const k = node.kubelet;
    k.pid = await startProcess(k);
    await writeState(state);
    await waitKubelet(k, 60_000);
  }
  return { killed, ms: Date.now() - t0 };
}
