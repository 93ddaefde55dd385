/**
 * End-to-end check of the local control plane: node Ready, Deployments through kwok, quota
 * failures surfacing as ReplicaFailure, apiserver restart, audit counting, clean shutdown.
 * Runs only when the binaries are built or can be built (a Go toolchain is on PATH).
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { join } from "node:path";
import { buildStatus, type ClusterHandle, ensureBuilt, OPERATOR_USER, up } from "./mod.ts";
import { CACHE_DIR } from "./paths.ts";
import { exists } from "../files.ts";
import { isAlive } from "../processes.ts";
import { readState } from "./state.ts";
import { deployment, eventually, ok } from "./test_helpers.ts";

const build = await buildStatus();
const canRun = build.stale.length === 0 || build.goAvailable;
const log = (msg: string) => console.error(`[cluster] ${msg}`);

Deno.test({
  name: "ensureBuilt checks once a process: a second call (as up makes) says nothing",
  ignore: !canRun,
  async fn() {
    const lines: string[] = [];
    const first = await ensureBuilt((m) => lines.push(m));
    const second = await ensureBuilt((m) => lines.push(m));
    assertEquals(second, first);
    const upToDate = lines.filter((l) => l.includes("up to date"));
    assert(upToDate.length <= 1, `logged ${JSON.stringify(lines)}`);
    assertEquals(await ensureBuilt((m) => lines.push(`third: ${m}`)), first);
    assert(!lines.some((l) => l.startsWith("third")), `logged ${JSON.stringify(lines)}`);
  },
});

Deno.test({
  name: "local cluster: up, workloads, quota, restart, audit, down",
  ignore: !canRun,
  async fn(t) {
    const dir = join(CACHE_DIR, `test-${Deno.pid}`);
    const c = await up({ dir, log });
    const pids = (await readState(c.dir))?.components.map((x) => x.pid) ?? [];
    let stopped = false;
    try {
      await t.step("the node is Ready", async () => {
        const out = await ok(c, ["get", "nodes", "-o", "json"]);
        const nodes = JSON.parse(out).items as {
          status: { conditions: { type: string; status: string }[] };
        }[];
        assertEquals(nodes.length, 1);
        const ready = nodes[0].status.conditions.find((x) => x.type === "Ready");
        assertEquals(ready?.status, "True");
      });

      await t.step("a Deployment gets a Ready Pod through kwok", async () => {
        await ok(c, ["create", "namespace", "e2e-apps"]);
        await ok(c, ["apply", "-f", "-"], deployment("e2e-apps", "web"));
        await ok(c, ["rollout", "status", "-n", "e2e-apps", "deploy/web", "--timeout=90s"]);
        const ready = await ok(c, [
          "get",
          "pods",
          "-n",
          "e2e-apps",
          "-l",
          "app=web",
          "-o",
          'jsonpath={.items[*].status.conditions[?(@.type=="Ready")].status}',
        ]);
        assertEquals(ready.trim(), "True");
      });

      await t.step("a pods=0 ResourceQuota yields ReplicaFailure", async () => {
        await ok(c, ["create", "namespace", "e2e-quota"]);
        await ok(c, ["create", "quota", "no-pods", "-n", "e2e-quota", "--hard=pods=0"]);
        await eventually("quota status", async () => {
          const r = await c.kubectl([
            "get",
            "quota",
            "no-pods",
            "-n",
            "e2e-quota",
            "-o",
            "jsonpath={.status.hard.pods}",
          ]);
          return r.stdout.trim() === "0" ? true : undefined;
        });
        await ok(c, ["apply", "-f", "-"], deployment("e2e-quota", "blocked"));
        const reason = await eventually("ReplicaFailure", async () => {
          const r = await c.kubectl([
            "get",
            "deploy",
            "blocked",
            "-n",
            "e2e-quota",
            "-o",
            'jsonpath={.status.conditions[?(@.type=="ReplicaFailure")].reason}',
          ]);
          return r.stdout.trim() || undefined;
        });
        assertEquals(reason, "FailedCreate");
      });

      await t.step("restartApiserver brings the apiserver back", async () => {
        const before = (await readState(c.dir))?.components.find((x) =>
          x.name === "kube-apiserver"
        );
        await c.restartApiserver();
        const after = (await readState(c.dir))?.components.find((x) => x.name === "kube-apiserver");
        assert(before && after && before.pid !== after.pid, "apiserver pid changed");
        pids.push(after.pid);
        await ok(c, ["get", "namespaces"]);
      });

      await t.step(
        "the operator is deploy/'s ServiceAccount with deploy/rbac.yaml's rules",
        async () => {
          const as = (args: string[]) => c.kubectl(args, { kubeconfig: c.operatorKubeconfig });
          const who = await as(["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"]);
          assertEquals(who.stdout.trim(), OPERATOR_USER, who.stderr);
          const can = async (...args: string[]) =>
            (await as(["auth", "can-i", ...args])).stdout.trim();
          assertEquals(await can("patch", "envoyfilters.networking.istio.io", "-A"), "yes");
          assertEquals(await can("create", "leases", "-n", "platform-system"), "yes");
          // What neither the operator's code nor the modules' roles (which it holds to grant them,
          // deploy/rbac.yaml) need is not there; named objects only by their names.
          assertEquals(await can("create", "pods", "-A"), "no");
          assertEquals(await can("delete", "nodes"), "no");
          assertEquals(await can("escalate", "clusterroles"), "no");
          assertEquals(await can("bind", "clusterroles"), "no");
          assertEquals(await can("impersonate", "users"), "no");
          assertEquals(await can("patch", "customresourcedefinitions/other.example.com"), "no");
          assertEquals(
            await can("patch", "customresourcedefinitions/scaledobjects.keda.sh"),
            "yes",
          );
        },
      );

      await t.step("countWrites counts writes per user", async () => {
        const since = Date.now();
        assertEquals(await c.countWrites({ user: "admin", sinceMs: since }), 0);
        await ok(c, ["create", "configmap", "counted", "-n", "default"]);
        const r = await c.kubectl(["create", "configmap", "by-operator", "-n", "default"], {
          kubeconfig: c.operatorKubeconfig,
        });
        assertEquals(r.code, 0, r.stderr);
        assertEquals(await c.countWrites({ user: "admin", sinceMs: since }), 1);
        assertEquals(await c.countWrites({ user: OPERATOR_USER, sinceMs: since }), 1);
        const metrics = await fetchMetrics(c);
        assert(metrics.includes("apiserver_request_total"), "/metrics reachable");
      });
    } finally {
      await c.down();
      stopped = true;
    }

    await t.step("down leaves no process and no data", async () => {
      assert(stopped);
      for (const pid of pids) assert(!isAlive(pid), `pid ${pid} still running`);
      assert(!await exists(dir), `${dir} removed`);
    });
  },
});

async function fetchMetrics(c: ClusterHandle): Promise<string> {
  const client = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(c.caCert)] });
  try {
    const res = await fetch(`${c.server}/metrics`, {
      client,
      headers: { Authorization: `Bearer ${c.tokens.admin}` },
    });
    return await res.text();
  } finally {
    client.close();
  }
}
