/**
 * The real node's Pod network: a Linux bridge `po-cni<N>` with 10.86.N.1/24 on the host side,
 * made here before containerd starts, and a CNI conflist (bridge + host-local) that attaches Pods
 * to it. Not 10.88.0.0/16: that is podman's default network on this machine. Making the bridge
 * ourselves, with its address, lets the host reach Pod IPs without the bridge plugin's
 * `isGateway`, which would turn on IP forwarding for the whole machine; Pods get no default route,
 * so they reach only the host's bridge address and each other.
 */
import { join } from "node:path";
import { exists } from "../../files.ts";
import type { NodeLayout } from "./layout.ts";
import { SERVICE_CIDR } from "../services.ts";

/** The bridge and subnet one real node owns. */
export interface PodNetwork {
  bridge: string;
  /** e.g. 10.86.3.0/24. */
  subnet: string;
  /** The bridge's own address, e.g. 10.86.3.1. */
  hostIp: string;
}

const PREFIX = "po-cni";

async function ip(args: string[]): Promise<{ ok: boolean; out: string; err: string }> {
  const o = await new Deno.Command("ip", { args, stdin: "null" }).output().catch((e) => {
    throw new Error(`"ip" (package iproute2) is needed for the real node's bridge: ${e}`);
  });
  const dec = new TextDecoder();
  return { ok: o.success, out: dec.decode(o.stdout), err: dec.decode(o.stderr) };
}

function toInt(a: string): number {
  return a.split(".").reduce((n, p) => n * 256 + Number(p), 0);
}

/** IPv4 prefixes the machine already routes or holds (addresses and routes, not the default). */
async function usedPrefixes(): Promise<[number, number][]> {
  const text = (await ip(["-o", "-4", "addr"])).out + (await ip(["-4", "route"])).out;
  return [...text.matchAll(/\b(\d+\.\d+\.\d+\.\d+)\/(\d+)/g)].map((m) => {
    const bits = Number(m[2]);
    const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
    return [(toInt(m[1]) & mask) >>> 0, mask];
  });
}

function overlaps(used: [number, number][], net: number): boolean {
  const mine = 0xffffff00;
  return used.some(([base, mask]) => {
    const m = (mask & mine) >>> 0; // the shorter of the two prefixes decides
    return ((base & m) >>> 0) === ((net & m) >>> 0);
  });
}

/** The cluster directory a bridge was made for (its ifalias), or null. */
async function bridgeOwner(bridge: string): Promise<string | null> {
  try {
    return (await Deno.readTextFile(`/sys/class/net/${bridge}/ifalias`)).trim() || null;
  } catch {
    return null;
  }
}

/**
 * The cluster directories of the other real nodes running on the machine: the owners of
 * `po-cni<N>` bridges other than `clusterDir` whose cluster still exists.
 */
export async function otherRealNodes(clusterDir: string): Promise<string[]> {
  const owners: string[] = [];
  for await (const e of Deno.readDir("/sys/class/net")) {
    if (!e.name.startsWith(PREFIX)) continue;
    const owner = await bridgeOwner(e.name);
    if (owner && owner !== clusterDir && await exists(join(owner, "state.json"))) {
      owners.push(owner);
    }
  }
  return owners;
}

/**
 * Creates the first free `po-cni<N>` bridge whose 10.86.N.0/24 clashes with nothing on the
 * machine, with the host address .1, owned by `clusterDir`. A bridge whose owner has no cluster
 * any more is a leftover and is removed and reused. Creating the link is the claim, so two
 * clusters starting at once never share a bridge.
 */
export async function claimPodNetwork(clusterDir: string): Promise<PodNetwork> {
  for (let n = 0; n < 256; n++) {
    const bridge = `${PREFIX}${n}`;
    const owner = await bridgeOwner(bridge);
    if (owner !== null) {
      if (owner === clusterDir || !await exists(join(owner, "state.json"))) {
        await ip(["link", "delete", bridge]);
      } else continue;
    }
    const subnet = `10.86.${n}.0/24`;
    if (overlaps(await usedPrefixes(), toInt(`10.86.${n}.0`))) continue;
    const add = await ip(["link", "add", bridge, "type", "bridge"]);
    if (!add.ok) {
      if (/exists/i.test(add.err)) continue;
      throw new Error(`ip link add ${bridge} type bridge failed: ${add.err.trim()}`);
    }
    const hostIp = `10.86.${n}.1`;
    for (
      const args of [
        ["link", "set", bridge, "alias", clusterDir],
        ["addr", "add", `${hostIp}/24`, "dev", bridge],
        ["link", "set", bridge, "up"],
      ]
    ) {
      const r = await ip(args);
      if (!r.ok) {
        await ip(["link", "delete", bridge]);
        throw new Error(`ip ${args.join(" ")} failed: ${r.err.trim()}`);
      }
    }
    return { bridge, subnet, hostIp };
  }
  throw new Error("no free po-cni<N> bridge with a free 10.86.N.0/24 subnet");
}

/**
 * The CNI conflist attaching Pods to the bridge (no masquerade, no default route; one route, to
 * the Service range).
 */
export function cniConflist(net: PodNetwork, l: NodeLayout): string {
  return JSON.stringify(
    {
      cniVersion: "1.0.0",
      name: net.bridge,
      plugins: [{
        type: "bridge",
        bridge: net.bridge,
        isGateway: false,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: "host-local",
          ranges: [[{ subnet: net.subnet, gateway: net.hostIp }]],
          // Only ClusterIPs go through the host, where kube-proxy's rules send them on.
          routes: [{ dst: SERVICE_CIDR }],
          dataDir: l.ipamDir,
        },
      }],
    },
    null,
    2,
  ) + "\n";
}

/** Writes the conflist into the node's own CNI configuration directory. */
export async function writeCniConfig(net: PodNetwork, l: NodeLayout): Promise<void> {
  await Deno.mkdir(l.cniConfDir, { recursive: true });
  await Deno.mkdir(l.ipamDir, { recursive: true });
  await Deno.writeTextFile(join(l.cniConfDir, `10-${net.bridge}.conflist`), cniConflist(net, l));
}

/**
 * Removes what the Pod network leaves behind: the Pods' network namespaces (given by containerd
 * before it stopped), libcni's cached results for this network, and the bridge if this cluster
 * owns it.
 */
export async function releasePodNetwork(
  net: PodNetwork,
  clusterDir: string,
  netns: readonly string[],
): Promise<string[]> {
  const problems: string[] = [];
  for (const ns of new Set(netns)) {
    if (!await exists(ns)) continue;
    const r = await ip(["netns", "delete", ns.slice(ns.lastIndexOf("/") + 1)]);
    if (!r.ok) problems.push(`netns ${ns}: ${r.err.trim()}`);
  }
  const results = "/var/lib/cni/results";
  try {
    for await (const e of Deno.readDir(results)) {
      if (e.name.startsWith(`${net.bridge}-`)) await Deno.remove(join(results, e.name));
    }
    await Deno.remove(results); // only when empty: other CNI users may keep theirs here
  } catch { /* no cache, or not empty */ }
  if (await bridgeOwner(net.bridge) === clusterDir) {
    const r = await ip(["link", "delete", net.bridge]);
    if (!r.ok) problems.push(`bridge ${net.bridge}: ${r.err.trim()}`);
  }
  return problems;
}
