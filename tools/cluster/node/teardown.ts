/**
 * Stopping the real node without leaving anything behind on the machine: kube-proxy's rules, the
 * Pods' containers and shims, the mounts kubelet and containerd made under the node's directory, the Pods' network
 * namespaces, the bridge and the log links kubelet writes to /var/log/containers.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { exists } from "../../files.ts";
import { executableOf, isAlive, stopProcess } from "../../processes.ts";
import { releasePodNetwork } from "./cni.ts";
import { cleanupKubeProxyRules } from "./proxy.ts";
import { ctr, sandboxNetns } from "./containerd.ts";
import type { NodeLayout } from "./layout.ts";
import type { RealNodeState } from "./state.ts";

const dec = new TextDecoder();

async function run(cmd: string, args: string[]): Promise<{ ok: boolean; out: string }> {
  try {
    const o = await new Deno.Command(cmd, {
      args,
      stdin: "null",
      signal: AbortSignal.timeout(30_000),
    }).output();
    return { ok: o.success, out: dec.decode(o.stdout) + dec.decode(o.stderr) };
  } catch (e) {
    return { ok: false, out: String(e) };
  }
}

/** Mount points at or under `dir`, deepest first (mountinfo escapes spaces as \040). */
export async function mountsUnder(dir: string): Promise<string[]> {
  const info = await Deno.readTextFile("/proc/self/mountinfo");
  const points = info.split("\n").filter(Boolean).map((l) =>
    l.split(" ")[4].replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)))
  );
  return [...new Set(points.filter((p) => p === dir || p.startsWith(dir + "/")))]
    .sort((a, b) => b.length - a.length);
}

/**
 * Named network namespaces of the Pods on `bridge`, from its veths' peers: found even when
 * containerd, which knows them too, is gone.
 */
async function bridgeNetns(bridge: string): Promise<string[]> {
  const r = await run("ip", ["-o", "link", "show", "master", bridge]);
  return [...r.out.matchAll(/link-netns (\S+)/g)].map((m) => `/var/run/netns/${m[1]}`);
}

/** Pids of shims serving containerd at `socket`. */
function shimsOf(socket: string): number[] {
  const pids: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    const pid = Number(e.name);
    if (!Number.isInteger(pid)) continue;
    try {
      const argv = Deno.readTextFileSync(`/proc/${pid}/cmdline`).split("\0");
      if (argv[0].endsWith("containerd-shim-runc-v2") && argv.includes(socket)) pids.push(pid);
    } catch { /* gone */ }
  }
  return pids;
}

/** containerd 1.6 names a shim's socket by a hash of its own address, namespace and id. */
function shimSocket(socket: string, id: string): string {
  return `/run/containerd/s/${
    createHash("sha256").update(join(socket, "k8s.io", id)).digest("hex")
  }`;
}

/**
 * Stops kubelet and containerd of `node` (by pid) and removes every trace; returns what could
 * not be cleaned (empty when all is gone). Pods should have been deleted through the API first,
 * so the kubelet could stop them in order; whatever still runs is killed here.
 */
export async function teardownNode(node: RealNodeState, l: NodeLayout): Promise<string[]> {
  const problems: string[] = [];
  const p = node.programs;
  for (const proc of [node.kubelet, node.kubeProxy, node.apiRelay]) {
    if (proc && !await stopProcess(proc.pid, proc.bin, 15_000)) {
      problems.push(`${proc.name} (pid ${proc.pid}) did not stop`);
    }
  }
  if (node.kubeProxy) problems.push(...await cleanupKubeProxyRules());
  let netns: string[] = [];
  const ids: string[] = [];
  if (node.net) netns = await bridgeNetns(node.net.bridge);
  if (node.containerd && isAlive(node.containerd.pid)) {
    netns.push(...await sandboxNetns(p, l).catch(() => []));
    const ls = await ctr(p, l, ["containers", "list", "--quiet"], 20_000).catch(() => null);
    ids.push(...(ls?.stdout.split("\n").filter(Boolean) ?? []));
    // Killing and deleting each task makes its shim unmount the rootfs and exit by itself.
    for (const id of ids) {
      await ctr(p, l, ["tasks", "delete", "--force", id], 20_000).catch(() => {});
    }
  }
  if (node.containerd && !await stopProcess(node.containerd.pid, node.containerd.bin, 15_000)) {
    problems.push(`containerd (pid ${node.containerd.pid}) did not stop`);
  }
  // What survived (containerd crashed, say): containers runc still knows, then their shims. The
  // shim gives runc a root per containerd namespace.
  const runcRoot = join(l.runcRoot, "k8s.io");
  const left = await run(p.runc, ["--root", runcRoot, "list", "--quiet"]);
  for (const id of left.ok ? left.out.split("\n").filter(Boolean) : []) {
    await run(p.runc, ["--root", runcRoot, "delete", "--force", id]);
    ids.push(id);
  }
  for (const pid of shimsOf(l.socket)) {
    const bin = executableOf(pid);
    if (bin && !await stopProcess(pid, bin, 2_000)) problems.push(`shim pid ${pid} did not stop`);
  }
  for (const id of new Set(ids)) await Deno.remove(shimSocket(l.socket, id)).catch(() => {});
  for (const m of await mountsUnder(l.dir)) {
    if (!(await run("umount", [m])).ok && !(await run("umount", ["-l", m])).ok) {
      problems.push(`could not unmount ${m}`);
    }
  }
  if (node.net) problems.push(...await releasePodNetwork(node.net, node.clusterDir, netns));
  await removeLogLinks(l.podLogs);
  await removeEmptyCgroups();
  await Deno.remove(l.socketDir, { recursive: true }).catch(() => {});
  const stillMounted = await mountsUnder(l.dir);
  if (stillMounted.length > 0) {
    problems.push(`left ${l.dir} in place: still mounted ${stillMounted.join(", ")}`);
  } else if (await exists(l.dir)) {
    await Deno.remove(l.dir, { recursive: true });
  }
  return problems;
}

/**
 * runc puts each container's cgroup under `k8s.io/` (containerd's namespace) of every hierarchy
 * and removes it with the container; the emptied parent is removed here. One still in use (by
 * another node's containers) refuses, and stays.
 */
async function removeEmptyCgroups(): Promise<void> {
  const root = "/sys/fs/cgroup";
  const dirs = [`${root}/k8s.io`];
  try {
    for await (const e of Deno.readDir(root)) {
      if (e.isDirectory) dirs.push(`${root}/${e.name}/k8s.io`);
    }
  } catch { /* no cgroup file system */ }
  // Deno.remove on a cgroup directory is rmdir(2), which the kernel allows only when it is empty.
  for (const d of dirs) await Deno.remove(d).catch(() => {});
}

/** kubelet links each container's log into /var/log/containers; drop the links into `podLogs`. */
async function removeLogLinks(podLogs: string): Promise<void> {
  const dir = "/var/log/containers";
  try {
    for await (const e of Deno.readDir(dir)) {
      const target = await Deno.readLink(join(dir, e.name)).catch(() => "");
      if (target.startsWith(podLogs + "/")) await Deno.remove(join(dir, e.name));
    }
  } catch { /* no such directory */ }
}
