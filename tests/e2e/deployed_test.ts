/**
 * The operator as platform teams deploy it: its image (built here, loaded into the real node's
 * containerd), `kubectl apply -k deploy/` unchanged but for the image reference, two replicas
 * running as Pods under deploy/'s ServiceAccount, a kubelet calling their probes and sending
 * SIGTERM. Each step asserts on the world: the processes' credentials in /proc, the Pods' status,
 * the Lease, the audit log, the objects' statuses.
 *
 * Placement: the real node is tainted, and deploy/ must stay as users get it, so the namespace's
 * annotations (PodNodeSelector, PodTolerationRestriction admission) put new Pods of
 * platform-system on the real node while the test wants them there; the module workloads the
 * samples install are placed on the kwok node (their upstream images cannot be pulled here)
 * until the step that shows what an unpullable image does.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { buildImage } from "../../tools/image/image.ts";
import { OPERATOR_USER } from "../../tools/cluster/mod.ts";
import { REAL_NODE_SKIP } from "../../tools/cluster/real_node_fixtures.ts";
import { REPO_ROOT } from "../../tools/operator/process.ts";
import { scrapeHttps } from "../../tools/operator/scrape_https.ts";
import { DEFAULT_RBAC_NAMES, partRoleName } from "../../src/kube/rbac.ts";
import {
  containerProcesses,
  DEPLOYED,
  imageOverlay,
  isReady,
  leaseHolder,
  operatorPods,
  type PodView,
  twoReady,
} from "./deployed.ts";
import { rateLimit } from "./fixtures.ts";
import { type E2E, e2eSuite, waitFor } from "./harness.ts";
import { assertAggregatorVerdict, describe, SCALER_ON_KWOK, statusMatches } from "./status.ts";

/** Words of the operator's command line in its container (the image's entrypoint). */
const OPERATOR_CMD = ["operator_main.ts", "--leader-elect=true"];
const NS = DEPLOYED.namespace;

async function unplace(env: E2E, ns: string): Promise<void> {
  await env.kube.must([
    "annotate",
    "namespace",
    ns,
    "scheduler.alpha.kubernetes.io/node-selector-",
    "scheduler.alpha.kubernetes.io/defaultTolerations-",
  ]);
}

// A short name: the suite's directory holds the real node's Unix sockets.
e2eSuite("deployed", async (env, t) => {
  const node = env.cluster.realNode;
  assert.ok(node, "the suite runs with the real node");
  const overlay = await imageOverlay(join(env.dir, "overlay"), "localhost/platform-operator:dev");
  let pods: PodView[] = [];

  await env.step(t, "the image loads and kubectl apply -k deploy/ runs two replicas", async () => {
    const image = await buildImage((m) => console.error(`[image] ${m}`), { reuse: true });
    assert.ok((await node.loadImage(image.archive)).includes(image.tag), image.tag);
    await node.placeNamespace(NS);
    await env.kube.must(["apply", "-k", overlay]);
    pods = await twoReady(env);
    // The module workloads the samples install go to kwok (see the header).
    await unplace(env, NS);
    assert.deepEqual(
      pods.map((p) => p.spec.containers[0].image),
      ["localhost/platform-operator:dev", "localhost/platform-operator:dev"],
    );
  });

  await env.step(
    t,
    "Pod Security: platform-system refuses a Pod below the restricted profile",
    async () => {
      const r = await env.kube.tryApply([{
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name: "privileged", namespace: NS },
        spec: {
          containers: [{ name: "c", image: "x", securityContext: { privileged: true } }],
        },
      }]);
      assert.notEqual(r.code, 0, r.stdout);
      assert.match(r.stderr, /violates PodSecurity "restricted:latest"/);
    },
  );

  await env.step(t, "deploy/'s security context holds in the running processes", async () => {
    const procs = await containerProcesses(env.cluster.dir, pods);
    assert.equal(procs.length, 2, JSON.stringify(procs));
    for (const p of procs) {
      assert.deepEqual(p.uids, [65532, 65532, 65532, 65532], `pid ${p.pid} runs as 65532`);
      assert.equal(p.capEff, "0000000000000000", `pid ${p.pid} has no capabilities`);
      assert.ok(p.noNewPrivs, `pid ${p.pid}: allowPrivilegeEscalation false`);
      assert.ok(p.rootOptions.includes("ro"), `pid ${p.pid} root: ${p.rootOptions}`);
      assert.ok(p.cmdline.includes("--cached-only"), p.cmdline.join(" "));
      for (const w of OPERATOR_CMD) assert.ok(p.cmdline.some((a) => a.includes(w)), w);
    }
  });

  await env.step(
    t,
    "the probes pass; /metrics on the Pod's address is HTTPS and answers only a token bound to the metrics reader role",
    async () => {
      assert.equal(pods.length, 2);
      // A scraper as a cluster admin sets one up: a ServiceAccount bound to deploy/'s role.
      for (const sa of ["metrics-scraper", "metrics-unbound"]) {
        await env.kube.must(["create", "serviceaccount", sa, "-n", "default"]);
      }
      await env.kube.must([
        "create",
        "clusterrolebinding",
        "metrics-scraper",
        `--clusterrole=${DEFAULT_RBAC_NAMES.metricsReader}`,
        "--serviceaccount=default:metrics-scraper",
      ]);
      const token = async (sa: string) =>
        (await env.kube.must(["create", "token", sa, "-n", "default"])).trim();
      const scraper = await token("metrics-scraper");
      const unbound = await token("metrics-unbound");
      for (const p of pods) {
        assert.ok(isReady(p), "the kubelet's readiness probe passed");
        const ip = p.status.podIP;
        assert.ok(ip, "the Pod has an address");
        assert.equal((await scrapeHttps(ip, 8080)).status, 401, "no token");
        assert.equal((await scrapeHttps(ip, 8080, "forged")).status, 401, "a forged token");
        assert.equal((await scrapeHttps(ip, 8080, unbound)).status, 403, "not bound");
        const ok = await scrapeHttps(ip, 8080, scraper);
        assert.equal(ok.status, 200, ok.body);
        assert.equal(ok.issuer, "platform-operator", "self-signed");
        assert.match(ok.body, /^platform_operator_\w+/m);
      }
    },
  );

  await env.step(t, "in-cluster configuration and token; every sample settles", async () => {
    const logs = await env.kube.must(["logs", "-n", NS, pods[0].metadata.name]);
    assert.match(logs, /"config":"in-cluster service account"/, logs.slice(0, 2000));
    assert.match(logs, /"server":"https:\/\/10\.96\.0\.1:443"/);
    const since = Date.now();
    await env.kube.must(["apply", "-R", "-f", join(REPO_ROOT, "samples")]);
    // KEDA runs on the kwok node, whose Pods never serve: the Scaler shows the aggregator's verdict.
    await waitFor(
      "the Serverless Ready, the Scaler Warning (KEDA's metrics API unreachable)",
      async () => {
        const lines = (await env.kube.must(["get", "serverlesses,scalers", "-A", "--no-headers"]))
          .split("\n");
        return lines.filter((l) => /\sserverless\.\S+\s+Ready\s+True\s/.test(l)).length === 1 &&
          lines.filter((l) => /\sscaler\.\S+\s+Warning\s+True\s/.test(l)).length === 1;
      },
      { timeoutMs: 240_000 },
    );
    const [keda] = await env.kube.list("scalers", { allNamespaces: true });
    assert.ok(statusMatches(keda, SCALER_ON_KWOK), describe(keda));
    assertAggregatorVerdict(keda);
    await waitFor("the RateLimit samples settle", async () => {
      const table = await env.kube.must(["get", "ratelimits", "-A", "--no-headers"]);
      const rows = table.trim().split("\n");
      return rows.filter((l) => /\sReady\s/.test(l)).length === 2 &&
        rows.filter((l) => /\sError\s/.test(l)).length === 1;
    }, { timeoutMs: 120_000 });
    // Written by the Pods, as the ServiceAccount, with deploy/'s roles only.
    assert.ok(await env.cluster.countWrites({ user: OPERATOR_USER, sinceMs: since }) > 0);
  });

  await env.step(
    t,
    "a rule removed from the role: the denial is reported, nothing is lost",
    async () => {
      const role = JSON.parse(
        await env.kube.must(["get", "clusterrole", partRoleName("ratelimit"), "-o", "json"]),
      );
      const before = role.rules.length;
      role.rules = role.rules.filter((r: { apiGroups: string[] }) =>
        !r.apiGroups.includes("networking.istio.io")
      );
      assert.equal(role.rules.length, before - 1);
      await env.kube.must(["replace", "-f", "-"], { stdin: JSON.stringify(role) });
      const filters = await env.kube.list("envoyfilters.networking.istio.io", {
        allNamespaces: true,
      });
      await env.kube.must(["create", "namespace", "e2e-denied"]);
      await env.kube.apply([rateLimit("e2e-denied", "denied", "denied")]);
      const seen = await waitFor("the denial in the RateLimit's status or an Event", async () => {
        const rl = await env.kube.get("ratelimits", "denied", "e2e-denied");
        const events = await env.kube.must(["get", "events", "-n", "e2e-denied", "-o", "json"]);
        const text = `${describe(rl)}\n${events}`;
        return /forbidden/i.test(text) && /envoyfilters/.test(text) ? text : undefined;
      }, { timeoutMs: 90_000 });
      assert.match(
        seen,
        /cannot (create|patch) resource \\?"envoyfilters\\?"/,
        seen.slice(0, 3000),
      );
      const still = await env.kube.list("envoyfilters.networking.istio.io", {
        allNamespaces: true,
      });
      assert.equal(still.length, filters.length, "no EnvoyFilter was lost");
      await env.kube.must(["apply", "-k", overlay]);
      await env.waitStatus("ratelimits", "e2e-denied", "denied", { state: "Ready" });
    },
  );

  await env.step(
    t,
    "the leader's Pod deleted: the standby leads within 15 s, no duplicate write",
    async () => {
      await node.placeNamespace(NS); // the replacement Pod runs the image too
      const leader = await waitFor("a leader", () => leaseHolder(env));
      const standby = pods.map((p) => p.metadata.name).find((n) => n !== leader);
      assert.ok(standby && pods.some((p) => p.metadata.name === leader), `${leader} of ${pods}`);
      const t0 = Date.now();
      await env.kube.must(["delete", "pod", "-n", NS, leader, "--wait=false"]);
      // The standby, or the ReplicaSet's replacement if it campaigns first: another live Pod.
      const next = await waitFor("another replica to hold the Lease", async () => {
        const holder = await leaseHolder(env);
        const live = (await operatorPods(env)).map((p) => p.metadata.name);
        return holder && holder !== leader && live.includes(holder) ? holder : undefined;
      }, {
        timeoutMs: 15_000,
        describe: async () =>
          `holder ${await leaseHolder(env)}; pods ${
            (await operatorPods(env)).map((p) => `${p.metadata.name} ready=${isReady(p)}`)
          }`,
      });
      const handover = Date.now() - t0;
      await waitFor("the deleted Pod to be gone", async () => {
        return !(await operatorPods(env)).some((p) => p.metadata.name === leader) &&
          !await env.kube.get("pods", leader, NS);
      }, { timeoutMs: 30_000 });
      const gone = Date.now() - t0;
      console.error(
        `[deployed] ${leader} deleted; ${next} leads after ${handover} ms ` +
          `(${
            next === standby ? "the standby" : "the replacement"
          }), old Pod gone after ${gone} ms`,
      );
      // Sooner than the Lease's 10 s duration: the old leader released it, it did not expire.
      assert.ok(handover < 10_000, `handover took ${handover} ms`);
      // Well inside the 30 s grace period: SIGTERM ended it, not the kubelet's SIGKILL.
      assert.ok(gone < 20_000, `the old Pod took ${gone} ms`);
      await new Promise((r) => setTimeout(r, 5_000));
      // Leases (the election), Events and the new standby's startup access checks are not
      // writes of state; any other write since the deletion repeats one the old leader made.
      const notState = ["leases", "events", "selfsubjectrulesreviews", "selfsubjectaccessreviews"];
      const writes = (await env.cluster.writes({ user: OPERATOR_USER, sinceMs: t0 }))
        .filter((w) => !notState.includes(w.objectRef?.resource ?? ""));
      assert.deepEqual(writes.map((w) => `${w.verb} ${w.objectRef?.resource}`), []);
      pods = await twoReady(env);
    },
  );

  await env.step(t, "a module workload whose image cannot be pulled is never Ready", async () => {
    const deployments = await env.kube.list<PodView>("deployments", {
      namespace: NS,
      labelSelector: "app.kubernetes.io/managed-by=platform-operator",
    });
    const serverless = deployments.find((d) => /serverless/.test(d.metadata.name));
    assert.ok(serverless, deployments.map((d) => d.metadata.name).join(", "));
    const selector = Object.entries(
      (serverless as unknown as { spec: { selector: { matchLabels: Record<string, string> } } })
        .spec.selector.matchLabels,
    ).map(([k, v]) => `${k}=${v}`).join(",");
    await env.kube.must(["delete", "pods", "-n", NS, "-l", selector, "--wait=false"]);
    const sv = await waitFor("the Serverless to leave Ready", async () => {
      const o = await env.kube.get("serverlesses", "default", NS);
      return o && (o.status as { state?: string })?.state !== "Ready" ? o : undefined;
    }, { timeoutMs: 120_000 });
    console.error(`[deployed] ${describe(sv)}`);
    for (let i = 0; i < 10; i++) {
      const o = await env.kube.get("serverlesses", "default", NS);
      assert.notEqual((o?.status as { state?: string })?.state, "Ready", describe(o));
      await new Promise((r) => setTimeout(r, 2_000));
    }
  });

  await env.step(t, "the operator's Pods never restarted: the liveness probe held", () => {
    assert.equal(pods.length, 2);
    for (const p of pods) assert.equal(p.status.containerStatuses?.[0].restartCount, 0);
    return Promise.resolve();
  });
}, { realNode: true, skip: REAL_NODE_SKIP });
