/**
 * Services and names on the real node, as in any cluster: kube-proxy (iptables mode, built with
 * the kubelet) turns ClusterIPs into DNAT rules, CoreDNS behind `kube-dns` answers
 * `cluster.local`, and a Pod resolves another Pod's Service by name and calls it, and calls the
 * `kubernetes` Service by name, reaching the API server only through kube-proxy's rules. Nothing
 * is asked outside: a name outside the cluster does not resolve. `down` removes kube-proxy's
 * chains from the machine. Needs root and the real node's packages (see real_node_test.ts).
 */
import { deepStrictEqual as assertEquals, ok as assert, rejects } from "node:assert/strict";
import { join } from "node:path";
import { REAL_NODE_NAME, up } from "./mod.ts";
import { CLUSTER_DNS_IP, KUBERNETES_SERVICE_IP } from "./services.ts";
import { CACHE_DIR } from "./paths.ts";
import { isAlive } from "../processes.ts";
import { exists } from "../files.ts";
import { readState } from "./state.ts";
import { eventually, ok } from "./test_helpers.ts";
import { podcheckPod, REAL_NODE_SKIP } from "./real_node_fixtures.ts";

const log = (msg: string) => console.error(`[cluster-dns] ${msg}`);

/** What podcheck's /fetch answers (tools/cluster/go/nodeimages/podcheck). */
interface Fetched {
  host: string;
  addrs: string[] | null;
  status: number;
  body: string;
  error?: string;
}

async function iptables(args: string[]): Promise<string> {
  const o = await new Deno.Command("iptables", { args: ["-w", "5", ...args] }).output();
  return new TextDecoder().decode(o.stdout);
}

Deno.test({
  name: "real node: a Pod resolves and calls Services by name through CoreDNS and kube-proxy",
  ignore: REAL_NODE_SKIP !== "",
  async fn(t) {
    const dir = join(CACHE_DIR, `test-dns-${Deno.pid}`);
    const c = await up({ dir, log, realNode: true });
    const node = c.realNode!;
    const net = node.network;
    const state = (await readState(dir))!.realNode!;
    let stopped = false;
    const ns = "dns-apps";
    /** GET `url` from inside the client Pod: resolved by its resolver, sent from its network. */
    let fetchFrom: (url: string) => Promise<Fetched> = () => Promise.reject(new Error("no Pod"));
    try {
      await t.step("kube-proxy runs as a node process with rules for the Services", async () => {
        assert(state.kubeProxy && isAlive(state.kubeProxy.pid), "kube-proxy runs");
        const slice = JSON.parse(
          await ok(c, ["get", "endpointslice", "kubernetes", "-n", "default", "-o", "json"]),
        );
        assertEquals(slice.endpoints[0].addresses, [net.hostIp]);
        const rules = await eventually(
          "kube-proxy's rules for kubernetes and kube-dns",
          async () => {
            const r = await iptables(["-t", "nat", "-S", "KUBE-SERVICES"]);
            return r.includes(`-d ${KUBERNETES_SERVICE_IP}/32`) &&
                r.includes(`-d ${CLUSTER_DNS_IP}/32`)
              ? r
              : undefined;
          },
        );
        assert(rules.includes('"default/kubernetes:https cluster IP"'), rules);
        assert(rules.includes('"kube-system/kube-dns:dns cluster IP"'), rules);
        const dnat = await iptables(["-t", "nat", "-S"]);
        assert(
          dnat.includes(`--to-destination ${net.hostIp}:${slice.ports[0].port}`),
          `kubernetes goes to the relay on the bridge:\n${dnat}`,
        );
        assert(!dnat.includes("api route"), `no one-off API route rule:\n${dnat}`);
      });

      await t.step("a second real node on the machine is refused before it starts", async () => {
        const other = join(CACHE_DIR, `test-dns2-${Deno.pid}`);
        await rejects(up({ dir: other, realNode: true }), (e: Error) => {
          assert(e.message.includes(`another real node runs on this machine (cluster ${dir})`));
          assert(e.message.includes("only one real node runs at a time"), e.message);
          return true;
        });
        assert(!await exists(join(other, "state.json")), "nothing of it was started");
      });

      await t.step("CoreDNS runs as a Deployment behind kube-dns, as its own account", async () => {
        const svc = JSON.parse(
          await ok(c, ["get", "svc", "kube-dns", "-n", "kube-system", "-o", "json"]),
        );
        assertEquals(svc.spec.clusterIP, CLUSTER_DNS_IP);
        const pods = JSON.parse(
          await ok(c, ["get", "pods", "-n", "kube-system", "-l", "k8s-app=kube-dns", "-o", "json"]),
        ).items;
        assertEquals(pods.length, 2);
        for (const p of pods) {
          assertEquals(p.spec.nodeName, REAL_NODE_NAME);
          assertEquals(p.spec.serviceAccountName, "coredns");
          assertEquals(p.status.containerStatuses[0].ready, true);
        }
        const can = (verb: string, what: string) =>
          c.kubectl(["auth", "can-i", verb, what, "--as=system:serviceaccount:kube-system:coredns"])
            .then((r) => r.stdout.trim());
        assertEquals(await can("watch", "endpointslices.discovery.k8s.io"), "yes");
        assertEquals(await can("list", "services"), "yes");
        assertEquals(await can("get", "secrets"), "no");
      });

      await t.step("a Service of a Pod, and a client Pod with cluster DNS", async () => {
        await ok(c, ["create", "namespace", ns]);
        await eventually(
          "the default ServiceAccount",
          async () => (await c.kubectl(["get", "sa", "default", "-n", ns])).code === 0 || undefined,
        );
        await node.loadImage(node.podcheckArchive);
        await ok(c, ["apply", "-f", "-"], podcheckPod(c, ns, "server"));
        await ok(c, ["apply", "-f", "-"], podcheckPod(c, ns, "client"));
        await ok(
          c,
          ["apply", "-f", "-"],
          JSON.stringify({
            apiVersion: "v1",
            kind: "Service",
            metadata: { name: "web", namespace: ns },
            spec: { selector: { app: "server" }, ports: [{ port: 80, targetPort: 8080 }] },
          }),
        );
        for (const p of ["server", "client"]) {
          await ok(c, ["wait", "-n", ns, "--for=condition=Ready", `pod/${p}`, "--timeout=90s"]);
        }
        const ip =
          (await ok(c, ["get", "pod", "client", "-n", ns, "-o", "jsonpath={.status.podIP}"]))
            .trim();
        fetchFrom = async (url) => {
          const res = await fetch(`http://${ip}:8080/fetch?url=${encodeURIComponent(url)}`, {
            signal: AbortSignal.timeout(10_000),
          });
          return await res.json() as Fetched;
        };
      });

      const webIp =
        (await ok(c, ["get", "svc", "web", "-n", ns, "-o", "jsonpath={.spec.clusterIP}"]))
          .trim();
      for (const name of ["web", `web.${ns}`, `web.${ns}.svc.cluster.local`]) {
        await t.step(
          `the client resolves ${name} to the ClusterIP and calls the server`,
          async () => {
            const r = await eventually(`a 200 from http://${name}/hello`, async () => {
              const f = await fetchFrom(`http://${name}/hello`);
              return f.status === 200 ? f : undefined;
            }, 30_000);
            assertEquals(r.addrs, [webIp]);
            assertEquals(r.body, "podcheck server\n");
          },
        );
      }

      await t.step("the server saw the call come through the node (masqueraded)", async () => {
        const logs = await ok(c, ["logs", "-n", ns, "server"]);
        assert(logs.includes(`request /hello from ${net.hostIp}:`), logs);
      });

      await t.step("the kubernetes Service by name reaches the API server", async () => {
        const r = await fetchFrom("https://kubernetes.default.svc/api");
        assertEquals(r.error, undefined);
        assertEquals(r.addrs, [KUBERNETES_SERVICE_IP]);
        assertEquals(r.status, 200);
        assertEquals(JSON.parse(r.body).kind, "APIVersions");
        const logs = await ok(c, ["logs", "-n", ns, "client"]);
        assert(logs.includes("api: 200 OK\n"), logs);
      });

      await t.step(
        "a name outside the cluster does not resolve: nothing is asked outside",
        async () => {
          const r = await fetchFrom("http://example.com/");
          assert(r.error?.startsWith("lookup: "), JSON.stringify(r));
          assertEquals(r.addrs, null);
          const dns = await ok(c, [
            "logs",
            "-n",
            "kube-system",
            "-l",
            "k8s-app=kube-dns",
            "--tail=-1",
          ]);
          assert(dns.includes('"A IN web.dns-apps.svc.cluster.local.'), dns);
        },
      );

      await t.step("a Service without ready endpoints is refused by kube-proxy", async () => {
        await ok(c, ["delete", "pod", "server", "-n", ns, "--wait=true"]);
        // Until kube-proxy has synced its rules, the call goes to the deleted Pod's address and
        // times out (seen on a loaded machine); then kube-proxy's REJECT refuses it at once.
        const r = await eventually("the call to be refused", async () => {
          const f = await fetchFrom("http://web/hello");
          return f.error && /connection refused|no route/.test(f.error) ? f : undefined;
        }, 30_000);
        assertEquals(r.addrs, [webIp], "the name still resolves to the ClusterIP");
        assert(/connection refused|no route/.test(r.error!), r.error!);
      });
    } finally {
      await c.down();
      stopped = true;
    }

    await t.step("down removes kube-proxy and its chains from the machine", async () => {
      assert(stopped);
      assert(!isAlive(state.kubeProxy!.pid), "kube-proxy stopped");
      assert(!isAlive(state.apiRelay!.pid), "apirelay stopped");
      const nat = await iptables(["-t", "nat", "-S"]);
      assert(!nat.includes("KUBE-"), `no KUBE- chain left:\n${nat}`);
      const filter = await iptables(["-S"]);
      assert(!filter.includes("KUBE-"), `no KUBE- chain left:\n${filter}`);
    });
  },
});
