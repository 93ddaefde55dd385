/**
 * Status from the proxies, end to end: the operator (started with --istiod-url) against a real
 * istiod on the local control plane, with the proxy stand-in (tools/istio-check/proxy-standin, a
 * test harness standing in for Envoy) as the demo Pod's sidecar.
 *
 * - samples/ratelimit-workload.yaml: Accepted True, the one proxy counted accepted;
 * - someone else's EnvoyFilter on the same workload that makes the listener invalid (Kyma
 *   api-gateway#2380's `rate_limits: [{actions: []}]`): Accepted False ProxyRejected, naming the
 *   proxy and Envoy's error; our RateLimit unchanged;
 * - that filter deleted: Accepted True again, with no change to ours.
 *
 * The operator runs on this machine and reaches istiod from loopback, which istiod never checks
 * (tools/cluster/istiod.ts); the token path is covered by tests/istio/istiod_cluster_test.ts.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { type ClusterHandle, up } from "../../tools/cluster/mod.ts";
import { CACHE_DIR, REPO_ROOT } from "../../tools/cluster/paths.ts";
import { eventually, ok } from "../../tools/cluster/test_helpers.ts";
import {
  proxyOfPod,
  type ProxyStandin,
  startProxyStandin,
} from "../../tools/istio-check/proxy-standin/mod.ts";
import { OperatorProcess } from "../../tools/operator/process.ts";
import { otherFilter } from "./mesh_fixtures.ts";

interface Condition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

interface RateLimitStatus {
  proxies?: Record<string, number>;
  conditions?: Condition[];
}

/** Someone else's EnvoyFilter merging `rate_limits: [{actions: []}]` into the demo's routes. */
const BROKEN = otherFilter("team-b-broken", { route: { rate_limits: [{ actions: [] }] } });

Deno.test({
  name:
    "Accepted from a real istiod: the sample accepted, another team's broken filter rejected, then fixed",
  async fn(t) {
    const log = (msg: string) => console.error(`[cluster] ${msg}`);
    const dir = join(CACHE_DIR, `test-accepted-${Deno.pid}`);
    const c: ClusterHandle = await up({ dir, log, mesh: true });
    const istiod = c.istiod;
    assert.ok(istiod, "up({ mesh: true }) gives an istiod");
    let standin: ProxyStandin | undefined;
    let operator: OperatorProcess | undefined;
    try {
      await ok(c, ["apply", "-k", join(REPO_ROOT, "crds")]);
      await ok(c, ["wait", "--for=condition=Established", "crd", "--all", "--timeout=60s"]);
      await ok(c, ["apply", "-f", join(REPO_ROOT, "samples", "demo-workload.yaml")]);
      // The Pods run on kwok: they carry the injector's status annotation, as injected Pods do, so
      // the operator counts their proxy (the stand-in plays it).
      const injected = { "sidecar.istio.io/status": '{"containers":["istio-proxy"]}' };
      await ok(c, [
        "patch",
        "deploy/httpbin",
        "-n",
        "demo",
        "--type=merge",
        "-p",
        JSON.stringify({ spec: { template: { metadata: { annotations: injected } } } }),
      ]);
      await ok(c, ["rollout", "status", "-n", "demo", "deploy/httpbin", "--timeout=90s"]);
      const pod = await eventually("one injected httpbin Pod", async () => {
        const items = JSON.parse(
          await ok(c, ["get", "pods", "-n", "demo", "-l", "app=httpbin", "-o", "json"]),
        ).items as {
          metadata: { annotations?: Record<string, string>; deletionTimestamp?: string };
        }[];
        const live = items.filter((p) => !p.metadata.deletionTimestamp);
        return live.length === 1 && live[0].metadata.annotations?.["sidecar.istio.io/status"]
          ? live[0]
          : undefined;
      });
      const app = proxyOfPod(pod as unknown as Parameters<typeof proxyOfPod>[0]);
      standin = await startProxyStandin(istiod.xds, [app], log);
      const tokenFile = join(dir, "istiod-token");
      await Deno.writeTextFile(
        tokenFile,
        await istiod.token("platform-system", "platform-operator"),
      );
      operator = await OperatorProcess.start({
        kubeconfig: c.operatorKubeconfig,
        identity: "accepted",
        logDir: join(dir, "logs"),
        extraArgs: [
          "--controllers=ratelimit",
          `--istiod-url=${istiod.debug}`,
          `--istiod-token-file=${tokenFile}`,
        ],
      });
      const status = async (): Promise<RateLimitStatus> =>
        JSON.parse(await ok(c, ["get", "ratelimit", "httpbin", "-n", "demo", "-o", "json"]))
          .status ?? {};
      const accepted = (s: RateLimitStatus) => s.conditions?.find((x) => x.type === "Accepted");
      /** `eventually`, saying on a timeout what the status and the operator's log last said. */
      const until = async <T>(what: string, fn: () => Promise<T | undefined>): Promise<T> => {
        try {
          return await eventually(what, fn, Number(Deno.env.get("ACCEPTED_WAIT_MS") ?? 90_000));
        } catch (e) {
          const log = await Deno.readTextFile(operator!.logPath).catch(() => "");
          const lines = log.split("\n").filter((l) => /istiod|error|warn/i.test(l)).slice(-20);
          throw new Error(
            `${(e as Error).message}; status: ${JSON.stringify(await status())}\n${
              lines.join("\n")
            }`,
          );
        }
      };
      const generation = async () =>
        JSON.parse(await ok(c, ["get", "envoyfilter", "httpbin", "-n", "demo", "-o", "json"]))
          .metadata.generation;

      let applied = 0;
      await t.step("the sample RateLimit: Accepted True on the one proxy", async () => {
        const started = Date.now();
        await ok(c, ["apply", "-f", join(REPO_ROOT, "samples", "ratelimit-workload.yaml")]);
        const s = await until("Accepted True", async () => {
          const s = await status();
          return accepted(s)?.status === "True" ? s : undefined;
        });
        console.error(`apply to Accepted: ${((Date.now() - started) / 1000).toFixed(1)} s`);
        assert.deepEqual(s.proxies, { accepted: 1, rejected: 0, pending: 0, notConnected: 0 });
        assert.equal(accepted(s)?.reason, "Accepted");
        applied = await generation();
      });

      await t.step(
        "another team's filter breaks the listener: ProxyRejected names the proxy",
        async () => {
          await ok(c, ["apply", "-f", "-"], BROKEN);
          const s = await until("Accepted False", async () => {
            const s = await status();
            return accepted(s)?.status === "False" ? s : undefined;
          });
          const cond = accepted(s)!;
          assert.equal(cond.reason, "ProxyRejected");
          assert.match(
            cond.message,
            new RegExp(`${app.pod} rejected the (listeners|routes) istiod sent it: .*[Aa]ctions`),
          );
          assert.equal(s.proxies?.rejected, 1);
          // Ours is untouched: the rejection is not our filter's fault.
          assert.equal(await generation(), applied);
        },
      );

      await t.step("that filter deleted: Accepted True again, ours unchanged", async () => {
        await ok(c, ["delete", "envoyfilter", "team-b-broken", "-n", "demo"]);
        await until("Accepted True again", async () => {
          const s = await status();
          return accepted(s)?.status === "True" ? s : undefined;
        });
        assert.equal(await generation(), applied);
      });
    } finally {
      await operator?.stop();
      await standin?.stop();
      await c.down();
    }
  },
});
