/**
 * The Serverless module on the real node (issue #44 points 3 and 4), as far as images that run
 * here allow: Kyma's serverless controller image cannot be made here, so podcheck stands in for it
 * (`--serverless-image`): it runs as the module's Deployment renders it (its probes answered on
 * port 8090, the ConfigMaps mounted read-only) and shows what it was given (/file reads a mounted
 * file). What this proves is the module's side: a Serverless edit reaches the running Pod (a new
 * Pod, the new configuration in its mounted files) with the Serverless Processing then Ready; the
 * deletion waits for a Function, names it, and removes the module leaving nothing behind. What it
 * cannot prove is that Kyma's controller reads that configuration as meant: that is Kyma's code.
 */
import assert from "node:assert/strict";
import { type E2E, e2eSuite, waitFor } from "./harness.ts";
import { fn, moduleSelector, serverless } from "./fixtures.ts";
import { conditionOf, describe, statesWritten, statusOf } from "./status.ts";
import { REAL_NODE_SKIP } from "../../tools/cluster/real_node_fixtures.ts";
import { realNodeNamespace } from "./keda_real.ts";
import { moduleGrantsRole } from "../../src/kube/rbac.ts";
import { CONTROLLER_DEPLOYMENT } from "../../src/reconcile/serverless/render.ts";
import { MODULE_GROUPS, nothingLeftBehind } from "./left_behind.ts";

const NS = "serverless-real";
const USER_NS = "serverless-user";

interface PodJson {
  metadata: { name: string; labels?: Record<string, string>; deletionTimestamp?: string };
  spec: { nodeName?: string; containers: { image: string }[] };
  status?: { podIP?: string; conditions?: { type: string; status: string }[] };
}

/** The module's controller Pods that are not on their way out. */
async function controllerPods(env: E2E): Promise<PodJson[]> {
  const ps = await env.kube.list<PodJson>("pods", { namespace: NS });
  return ps.filter((p) =>
    !p.metadata.deletionTimestamp &&
    p.metadata.labels?.["app.kubernetes.io/name"] === CONTROLLER_DEPLOYMENT
  );
}

const isReady = (p: PodJson) =>
  p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;

/** A file as the running controller Pod sees it (podcheck's /file, over the project's bridge). */
async function mounted(pod: PodJson, path: string): Promise<string> {
  const res = await fetch(`http://${pod.status!.podIP}:8080/file?path=${encodeURIComponent(path)}`);
  const text = await res.text();
  assert.equal(res.status, 200, `${path}: ${text}`);
  return text;
}

e2eSuite("serverless-real", async (env, t) => {
  const node = env.cluster.realNode!;
  await env.step(
    t,
    "the Serverless module's Pod runs on the real node (podcheck standing in)",
    async () => {
      await env.installCrds();
      await env.kube.apply([realNodeNamespace(NS), realNodeNamespace(USER_NS)]);
      await env.kube.apply(moduleGrantsRole(NS));
      assert.deepEqual(await node.loadImage(node.podcheckArchive), [node.podcheckImage]);
      await waitFor("default ServiceAccounts", async () => {
        for (const ns of [NS, USER_NS]) if (!await env.kube.get("sa", "default", ns)) return false;
        return true;
      });
      await env.startServing({
        identity: "serverless-real",
        extraArgs: ["--controllers=serverless", `--serverless-image=${node.podcheckImage}`],
      });
      await env.kube.apply([serverless(NS, "default")]);
      const s = await env.waitStatus("serverless", NS, "default", { state: "Ready" }, {
        timeoutMs: 180_000,
        intervalMs: 1000,
      });
      assert.equal(statusOf(s).logLevel, "info", describe(s));
      // Ready says the rollout is complete; a Pod of an earlier template may still be on its way.
      const pod = await waitFor("one Ready controller Pod", async () => {
        const ps = await controllerPods(env);
        return ps.length === 1 && isReady(ps[0]) ? ps[0] : undefined;
      }, { timeoutMs: 60_000, describe: async () => JSON.stringify(await controllerPods(env)) });
      assert.equal(pod.spec.nodeName, node.name);
      assert.match(await mounted(pod, "/appdata/log/log-config.yaml"), /logLevel: "info"/);
    },
  );

  await env.step(
    t,
    "an edit reaches the running Pod: Processing, then Ready with the new files",
    async () => {
      const [before] = await controllerPods(env);
      const states: string[] = [];
      // The states the operator wrote, from the audit log: a Processing shorter than the poll's
      // period (250 ms plus kubectl's time) is there too.
      const editAt = Date.now();
      const written = () => statesWritten(env.cluster, "serverlesses", NS, editAt);
      await env.kube.must([
        "patch",
        "serverless",
        "default",
        "-n",
        NS,
        "--type=merge",
        "-p",
        JSON.stringify({ spec: { logLevel: "debug", functionRequeueDuration: "7m" } }),
      ]);
      const pod = await waitFor("a new Ready controller Pod and the Serverless Ready", async () => {
        const s = await env.kube.get("serverless", "default", NS);
        states.push(String(statusOf(s).state));
        const ps = await controllerPods(env);
        const fresh = ps.filter((p) => p.metadata.name !== before.metadata.name);
        return statusOf(s).state === "Ready" && statusOf(s).logLevel === "debug" &&
            ps.length === 1 && fresh.length === 1 && isReady(fresh[0])
          ? fresh[0]
          : undefined;
      }, {
        timeoutMs: 180_000,
        intervalMs: 250,
        describe: async () =>
          JSON.stringify({
            before: before.metadata.name,
            written: await written(),
            states: [...new Set(states)],
            pods: (await controllerPods(env)).map((p) => [p.metadata.name, isReady(p)]),
            template: (await env.kube.get<{ spec: { template: { metadata: unknown } } }>(
              "deployment",
              CONTROLLER_DEPLOYMENT,
              NS,
            ))?.spec.template.metadata,
          }),
      });
      const wrote = await written();
      const processing = wrote.indexOf("Processing");
      assert.ok(
        processing >= 0 && wrote.slice(processing).includes("Ready"),
        `states written since the edit: ${wrote.join(", ")}; states read: ` +
          [...new Set(states)].join(", "),
      );
      assert.match(await mounted(pod, "/appdata/log/log-config.yaml"), /logLevel: "debug"/);
      assert.match(
        await mounted(pod, "/appdata/config/function-config.yaml"),
        /functionRequeueDuration: "7m"/,
      );
    },
  );

  await env.step(
    t,
    "deletion waits for the Function, names it, then leaves nothing behind",
    async () => {
      await env.kube.apply([fn(USER_NS, "hello")]);
      await env.kube.delete("serverless", ["default"], NS);
      const s = await env.waitStatus("serverless", NS, "default", {
        state: "Error",
        conditions: [{ type: "Deleted", status: "False", reason: "DeletionErr" }],
      });
      assert.match(
        conditionOf(s, "Deleted")?.message ?? "",
        new RegExp(`\\b1 Function \\(${USER_NS}/hello\\) still exists`),
        describe(s),
      );
      assert.equal((await controllerPods(env)).length, 1, "the module was removed while blocked");
      await env.kube.delete("function", ["hello"], USER_NS);
      await env.waitGone("serverless", NS, "default", { timeoutMs: 120_000 });
      const left = await env.kube.list("deployments", {
        allNamespaces: true,
        labelSelector: moduleSelector("serverless"),
      });
      assert.deepEqual(left.map((d) => d.metadata.name), []);
      await nothingLeftBehind(env, MODULE_GROUPS.serverless);
    },
  );
}, { realNode: true, skip: REAL_NODE_SKIP });
