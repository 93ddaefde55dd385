/**
 * CLI for the local control plane.
 *
 *   deno run -A tools/cluster/cluster.ts build | up | down | status | env | load-image ARCHIVE
 *     [--dir DIR] [--keep-logs] [--real-node] [--mesh]
 *
 * @module
 */
import { dirname, resolve } from "node:path";
import { ensureBuilt } from "./build.ts";
import { attach, clusterStatus, down, type IstiodInfo, REAL_NODE_TAINT, up } from "./mod.ts";
import { ensurePilotDiscovery } from "../istio-check/build.ts";
import { ensureNodeBuilt } from "./node/build.ts";
import { realNodeHowTo } from "./node/howto.ts";
import { DEFAULT_CLUSTER_DIR } from "./paths.ts";
import { readState } from "./state.ts";
import { kubeconfigPaths } from "./auth.ts";

const USAGE =
  `usage: cluster.ts <build|up|down|status|env|load-image ARCHIVE> [--dir DIR] [--keep-logs]
       [--real-node] [--mesh]

  build    build the binaries into .cache/cluster/bin (no-op when up to date);
           with --real-node also kubelet, kube-proxy, CoreDNS and the node's programs;
           with --mesh also istiod (pilot-discovery, with tools/istio-check)
  up       build if needed and start a cluster in DIR (default ${DEFAULT_CLUSTER_DIR});
           with --real-node also a node that runs containers (kubelet, containerd, runc,
           kube-proxy, CoreDNS behind kube-dns),
           labelled and tainted ${REAL_NODE_TAINT.key}=${REAL_NODE_TAINT.value}:NoSchedule;
           with --mesh also a real istiod and Istio's own CRDs
  down     stop every process of DIR by pid and remove its data
  status   print each component, its pid and whether it is alive and healthy
  env      print shell exports for KUBECONFIG and the kubectl path (and istiod's addresses)
  load-image ARCHIVE
           import an image archive (podman/docker save, OCI layout) into the real node`;

/** Parsed command line. */
interface Args {
  command: string;
  dir: string;
  keepLogs: boolean;
  realNode: boolean;
  /** Run a real istiod (`--mesh`). */
  mesh: boolean;
  /** Positional argument of load-image. */
  archive?: string;
}

function parseArgs(argv: string[]): Args {
  const args: Args = {
    command: "",
    dir: DEFAULT_CLUSTER_DIR,
    keepLogs: false,
    realNode: false,
    mesh: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--dir") args.dir = argv[++i] ?? "";
    else if (a.startsWith("--dir=")) args.dir = a.slice("--dir=".length);
    else if (a === "--keep-logs") args.keepLogs = true;
    else if (a === "--real-node") args.realNode = true;
    else if (a === "--mesh") args.mesh = true;
    else if (a === "-h" || a === "--help") args.command = "help";
    else if (!args.command) args.command = a;
    else if (args.command === "load-image" && args.archive === undefined) args.archive = a;
    else throw new Error(`unexpected argument: ${a}`);
  }
  if (!args.dir) throw new Error("--dir needs a value");
  args.dir = resolve(args.dir);
  return args;
}

const log = (msg: string) => console.error(`[cluster] ${msg}`);

/** Shell exports of istiod's addresses (none without istiod). */
export function istiodExports(istiod: IstiodInfo | undefined): string[] {
  if (!istiod) return [];
  return [
    `export ISTIOD_XDS=${istiod.xds}`,
    `export ISTIOD_DEBUG=${istiod.debug}`,
    ...(istiod.authSource ? [`export ISTIOD_AUTH_SOURCE=${istiod.authSource}`] : []),
  ];
}

async function main(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  switch (args.command) {
    case "build": {
      const b = await ensureBuilt(log);
      if (args.realNode) await ensureNodeBuilt(log);
      if (args.mesh) await ensurePilotDiscovery(log);
      console.log(JSON.stringify(b.versions));
      return 0;
    }
    case "up": {
      const c = await up({ dir: args.dir, log, realNode: args.realNode, mesh: args.mesh });
      if (c.realNode) console.error(realNodeHowTo(c.realNode, c.dir));
      console.log(`export KUBECONFIG=${c.kubeconfig}`);
      for (const line of istiodExports(c.istiod)) console.log(line);
      return 0;
    }
    case "down": {
      const stopped = await down(args.dir, { keepLogs: args.keepLogs });
      log(stopped.length ? `stopped ${stopped.join(", ")}` : `no cluster state in ${args.dir}`);
      return 0;
    }
    case "status": {
      const st = await clusterStatus(args.dir);
      if (st.length === 0) {
        console.log(`no cluster in ${args.dir}`);
        return 1;
      }
      for (const c of st) {
        const health = c.healthy ? "healthy" : "unhealthy";
        console.log(
          `${c.name.padEnd(24)} pid ${String(c.pid).padEnd(8)} ` +
            `${c.alive ? "alive" : "dead"}  ${c.alive ? health : ""}`.trimEnd(),
        );
      }
      return st.every((c) => c.healthy) ? 0 : 1;
    }
    case "env": {
      const state = await readState(args.dir);
      if (!state) {
        log(`no cluster in ${args.dir}`);
        return 1;
      }
      console.log(`export KUBECONFIG=${kubeconfigPaths(args.dir).admin}`);
      console.log(`export KUBECTL=${state.kubectl}`);
      console.log(`export PATH="${dirname(state.kubectl)}:$PATH"`);
      for (const line of istiodExports(state.istiod)) console.log(line);
      return 0;
    }
    case "load-image": {
      if (!args.archive) throw new Error("load-image needs an archive path");
      const node = (await attach(args.dir)).realNode;
      if (!node) throw new Error(`the cluster in ${args.dir} has no real node (up --real-node)`);
      for (const name of await node.loadImage(resolve(args.archive))) console.log(name);
      return 0;
    }
    case "help":
      console.log(USAGE);
      return 0;
    default:
      console.error(USAGE);
      return 2;
  }
}

if (import.meta.main) {
  try {
    Deno.exit(await main(Deno.args));
  } catch (e) {
    console.error(`[cluster] error: ${e instanceof Error ? e.message : String(e)}`);
    Deno.exit(1);
  }
}
