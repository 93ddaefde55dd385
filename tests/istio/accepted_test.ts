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
import { REPO_ROOT } from "../../tools/cluster/paths.ts";
import { ok } from "../../tools/cluster/test_helpers.ts";
import { proxyOfPod } from "../../tools/istio-check/proxy-standin/mod.ts";
import { acceptedOf as accepted, injectedDemo, meshTest, otherFilter } from "./mesh_fixtures.ts";

/** Someone else's EnvoyFilter merging `rate_limits: [{actions: []}]` into the demo's routes. */
const BROKEN = otherFilter("team-b-broken", { route: { rate_limits: [{ actions: [] }] } });

meshTest(
  "Accepted from a real istiod: the sample accepted, another team's broken filter rejected, then fixed",
  "accepted",
  async (m, t) => {
    const { c } = m;
    const [pod] = await injectedDemo(c);
    const app = proxyOfPod(pod);
    await m.standin([app]);
    const { until } = await m.operator("accepted");
    const generation = async () =>
      JSON.parse(await ok(c, ["get", "envoyfilter", "httpbin", "-n", "demo", "-o", "json"]))
        .metadata.generation;

    let applied = 0;
    await t.step("the sample RateLimit: Accepted True on the one proxy", async () => {
      const started = Date.now();
      await ok(c, ["apply", "-f", join(REPO_ROOT, "samples", "ratelimit-workload.yaml")]);
      const s = await until("Accepted True", (s) => accepted(s)?.status === "True");
      console.error(`apply to Accepted: ${((Date.now() - started) / 1000).toFixed(1)} s`);
      assert.deepEqual(s.proxies, { accepted: 1, rejected: 0, pending: 0, notConnected: 0 });
      assert.equal(accepted(s)?.reason, "Accepted");
      applied = await generation();
    });

    await t.step(
      "another team's filter breaks the listener: ProxyRejected names the proxy",
      async () => {
        await ok(c, ["apply", "-f", "-"], BROKEN);
        const s = await until("Accepted False", (s) => accepted(s)?.status === "False");
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
      await until("Accepted True again", (s) => accepted(s)?.status === "True");
      assert.equal(await generation(), applied);
    });
  },
);
