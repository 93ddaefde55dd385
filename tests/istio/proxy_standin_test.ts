/**
 * The proxy stand-in (tools/istio-check/proxy-standin, a test harness standing in for Envoy):
 *
 * - its Go tests: Envoy's constructor checks one case each (every one fails when its check is
 *   taken out), the order of requests, ACK and NACK, a rejection keeping the last config;
 * - against a real istiod on the local control plane (`up({ mesh: true })`), as the demo Pod's
 *   sidecar and the ingress gateway's router: the operator's EnvoyFilter for
 *   samples/ratelimit-workload.yaml is acknowledged, with `envoy.filters.http.local_ratelimit`
 *   right before the router and the per-route config on the routes; Kyma api-gateway#2380's shape
 *   (`rate_limits: [{actions: []}]`, on a route or in a local rate limit config) is rejected,
 *   istiod's /debug/syncz shows that proxy's NACK with the error and no ack of that nonce, and
 *   the stand-in keeps serving its previous listener.
 *
 * Needs Go (the control plane, pilot-discovery and the stand-in are built once into .cache/).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO_ROOT } from "../../tools/cluster/paths.ts";
import { eventually, ok } from "../../tools/cluster/test_helpers.ts";
import { ensureProxyStandin, GO_MISSING, MODULE_DIR } from "../../tools/istio-check/build.ts";
import { goEnv, goVersion } from "../../tools/gobuild.ts";
import { renderCases, repoSources } from "../../tools/istio-check/render.ts";
import {
  type JsonObject,
  proxyOfPod,
  type ProxyView,
} from "../../tools/istio-check/proxy-standin/mod.ts";
import { parseSyncz, type ProxySync, verdictOf } from "../../src/api/istiod.ts";
import { runCommand } from "../command.ts";
import { assertNoNacks, meshTest, otherFilter, proxyKey, XDS_TYPES } from "./mesh_fixtures.ts";

const LRL = "envoy.filters.http.local_ratelimit";
const ROUTER = "envoy.filters.http.router";
const HCM_TYPE =
  "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager";

Deno.test("the stand-in's Go tests pass, each of Envoy's constructor checks by name", async () => {
  if (await goVersion(MODULE_DIR) === null) throw new Error(GO_MISSING);
  const out = await new Deno.Command("go", {
    args: ["test", "-v", "./proxy-standin/...", "./internal/..."],
    cwd: MODULE_DIR,
    env: goEnv(),
    stdin: "null",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, text);
  const passed = [...text.matchAll(/^\s*--- PASS: (\S+)/gm)].map((m) => m[1]);
  assert.doesNotMatch(text, /--- SKIP/);
  for (
    const name of [
      "TestLocalRateLimitChecks/per-route_config_without_a_bucket",
      "TestLocalRateLimitChecks/the_same_descriptor_twice",
      "TestLocalRateLimitChecks/default_bucket_filled_every_49_ms",
      "TestHTTPFilterChainChecks/the_router_before_the_local_rate_limit",
      "TestHTTPFilterChainChecks/a_filter_of_a_type_no_factory_registers",
      "TestHTTPConnectionManagerChecks/two_upgrade_configs_of_one_name",
      "TestRouteConfigurationChecks/a_per-route_local_rate_limit_without_a_bucket",
      "TestEmptyActionsAreRejected",
      "TestListenersAreBuiltOneByOne",
    ]
  ) {
    assert.ok(passed.includes(name), `${name} did not run and pass:\n${text}`);
  }
  assert.ok(passed.length >= 70, `only ${passed.length} tests and cases passed`);
});

Deno.test("the stand-in refuses an endpoint off loopback and a proxy it cannot be", async () => {
  const bin = await ensureProxyStandin();
  const run = (args: string[], stdin?: string) => runCommand(bin, args, { stdin });
  const offLoopback = await run(["-listen", "0.0.0.0:0"]);
  assert.equal(offLoopback.code, 2);
  assert.match(offLoopback.stderr, /-listen 0\.0\.0\.0:0 is not a loopback address/);
  const proxies = (p: Record<string, unknown>) =>
    JSON.stringify({ proxies: [{ pod: "a", namespace: "b", ip: "10.0.0.1", ...p }] });
  const waypoint = await run(["-proxies", "-"], proxies({ type: "waypoint" }));
  assert.equal(waypoint.code, 2);
  assert.match(waypoint.stderr, /type "waypoint" is neither sidecar nor router/);
  const noIp = await run(["-proxies", "-"], proxies({ type: "sidecar", ip: "pod-a" }));
  assert.equal(noIp.code, 2);
  assert.match(noIp.stderr, /ip "pod-a"/);
});

/** The EnvoyFilter the operator renders for samples/ratelimit-workload.yaml. */
async function sampleEnvoyFilter(): Promise<JsonObject> {
  const sources = (await repoSources()).filter((s) => s.name === "samples/ratelimit-workload.yaml");
  const { cases } = renderCases(sources);
  assert.equal(cases.length, 1);
  return cases[0].envoyFilter as unknown as JsonObject;
}

/** The per-route LocalRateLimit of the sample's HTTP_ROUTE patch. */
function patchedPerRoute(ef: JsonObject): JsonObject {
  const patches =
    (ef.spec as { configPatches: { applyTo: string; patch: { value: JsonObject } }[] })
      .configPatches;
  const route = patches.find((p) => p.applyTo === "HTTP_ROUTE");
  assert.ok(route, "the sample's filter patches routes");
  return (route.patch.value.typed_per_filter_config as Record<string, JsonObject>)[LRL];
}

const obj = (v: unknown): JsonObject =>
  typeof v === "object" && v !== null && !Array.isArray(v) ? v as JsonObject : {};
const list = (v: unknown): unknown[] => Array.isArray(v) ? v : [];

/** The HTTP connection managers of a listener, as protobuf JSON. */
function connectionManagers(listener: JsonObject): JsonObject[] {
  return list(listener.filter_chains).flatMap((fc) => list(obj(fc).filters))
    .map((f) => obj(obj(f).typed_config))
    .filter((tc) => tc["@type"] === HCM_TYPE);
}

function listenerOf(view: ProxyView, name: string): JsonObject | undefined {
  return view.config?.listeners.find((l) => l.name === name);
}

meshTest(
  "against a real istiod: the sample's limit is acknowledged, Kyma#2380's shape rejected",
  "proxy-standin",
  async ({ c, istiod, standin }, t) => {
    const ef = await sampleEnvoyFilter();
    await ok(c, ["apply", "-f", join(REPO_ROOT, "samples", "demo-workload.yaml")]);
    await ok(c, ["apply", "-f", "-"], JSON.stringify(ef));
    await ok(c, ["rollout", "status", "-n", "demo", "deploy/httpbin", "--timeout=90s"]);
    const podOf = async (ns: string, app: string) =>
      JSON.parse(await ok(c, ["get", "pods", "-n", ns, "-l", `app=${app}`, "-o", "json"]))
        .items[0];
    const app = proxyOfPod(await podOf("demo", "httpbin"));
    const gateway = proxyOfPod(await podOf("mesh-system", "mesh-ingressgateway"));
    assert.deepEqual([app.type, gateway.type], ["sidecar", "router"]);
    const key = proxyKey(app);
    const gatewayKey = proxyKey(gateway);

    // istiod's debug endpoints as the operator reads them: its own token (audience istio-ca).
    const token = await istiod.token("platform-system", "platform-operator");
    const syncz = async (id: string): Promise<ProxySync | undefined> => {
      const r = await istiod.get("/debug/syncz", { token });
      assert.equal(r.status, 200, r.body);
      return parseSyncz(JSON.parse(r.body)).proxies.find((p) => p.id === id);
    };

    const started = await standin([app, gateway]);
    let accepted: ProxyView | undefined;

    await t.step(
      "the sidecar acknowledges all four types; the limit sits before the router",
      async () => {
        accepted = await eventually(
          "the sidecar's listeners and routes acknowledged",
          async () => {
            const v = await started.proxy(key);
            const all = XDS_TYPES.every((k) => v.xds[k].acks > 0 && v.xds[k].acked);
            return all && listenerOf(v, "virtualInbound") ? v : undefined;
          },
        );
        assert.equal(accepted.connected, true);
        assert.match(
          accepted.id,
          new RegExp(
            `^sidecar~${app.ip.replaceAll(".", "\\.")}~${key}~demo\\.svc\\.cluster\\.local$`,
          ),
        );
        assertNoNacks(accepted);
        // istiod generated the Service's outbound cluster and the Pod's inbound one.
        assert.ok(
          accepted.xds.CDS.resources.includes("outbound|8000||httpbin.demo.svc.cluster.local"),
        );
        assert.ok(accepted.xds.CDS.resources.includes("inbound|8080||"));

        const managers = connectionManagers(listenerOf(accepted, "virtualInbound")!);
        assert.ok(managers.length > 0, "virtualInbound has HTTP filter chains");
        const want = patchedPerRoute(ef);
        let forwarding = 0;
        for (const m of managers) {
          const names = list(m.http_filters).map((f) => obj(f).name);
          assert.equal(names.filter((n) => n === LRL).length, 1, names.join(", "));
          assert.deepEqual(names.slice(-2), [LRL, ROUTER], names.join(", "));
          for (const vh of list(obj(m.route_config).virtual_hosts)) {
            for (const r of list(obj(vh).routes).map(obj)) {
              if (!r.route) continue;
              forwarding++;
              const perRoute = obj(obj(r.typed_per_filter_config)[LRL]);
              assert.deepEqual(perRoute.token_bucket, want.token_bucket);
              assert.deepEqual(perRoute.descriptors, want.descriptors);
              // Enforced for every request (protobuf JSON leaves out the default HUNDRED).
              assert.deepEqual(
                obj(obj(perRoute.filter_enforced).default_value).numerator,
                obj(obj(want.filter_enforced).default_value).numerator,
              );
              assert.equal(list(obj(r.route).rate_limits).length, 3, "one entry a rule");
            }
          }
        }
        assert.ok(forwarding > 0, "inbound routes that forward");

        const s = await eventually("istiod's syncz: the sidecar acknowledged", async () => {
          const p = await syncz(key);
          const v = await started.proxy(key);
          return p && verdictOf(p).state === "Acked" && p.listeners.acked === v.xds.LDS.nonce &&
              p.routes.acked === v.xds.RDS.nonce
            ? p
            : undefined;
        });
        assert.equal(s.type, "sidecar");
        assert.equal(s.istioVersion, "1.31.0");
      },
    );

    await t.step("the gateway connects as a router and acknowledges what it gets", async () => {
      const v = await eventually("the router's clusters and listeners acknowledged", async () => {
        const v = await started.proxy(gatewayKey);
        return v.xds.CDS.acked && v.xds.LDS.acked ? v : undefined;
      });
      assert.equal(v.type, "router");
      assert.equal(v.xds.LDS.nacks + v.xds.CDS.nacks, 0);
      const s = await eventually("the router in syncz", async () => await syncz(gatewayKey));
      assert.equal(s.type, "router");
    });

    const rejected = async (what: string, name: string, value: JsonObject, error: RegExp) => {
      const before = await started.proxy(key);
      const listenerBefore = listenerOf(before, "virtualInbound");
      const ackedBefore = (await syncz(key))?.listeners.acked;
      assert.ok(listenerBefore && ackedBefore);
      await ok(c, ["apply", "-f", "-"], otherFilter(name, value));
      const after = await eventually(`the sidecar's NACK of ${what}`, async () => {
        const v = await started.proxy(key);
        return v.xds.LDS.nacks > before.xds.LDS.nacks && !v.xds.LDS.acked ? v : undefined;
      });
      const lastError = after.xds.LDS.lastError ?? "";
      assert.match(lastError, /^Error adding\/updating listener\(s\) virtualInbound: /);
      assert.match(lastError, error);
      // The last accepted listener is kept, at its version.
      assert.deepEqual(listenerOf(after, "virtualInbound"), listenerBefore);
      assert.equal(after.xds.LDS.version, before.xds.LDS.version);
      // istiod records the NACK: its error, and no ack of the nonce it sent, which is the one the
      // stand-in rejected last.
      const [s, v] = await eventually("istiod's syncz: the NACK of the nonce sent", async () => {
        const p = await syncz(key);
        const v = await started.proxy(key);
        return p && p.listeners.lastError !== "" && p.listeners.sent === v.xds.LDS.nonce
          ? [p, v] as const
          : undefined;
      });
      assert.deepEqual(verdictOf(s), {
        state: "Rejected",
        type: "listeners",
        error: s.listeners.lastError,
      });
      assert.match(s.listeners.lastError, error);
      assert.notEqual(s.listeners.acked, s.listeners.sent);
      assert.equal(s.listeners.acked, ackedBefore);
      const nacked = v.history?.findLast((e) => e.type === "LDS");
      assert.ok(
        nacked && !nacked.ack && nacked.nonce === s.listeners.sent,
        JSON.stringify(nacked),
      );
      assert.equal(nacked.error, v.xds.LDS.lastError);
      assert.equal(v.xds.LDS.acked, false);
      // The gateway is not selected: nothing rejected there.
      assert.equal((await started.proxy(gatewayKey)).xds.LDS.nacks, 0);

      await ok(c, ["delete", "envoyfilter", "-n", "demo", name]);
      await eventually("the sidecar's ACK once the filter is gone", async () => {
        const v = await started.proxy(key);
        return v.xds.LDS.acked && v.xds.LDS.version !== before.xds.LDS.version ? v : undefined;
      });
      await eventually("istiod's syncz: acknowledged again", async () => {
        const p = await syncz(key);
        return p && verdictOf(p).state === "Acked" ? p : undefined;
      });
    };

    await t.step(
      "Kyma#2380's shape on a route is rejected; the proxy keeps its listener",
      async () => {
        await rejected(
          "rate_limits: [{actions: []}]",
          "kyma-2380",
          { route: { rate_limits: [{ actions: [] }] } },
          /Proto constraint validation failed .*RateLimit\.Actions: value must contain at least 1 item\(s\)/,
        );
      },
    );

    await t.step(
      "a local rate limit config with an empty action list is rejected too",
      async () => {
        await rejected(
          "a per-route LocalRateLimit with rate_limits: [{actions: []}]",
          "empty-actions",
          {
            typed_per_filter_config: {
              [LRL]: {
                "@type":
                  "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit",
                stat_prefix: "http_local_rate_limiter",
                rate_limits: [{ actions: [] }],
              },
            },
          },
          /LocalRateLimit\.RateLimits\[0\]: embedded message failed validation .*RateLimit\.Actions: value must contain at least 1 item\(s\)/,
        );
      },
    );
  },
);
