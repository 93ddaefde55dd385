/**
 * How Pods on the real node reach the API server as they do in any cluster: through the
 * `kubernetes` Service's address (KUBERNETES_SERVICE_HOST, which the kubelet puts in every
 * container). There is no kube-proxy here, so the node does its one job for that one Service:
 * Pods get a route to 10.96.0.1 through the bridge, and a DNAT rule sends 10.96.0.1:443 arriving
 * on the bridge to the API server on 127.0.0.1. The API server keeps listening on loopback only;
 * `route_localnet` is turned on for this bridge alone so the kernel delivers the rewritten
 * packets. Nothing else is forwarded: Pods still have no default route.
 */
/** The `kubernetes` Service's ClusterIP: the first address of the control plane's service range. */
export const KUBERNETES_SERVICE_IP = "10.96.0.1";
/** The `kubernetes` Service's port. */
const SERVICE_PORT = "443";

/** The comment that marks this bridge's rule, so teardown finds it even after a crash. */
function tag(bridge: string): string {
  return `platform-project api route ${bridge}`;
}

async function iptables(args: string[]): Promise<{ ok: boolean; out: string; err: string }> {
  const o = await new Deno.Command("iptables", { args: ["-w", "5", ...args], stdin: "null" })
    .output().catch((e) => {
      throw new Error(
        `"iptables" is needed to route the real node's Pods to the API server ` +
          `(apt-get install iptables): ${e}`,
      );
    });
  const dec = new TextDecoder();
  return { ok: o.success, out: dec.decode(o.stdout), err: dec.decode(o.stderr) };
}

/** The rule's match and target, as `iptables -t nat -A PREROUTING` takes them. */
function rule(bridge: string, apiserverPort: number): string[] {
  return [
    "-i",
    bridge,
    "-d",
    `${KUBERNETES_SERVICE_IP}/32`,
    "-p",
    "tcp",
    "--dport",
    SERVICE_PORT,
    "-m",
    "comment",
    "--comment",
    tag(bridge),
    "-j",
    "DNAT",
    "--to-destination",
    `127.0.0.1:${apiserverPort}`,
  ];
}

/** Routes the bridge's `kubernetes` Service traffic to the API server on loopback. */
export async function openApiRoute(bridge: string, apiserverPort: number): Promise<void> {
  await Deno.writeTextFile(`/proc/sys/net/ipv4/conf/${bridge}/route_localnet`, "1");
  const r = await iptables(["-t", "nat", "-A", "PREROUTING", ...rule(bridge, apiserverPort)]);
  if (!r.ok) {
    throw new Error(`iptables could not add the real node's API route: ${r.err.trim()}`);
  }
}

/** Removes every rule this bridge's route added; returns what could not be removed. */
export async function closeApiRoute(bridge: string): Promise<string[]> {
  const listed = await iptables(["-t", "nat", "-S", "PREROUTING"]);
  if (!listed.ok) return [`iptables -S: ${listed.err.trim()}`];
  const problems: string[] = [];
  for (const line of listed.out.split("\n")) {
    if (!line.includes(`"${tag(bridge)}"`)) continue;
    // `-A PREROUTING <spec>` → `-D PREROUTING <spec>`; the comment is quoted in the listing.
    const spec = line.replace(/^-A PREROUTING /, "").match(/"[^"]*"|\S+/g) ?? [];
    const args = spec.map((w) => w.replace(/^"(.*)"$/, "$1"));
    const r = await iptables(["-t", "nat", "-D", "PREROUTING", ...args]);
    if (!r.ok) problems.push(`iptables -D PREROUTING ${args.join(" ")}: ${r.err.trim()}`);
  }
  return problems;
}
