/**
 * istiod's replicas found from its Service's EndpointSlices (`--istiod-service`), end to end: two
 * real istiods (pilot-discovery, the cluster's and a second replica started beside it by
 * tools/cluster/istiod.ts startIstiodReplica) on the real API server, the proxy stand-in as the
 * demo Pod's sidecar connected to replica B only, and the operator run with exactly deploy/'s own
 * roles (ClusterRole platform-operator, the leases Role) plus deploy/istiod's Role, rendered for
 * this cluster's istiod namespace by the same function (src/deploy/istiod_objects.ts).
 *
 * The EndpointSlices are written by hand: both istiods run as processes outside the cluster on
 * 127.0.0.1, and the API server refuses a loopback address in an IPv4 or IPv6 slice
 * (ValidateEndpointIP), so each slice has addressType FQDN with the address "127.0.0.1", which
 * validation takes as a domain name; the operator asks http://127.0.0.1:<the slice's
 * http-monitoring port>, as it would http://<Pod IP>:15014 in a cluster.
 *
 * Shown: without the Role the operator does not start and names it; with it, the proxy on
 * replica B is Pending (not connected) while only A is listed, Accepted once B's slice appears; a
 * replica listed but not answering makes Accepted Unknown naming it, and once its slice goes the
 * RateLimit is Accepted again; no ready replica says so; the Role allows list and watch of
 * endpointslices in istiod's namespace and nothing else; the operator followed the slices through
 * its open watch, with no list and no new watch (its /metrics).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { eventually, ok } from "../../tools/cluster/test_helpers.ts";
import { REPO_ROOT } from "../../tools/cluster/paths.ts";
import { readState } from "../../tools/cluster/state.ts";
import { writeKubeconfig } from "../../tools/cluster/auth.ts";
import { startIstiodReplica, stopIstiod } from "../../tools/cluster/istiod.ts";
import { freePorts } from "../../tools/processes.ts";
import { proxyOfPod, startProxyStandin } from "../../tools/istio-check/proxy-standin/mod.ts";
import { DEFAULT_RBAC_NAMES, partRoleName } from "../../src/kube/rbac.ts";
import { istiodDiscoveryRbac } from "../../src/deploy/istiod_objects.ts";
import { acceptedOf, injectedDemo, meshTest } from "./mesh_fixtures.ts";

/** The ServiceAccount the operator runs as here: deploy/'s own roles, no module grants. */
const OWN_SA = "platform-operator-own";
const OPERATOR_NS = DEFAULT_RBAC_NAMES.namespace;

/** An EndpointSlice of Service `ns/istiod` with one endpoint on 127.0.0.1 (see the module doc). */
function slice(ns: string, name: string, pod: string, port: number, ready = true): string {
  return JSON.stringify({
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name,
      namespace: ns,
      labels: {
        "kubernetes.io/service-name": "istiod",
        "endpointslice.kubernetes.io/managed-by": "istiod-replicas-test",
      },
    },
    addressType: "FQDN",
    ports: [
      { name: "grpc-xds", port: 15010, protocol: "TCP" },
      { name: "http-monitoring", port, protocol: "TCP" },
    ],
    endpoints: [{
      addresses: ["127.0.0.1"],
      conditions: { ready, serving: ready, terminating: false },
      targetRef: { kind: "Pod", namespace: ns, name: pod },
    }],
  });
}

meshTest(
  "two real istiod replicas found from EndpointSlices: the proxy on replica B accepted, replicas followed, exactly deploy/'s roles",
  "istiod-replicas",
  async ({ c, istiod, dir, log, defer, operator: startOperator }, t) => {
    const ns = istiod.namespace;
    const state = (await readState(c.dir))?.istiod;
    assert.ok(state, "the cluster's state has its istiod");
    const started = performance.now();
    const b = await startIstiodReplica(state, "istiod-b");
    defer(() => stopIstiod(b));
    log(`second istiod ready in ${((performance.now() - started) / 1000).toFixed(1)} s`);

    const [pod] = await injectedDemo(c);
    const proxy = proxyOfPod(pod);
    // The demo Pod's sidecar is connected to replica B only.
    const standin = await startProxyStandin(b.xds, [proxy], log);
    defer(async () => void await standin.stop());

    // The operator's own identity: deploy/'s own and RateLimit ClusterRoles and leases Role, nothing
    // of the modules'.
    const user = `system:serviceaccount:${OPERATOR_NS}:${OWN_SA}`;
    await ok(c, ["create", "serviceaccount", OWN_SA, "-n", OPERATOR_NS]);
    for (const role of [DEFAULT_RBAC_NAMES.clusterRole, partRoleName("ratelimit")]) {
      await ok(c, [
        "create",
        "clusterrolebinding",
        `${OWN_SA}-${role}`,
        `--clusterrole=${role}`,
        `--serviceaccount=${OPERATOR_NS}:${OWN_SA}`,
      ]);
    }
    await ok(c, [
      "create",
      "rolebinding",
      OWN_SA,
      "-n",
      OPERATOR_NS,
      `--role=${DEFAULT_RBAC_NAMES.leaseRole}`,
      `--serviceaccount=${OPERATOR_NS}:${OWN_SA}`,
    ]);
    const token = (await ok(c, ["create", "token", OWN_SA, "-n", OPERATOR_NS, "--duration=2h"]))
      .trim();
    const kubeconfig = join(dir, "operator-own.kubeconfig");
    await writeKubeconfig(kubeconfig, c.server, await Deno.readTextFile(c.caCert), {
      name: user,
      groups: [],
      token,
    });
    // istiod's Service (no selector: its slices are written here) and replica A's slice.
    await ok(
      c,
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "v1",
        kind: "Service",
        metadata: { name: "istiod", namespace: ns },
        spec: {
          ports: [
            { name: "grpc-xds", port: 15010, protocol: "TCP" },
            { name: "http-monitoring", port: 15014, protocol: "TCP" },
          ],
        },
      }),
    );
    await ok(c, ["apply", "-f", "-"], slice(ns, "istiod-a", "istiod-a", istiod.ports.monitoring));
    await ok(c, ["apply", "-f", join(REPO_ROOT, "samples", "ratelimit-workload.yaml")]);

    const { process: operator, until } = await startOperator("replicas", {
      kubeconfig,
      service: `${ns}/istiod`,
    });
    /** The operator's API requests of `verb` so far, from its /metrics. */
    const requests = async (verb: string) => {
      const text = (await operator.metrics()) ?? "";
      return [...text.matchAll(/^platform_operator_api_requests_total\{([^}]*)\} (\d+)$/gm)]
        .filter((m) => m[1].includes(`verb="${verb}"`))
        .reduce((sum, m) => sum + Number(m[2]), 0);
    };
    let settled = { list: 0, watch: 0 };
    /** Waits for Accepted Unknown IstiodUnavailable; asserts its message matches `message`. */
    const unavailable = async (what: string, message: string) => {
      const s = await until(what, (s) => acceptedOf(s)?.reason === "IstiodUnavailable");
      assert.match(acceptedOf(s)!.message, new RegExp(message));
    };

    await t.step(
      "without deploy/istiod's Role the operator does not start, and names it",
      async () => {
        const line = await eventually("the startup checks' forbidden line", async () => {
          const text = await Deno.readTextFile(operator.logPath).catch(() => "");
          return text.split("\n").find((l) => l.includes("RBAC forbids the operator"));
        }, 60_000);
        assert.match(
          line,
          new RegExp(
            `list,watch endpointslices\\.discovery\\.k8s\\.io in namespace ${ns}: apply deploy/istiod's Role platform-operator-istiod in namespace ${ns}`,
          ),
        );
        // Nothing else is missing: deploy/'s own roles cover the rest.
        assert.doesNotMatch(line, /ClusterRole platform-operator/);
      },
    );

    const rbac = istiodDiscoveryRbac(ns, { ...DEFAULT_RBAC_NAMES, serviceAccount: OWN_SA });
    await ok(c, ["apply", "-f", "-"], rbac.map((o) => JSON.stringify(o)).join("\n"));

    await t.step("only replica A listed: the proxy on B is not connected", async () => {
      const s = await until(
        "Accepted Unknown Pending, the proxy not connected",
        (s) => acceptedOf(s)?.reason === "Pending" && s.proxies?.notConnected === 1,
      );
      assert.equal(acceptedOf(s)?.status, "Unknown");
    });

    await t.step("replica B's slice appears: the proxy connected to B is accepted", async () => {
      const appeared = performance.now();
      await ok(c, ["apply", "-f", "-"], slice(ns, "istiod-b", "istiod-b", b.ports.monitoring));
      const s = await until("Accepted True", (s) => acceptedOf(s)?.status === "True");
      log(`slice to Accepted: ${((performance.now() - appeared) / 1000).toFixed(1)} s`);
      assert.deepEqual(s.proxies, { accepted: 1, rejected: 0, pending: 0, notConnected: 0 });
      settled = { list: await requests("list"), watch: await requests("watch") };
      assert.ok(settled.list > 0 && settled.watch > 0, JSON.stringify(settled));
    });

    await t.step(
      "a replica listed but not answering: Unknown naming it; its slice gone: Accepted",
      async () => {
        const [dead] = freePorts(1);
        await ok(c, ["apply", "-f", "-"], slice(ns, "istiod-c", "istiod-c", dead));
        await unavailable(
          "Accepted Unknown IstiodUnavailable",
          `\\(Unreachable\\): istiod replica istiod-c: GET http://127\\.0\\.0\\.1:${dead}/debug/syncz`,
        );
        await ok(c, ["delete", "endpointslice", "istiod-c", "-n", ns]);
        await until("Accepted True again", (s) => acceptedOf(s)?.status === "True");
      },
    );

    await t.step("replica A goes away: no failure, the proxy stays accepted", async () => {
      await ok(c, ["delete", "endpointslice", "istiod-a", "-n", ns]);
      // Rounds come at once on a change of the replicas, then every second for a while.
      await new Promise((r) => setTimeout(r, 3_000));
      const s = await until("still Accepted True", (s) => acceptedOf(s)?.status === "True");
      assert.deepEqual(s.proxies, { accepted: 1, rejected: 0, pending: 0, notConnected: 0 });
    });

    await t.step("no ready replica: Accepted Unknown saying so", async () => {
      await ok(
        c,
        ["apply", "-f", "-"],
        slice(ns, "istiod-b", "istiod-b", b.ports.monitoring, false),
      );
      await unavailable(
        "Accepted Unknown, no ready replica",
        `\\(NoReadyReplica\\): istiod has no ready replica: the EndpointSlices of Service ${ns}/istiod list no ready endpoint`,
      );
    });

    await t.step(
      "the replicas were followed through the open watch: no list, no new watch",
      async () => {
        // Four changes of the slices since: each came as a watch event.
        assert.deepEqual({ list: await requests("list"), watch: await requests("watch") }, settled);
      },
    );

    await t.step(
      "the Role allows list and watch of endpointslices in istiod's namespace, nothing more",
      async () => {
        const can = async (...args: string[]) =>
          (await c.kubectl(["auth", "can-i", ...args, `--as=${user}`])).stdout.trim();
        assert.equal(await can("list", "endpointslices.discovery.k8s.io", "-n", ns), "yes");
        assert.equal(await can("watch", "endpointslices.discovery.k8s.io", "-n", ns), "yes");
        assert.equal(await can("get", "endpointslices.discovery.k8s.io", "-n", ns), "no");
        assert.equal(await can("list", "endpointslices.discovery.k8s.io", "-n", "demo"), "no");
        assert.equal(await can("list", "endpointslices.discovery.k8s.io", "-A"), "no");
        assert.equal(await can("list", "endpoints", "-n", ns), "no");
      },
    );
  },
);
