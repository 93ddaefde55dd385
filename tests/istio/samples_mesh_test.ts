/**
 * The samples through a real istiod (issue 42 point 4), with the proxy stand-in
 * (tools/istio-check/proxy-standin, a test harness standing in for Envoy) as each Pod's proxy and
 * the operator asking istiod (--istiod-url):
 *
 * - samples/ratelimit-workload.yaml on two injected httpbin Pods and samples/ratelimit-gateway.yaml
 *   on the ingress gateway, routed by a real Gateway and VirtualService: Accepted True on every
 *   proxy, with the counts;
 * - the project's Envoy model run on the config each proxy RECEIVED from istiod (the stand-in's
 *   listeners and routes, read by tests/istio/received_model.ts), not on the operator's rendering,
 *   answers a fixed list of requests exactly as the `ratelimit` CLI's preview does (status, body,
 *   x-ratelimit headers, bucket, tokens left), on Envoy 1.38 and 1.30;
 * - on the gateway, only the VirtualService's forwarding route carries the per-route local rate
 *   limit and the rate_limits entry; its redirect and direct-response routes carry neither, and the
 *   model never limits them;
 * - docs/examples/ratelimit-methods.yaml (a path prefix and methods, the `:method` matcher a RE2
 *   alternation) in the workload sample's place: the old filter deleted by the operator, Accepted,
 *   and the model on the received config answers requests of several methods as the preview;
 * - another's EnvoyFilter patching a rate limit filter into the same proxies: named in Enforced, and
 *   on the received config the first write is refused where the RateLimit admits two;
 * - docs/examples/ratelimit-hosts.yaml (hosts, the `:authority` matcher a case-insensitive RE2
 *   regex over Envoy's default program size) in its place: Accepted, and the model on the received
 *   config answers requests for several hosts as the preview;
 * - docs/examples/ratelimit-query.yaml (query parameters, `:path` RE2 regexes that take each
 *   character percent-encoded too) in its place: Accepted, and the model on the received config
 *   answers encoded, repeated and near-miss query strings as the preview;
 * - the gateway sample with its rule narrowed to the VirtualService's host (a gateway route patch
 *   with the `:authority` matcher): Accepted, and the model on the gateway's received config
 *   answers as the preview, the host in capitals included.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse } from "yaml";
import { REPO_ROOT } from "../../tools/cluster/paths.ts";
import { eventually, ok } from "../../tools/cluster/test_helpers.ts";
import {
  type ConfigView,
  type JsonObject,
  proxyOfPod,
  type ProxySpec,
} from "../../tools/istio-check/proxy-standin/mod.ts";
import { DEFAULT_CLIENT, runTraffic } from "../../src/cli/ratelimit/run.ts";
import type { TrafficRequest } from "../../src/cli/ratelimit/args.ts";
import {
  DEFAULT_BEHAVIOUR,
  type EnvoyBehaviour,
  envoyBehaviour,
  LOCAL_RATELIMIT_FILTER,
} from "../../src/dataplane/mod.ts";
import { loadLocalRateLimit, loadRouteRateLimits } from "../../src/dataplane/envoyconfig.ts";
import {
  acceptedOf,
  assertNoNacks,
  conditionOf,
  gatewayPod,
  holding,
  injectedDemo,
  meshTest,
  proxyKey,
  type RateLimitStatus,
  renderedRoutePatch,
} from "./mesh_fixtures.ts";
import { ReceivedProxy } from "./received_model.ts";

/** The host the VirtualService routes through the gateway. */
const HOST = "httpbin.example.com";

/**
 * A Gateway for the mesh's ingress gateway (port 8080, its container port) and a VirtualService
 * bound to it with a redirect, a direct response and a route forwarding to httpbin.
 */
const GATEWAY_AND_ROUTES = [
  {
    apiVersion: "networking.istio.io/v1",
    kind: "Gateway",
    metadata: { name: "ingress", namespace: "mesh-system" },
    spec: {
      selector: { istio: "ingressgateway" },
      servers: [{ port: { number: 8080, name: "http", protocol: "HTTP" }, hosts: ["*"] }],
    },
  },
  {
    apiVersion: "networking.istio.io/v1",
    kind: "VirtualService",
    metadata: { name: "httpbin", namespace: "demo" },
    spec: {
      hosts: [HOST],
      gateways: ["mesh-system/ingress"],
      http: [
        { name: "old-ip", match: [{ uri: { exact: "/old-ip" } }], redirect: { uri: "/ip" } },
        {
          name: "teapot",
          match: [{ uri: { prefix: "/teapot" } }],
          directResponse: { status: 418, body: { string: "I'm a teapot" } },
        },
        {
          name: "httpbin",
          route: [{
            destination: { host: "httpbin.demo.svc.cluster.local", port: { number: 8000 } },
          }],
        },
      ],
    },
  },
].map((d) => JSON.stringify(d)).join("\n");

/** `count` requests at `t` ms. */
const at = (
  count: number,
  t: number,
  path: string,
  headers: Record<string, string> = {},
  method?: string,
) =>
  Array.from(
    { length: count },
    (): TrafficRequest => ({ t, path, headers, ...(method ? { method } : {}) }),
  );

/** docs/examples/ratelimit-methods.yaml: writes to /api/ share a bucket of 2 a minute. */
const METHODS_REQUESTS: TrafficRequest[] = [
  ...at(3, 0, "/api/orders", {}, "POST"), // the writes' bucket: 2, then 429
  ...at(1, 100, "/api/orders/7", {}, "DELETE"), // the same bucket, spent
  ...at(2, 200, "/api/orders", {}, "GET"), // a read: the default bucket
  ...at(1, 300, "/api/orders", {}, "post"), // methods compare exactly: the default
  ...at(1, 400, "/orders", {}, "PATCH"), // a write outside the prefix: the default
  ...at(1, 30_000, "/api/orders?page=2", {}, "PUT"), // one token back after 30 s (continuous)
];

/** docs/examples/ratelimit-hosts.yaml: the trial names share a bucket of 2 a minute. */
const HOSTS_REQUESTS: TrafficRequest[] = [
  ...at(3, 0, "/", { Host: "trial.example.com" }), // the trial bucket: 2, then 429
  ...at(1, 100, "/", { Host: "Acme.Trial.Example.com:8000" }), // the same bucket, spent
  ...at(2, 200, "/", { Host: "api.example.com" }), // another name: the default bucket
  ...at(1, 300, "/", { Host: "xtrial.example.com" }), // ends like the suffix only: the default
  ...at(1, 30_000, "/", { Host: "trial.example.com." }), // one token back after 30 s (continuous)
];

/** docs/examples/ratelimit-query.yaml: CSV exports share a bucket of 2 a minute. */
const QUERY_REQUESTS: TrafficRequest[] = [
  ...at(1, 0, "/anything/export?format=csv"), // the exports' bucket: 1 left
  ...at(1, 100, "/anything/export?format=json"), // another value: the default bucket
  ...at(1, 200, "/anything/export?format=json&format=csv"), // any occurrence: the exports', 0 left
  ...at(1, 300, "/anything/export?%66ormat=%63sv"), // decoded, the same: 429
  ...at(1, 400, "/anything/export?format=CSV"), // values compare exactly: the default
  ...at(1, 500, "/anything/export?page=2&format=csv"), // the exports' bucket: 429
  ...at(1, 30_000, "/anything/export?format=csv"), // one token back after 30 s (continuous)
];

/** The gateway sample with its /headers rule for the VirtualService's host only, in any case. */
const GATEWAY_HOSTS_REQUESTS: TrafficRequest[] = [
  ...at(6, 0, "/headers", { host: HOST }), // the rule's bucket: 10 a minute
  ...at(6, 100, "/headers", { host: HOST.toUpperCase() }), // the same bucket: 4 more, then 429
  ...at(2, 200, "/", { host: HOST }), // the default bucket
];

/** Every rule of samples/ratelimit-workload.yaml, spent and refilled. */
const WORKLOAD_REQUESTS: TrafficRequest[] = [
  ...at(12, 0, "/"), // the default bucket, 10 a 30 s
  ...at(3, 100, "/headers", { "X-Rate-Limited": "true" }), // rule 0: 2 a minute
  ...at(6, 200, "/ip"), // rule 1: 5 a 30 s
  ...at(2, 300, "/anything", { "X-Client": "batch" }), // rule 2: 1 in 2 minutes
  ...at(1, 400, "/headers"), // without the header: the default bucket, spent
  ...at(2, 500, "/headers", { "X-Client": "batch", "X-Rate-Limited": "true" }), // rule 0 first
  ...at(11, 31_000, "/"), // refilled
  ...at(2, 61_000, "/headers", { "X-Rate-Limited": "true" }),
  ...at(6, 61_000, "/ip?x=1"),
];

/** samples/ratelimit-gateway.yaml's two buckets, through the VirtualService's forwarding route. */
const GATEWAY_REQUESTS: TrafficRequest[] = [
  ...at(11, 0, "/headers", { host: HOST }), // rule 0: 10 a minute
  ...at(101, 100, "/", { host: HOST }), // the default bucket: 100 a minute
  ...at(2, 30_000, "/headers?a=b", { host: HOST }),
  ...at(3, 60_000, "/headers", { host: HOST }),
];

/** What is compared of one answer. */
function shown(
  o: {
    status: number;
    body: string;
    headers: Record<string, string>;
    bucket?: unknown;
    remaining?: number;
    rejected?: boolean;
  },
) {
  return {
    status: o.status,
    body: o.body,
    headers: o.headers,
    bucket: o.bucket,
    remaining: o.remaining,
    rejected: o.rejected === true,
  };
}

/**
 * The preview's answers (`ratelimit -f SAMPLE --requests`) and the model's on the received
 * config, request by request; returns the statuses.
 */
function compare(
  sample: string,
  received: ReceivedProxy,
  requests: TrafficRequest[],
  envoy: EnvoyBehaviour,
): number[] {
  const preview = runTraffic(parse(sample), requests, 120_000, envoy);
  if (!preview.ok) throw new Error(preview.error);
  return requests.map((r, i) => {
    const want = preview.value.outcomes[i];
    const got = received.send({
      ...(r.method !== undefined ? { method: r.method } : {}),
      path: r.path,
      headers: r.headers,
      peer: DEFAULT_CLIENT,
    }, r.t);
    assert.equal(got.kind, "route", `request ${i} (${r.path}) takes a forwarding route`);
    assert.deepEqual(
      shown(got.decision),
      shown({ ...want, headers: want.responseHeaders }),
      `Envoy ${envoy.version}, request ${i} at ${r.t} ms: ${r.method ?? "GET"} ${r.path} ${
        JSON.stringify(r.headers)
      }`,
    );
    return got.decision.status;
  });
}

/** The model of a sidecar's inbound listener on the config it received. */
function sidecarModel(config: unknown, envoy: EnvoyBehaviour): ReceivedProxy {
  return new ReceivedProxy(
    config as ConfigView,
    { listener: "virtualInbound", port: 8080 },
    envoy,
    false,
  );
}

/** The model of the ingress gateway's listener on the config it received. */
function gatewayModel(config: unknown, envoy: EnvoyBehaviour): ReceivedProxy {
  return new ReceivedProxy(config as ConfigView, { listener: "0.0.0.0_8080" }, envoy, true);
}

/** Statuses, run-length: `10x200 2x429 ...`. */
function runs(statuses: number[]): string {
  const out: string[] = [];
  let n = 0;
  statuses.forEach((s, i) => {
    n++;
    if (statuses[i + 1] !== s) {
      out.push(`${n}x${s}`);
      n = 0;
    }
  });
  return out.join(" ");
}

meshTest(
  "the samples through a real istiod: Accepted on every proxy, the model on what they received answers as the preview",
  "samples-mesh",
  async (m, t) => {
    const { c } = m;
    const apps = (await injectedDemo(c, 2)).map(proxyOfPod);
    const gateway = proxyOfPod(await gatewayPod(c));
    assert.deepEqual(
      [...apps.map((a) => a.type), gateway.type],
      ["sidecar", "sidecar", "router"],
    );
    await ok(c, ["apply", "-f", "-"], GATEWAY_AND_ROUTES);
    const running = await m.standin([...apps, gateway]);
    // From loopback istiod checks no token (tests/istio/proxy_faults_test.ts asks as a Pod does).
    const op = await m.operator("samples");
    const workloadSample = await Deno.readTextFile(
      join(REPO_ROOT, "samples", "ratelimit-workload.yaml"),
    );
    const gatewaySample = await Deno.readTextFile(
      join(REPO_ROOT, "samples", "ratelimit-gateway.yaml"),
    );
    const accepted = (s: RateLimitStatus) => acceptedOf(s)?.status === "True";
    /** What a proxy holds, once it acknowledged every type and holds our per-route config. */
    const received = (p: ProxySpec) =>
      holding(running, p, "the limit", (v) => JSON.stringify(v.config).includes(`"token_bucket"`));

    await t.step("both samples: Accepted True on every proxy", async () => {
      const started = Date.now();
      await ok(c, ["apply", "-f", join(REPO_ROOT, "samples", "ratelimit-workload.yaml")]);
      await ok(c, ["apply", "-f", join(REPO_ROOT, "samples", "ratelimit-gateway.yaml")]);
      const workload = await op.until("Accepted True", accepted);
      const gw = await op.until("Accepted", accepted, ["mesh-system", "ingressgateway"]);
      console.error(`apply to both Accepted: ${((Date.now() - started) / 1000).toFixed(1)} s`);
      assert.deepEqual(workload.proxies, {
        accepted: 2,
        rejected: 0,
        pending: 0,
        notConnected: 0,
      });
      assert.equal(acceptedOf(workload)?.reason, "Accepted");
      assert.equal(
        acceptedOf(workload)?.message,
        "All 2 proxies acknowledged the config holding the limit in force",
      );
      assert.deepEqual(gw.proxies, { accepted: 1, rejected: 0, pending: 0, notConnected: 0 });
      assert.equal(
        acceptedOf(gw)?.message,
        "The one proxy acknowledged the config holding the limit in force",
      );
      for (const p of [...apps, gateway]) assertNoNacks(await running.proxy(proxyKey(p)), p.pod);
    });

    const v130 = envoyBehaviour("1.30");
    if (!v130.ok) throw new Error(v130.error);
    const envoys = [DEFAULT_BEHAVIOUR, v130.value];
    /**
     * Each sidecar, once it acknowledged a config that `holds` (its text), answers `requests` on
     * the model of that config as the preview of `sample` does, on every Envoy, with `want`'s
     * statuses for Envoy's refill.
     */
    const sidecarsAnswer = async (
      sample: string,
      what: string,
      holds: (text: string) => boolean,
      requests: TrafficRequest[],
      want: { continuous: string; interval: string },
    ) => {
      for (const app of apps) {
        const view = await holding(running, app, what, (v) => holds(JSON.stringify(v.config)));
        assertNoNacks(await running.proxy(proxyKey(app)), app.pod);
        for (const envoy of envoys) {
          const model = sidecarModel(view.config, envoy);
          assert.equal(model.filters.length, 1);
          const statuses = compare(sample, model, requests, envoy);
          assert.equal(
            runs(statuses),
            envoy.refill === "continuous" ? want.continuous : want.interval,
            `Envoy ${envoy.version} on ${app.pod}`,
          );
        }
      }
    };

    await t.step(
      "the model on each sidecar's received config answers the workload's requests as the preview",
      async () => {
        for (const app of apps) {
          const view = await received(app);
          for (const envoy of envoys) {
            const model = sidecarModel(view.config, envoy);
            // One local rate limit filter, with no bucket of its own: the per-route one decides.
            assert.equal(model.filters.length, 1);
            assert.equal(model.filters[0].tokenBucket, undefined);
            const statuses = compare(workloadSample, model, WORKLOAD_REQUESTS, envoy);
            assert.equal(
              runs(statuses),
              "10x200 2x429 2x200 1x429 5x200 1x429 1x200 4x429 10x200 1x429 7x200 1x429",
              `Envoy ${envoy.version} on ${app.pod}`,
            );
          }
        }
      },
    );

    await t.step(
      "the model on the gateway's received config answers the gateway's requests as the preview",
      async () => {
        const view = await received(gateway);
        for (const envoy of envoys) {
          const model = gatewayModel(view.config, envoy);
          const statuses = compare(gatewaySample, model, GATEWAY_REQUESTS, envoy);
          assert.equal(
            runs(statuses),
            envoy.refill === "continuous"
              ? "10x200 1x429 100x200 1x429 5x200" // 5 tokens back in 30 s, continuously
              : "10x200 1x429 100x200 3x429 3x200", // nothing back before the minute
            `Envoy ${envoy.version}`,
          );
        }
      },
    );

    await t.step(
      "a Gateway and VirtualService: only the forwarding route carries the limit",
      async () => {
        const view = await received(gateway);
        const config = view.config as ConfigView;
        const routes = config.routes.find((r) => r.name === "http.8080");
        assert.ok(routes, `the gateway's routes: ${config.routes.map((r) => r.name)}`);
        const vhosts = routes.virtual_hosts as JsonObject[];
        assert.deepEqual(vhosts.map((vh) => vh.domains), [[HOST]]);
        const byName = new Map(
          (vhosts[0].routes as JsonObject[]).map((r) => [String(r.name), r]),
        );
        assert.deepEqual([...byName.keys()], ["old-ip", "teapot", "httpbin"]);
        const want = renderedRoutePatch(gatewaySample);
        const wantConfig = (want.typed_per_filter_config as JsonObject)[LOCAL_RATELIMIT_FILTER];
        const load = (v: unknown) => {
          const { "@type": _type, ...fields } = v as JsonObject;
          return loadLocalRateLimit(fields, "config", true);
        };
        // The forwarding route: the rendered per-route config and rate_limits, as loaded.
        const forwarding = byName.get("httpbin")!;
        assert.ok(forwarding.route, "httpbin forwards");
        const perRoute = (r: JsonObject) =>
          (r.typed_per_filter_config as JsonObject | undefined)?.[LOCAL_RATELIMIT_FILTER];
        assert.deepEqual(load(perRoute(forwarding)), load(wantConfig));
        assert.deepEqual(
          loadRouteRateLimits((forwarding.route as JsonObject).rate_limits, "r"),
          loadRouteRateLimits((want.route as JsonObject).rate_limits, "r"),
        );
        // The redirect and the direct response: neither.
        for (const [name, action] of [["old-ip", "redirect"], ["teapot", "direct_response"]]) {
          const r = byName.get(name)!;
          assert.ok(r[action], `${name} is a ${action}`);
          assert.equal(r.route, undefined);
          assert.equal(perRoute(r), undefined, `${name} carries no local rate limit`);
          assert.equal(JSON.stringify(r).includes("rate_limits"), false);
        }
        // So the model never limits them, while the forwarding route runs out.
        const model = gatewayModel(config, envoys[0]);
        const send = (path: string) =>
          Array.from({ length: 12 }, () => {
            const a = model.send({ path, headers: { host: HOST }, peer: DEFAULT_CLIENT }, 0);
            return `${a.route}:${a.decision.status}`;
          });
        assert.deepEqual(new Set(send("/old-ip")), new Set(["old-ip:301"]));
        assert.deepEqual(new Set(send("/teapot/1")), new Set(["teapot:418"]));
        assert.deepEqual(send("/headers"), [
          ...Array(10).fill("httpbin:200"),
          "httpbin:429",
          "httpbin:429",
        ]);
      },
    );

    await t.step(
      "methods in the workload sample's place: Accepted, and the model on the received config answers as the preview",
      async () => {
        const file = join(REPO_ROOT, "docs", "examples", "ratelimit-methods.yaml");
        await ok(c, ["delete", "-f", join(REPO_ROOT, "samples", "ratelimit-workload.yaml")]);
        await ok(c, ["apply", "-f", file]);
        // The operator deletes the deleted RateLimit's filter itself (the garbage collector took 13
        // s here, while the proxies held both filters and both charged every request); when the
        // collector is first, the operator's delete finds nothing and says nothing.
        const filterLeft = async () =>
          (await ok(c, ["get", "envoyfilter", "-n", "demo", "--ignore-not-found", "-o", "name"]))
            .split("\n").includes("envoyfilter.networking.istio.io/httpbin");
        const deletedBy = async () =>
          (await op.process.logLines()).find((l) =>
            l.msg === "deleted what a deleted primary owned" && l.key === "demo/httpbin"
          );
        const deadline = Date.now() + 15_000;
        while (Date.now() < deadline && await filterLeft()) {
          await new Promise((r) => setTimeout(r, 200));
        }
        assert.equal(await filterLeft(), false, "the deleted RateLimit's filter is gone in 15 s");
        const said = await deletedBy();
        if (said) assert.equal(said.deleted, "EnvoyFilter demo/httpbin");
        const status = await op.until("Accepted True", accepted, ["demo", "api-writes"]);
        assert.deepEqual(status.proxies, { accepted: 2, rejected: 0, pending: 0, notConnected: 0 });
        // Until the deleted RateLimit's filter is gone (the operator deletes it at once), the
        // proxy holds both filters (docs/ratelimit-status.md): wait for the new one alone.
        await sidecarsAnswer(
          await Deno.readTextFile(file),
          "the methods limit alone",
          (text) => text.includes("POST|PUT|DELETE|PATCH") && !text.includes("/headers?"),
          METHODS_REQUESTS,
          {
            continuous: "2x200 2x429 5x200", // a token back 30 s later
            interval: "2x200 2x429 4x200 1x429", // nothing back before the minute
          },
        );
      },
    );
    await t.step(
      "another's EnvoyFilter on the same Pods: Enforced names it, and the proxies then enforce a limit neither sets",
      async () => {
        // Kyma's controller's filter, say: the same patches, not this operator's.
        const ours = JSON.parse(
          await ok(c, ["get", "envoyfilter", "-n", "demo", "api-writes", "-o", "json"]),
        );
        const foreign = {
          apiVersion: ours.apiVersion,
          kind: ours.kind,
          metadata: { name: "kyma-httpbin", namespace: "demo", labels: { managed: "kyma" } },
          spec: ours.spec,
        };
        await ok(c, ["apply", "-f", "-"], JSON.stringify(foreign));
        const hint =
          "EnvoyFilter demo/kyma-httpbin, not this operator's, patches a rate limit filter";
        const named = await op.until(
          "Enforced names the other filter",
          (s) => conditionOf(s, "Enforced")?.message.includes(hint) === true,
          ["demo", "api-writes"],
        );
        assert.equal(conditionOf(named, "Enforced")?.reason, "Enforced");
        // What the hint says: both filters read the route's limits, and the route's entries come
        // from both filters' patches, so the first write, which a bucket of 2 admits, takes all
        // its tokens and more: refused.
        const app = apps[0];
        const view = await eventually(`${app.pod} holds two rate limit filters`, async () => {
          const v = await holding(running, app, "the methods limit", () => true);
          const model = sidecarModel(v.config, DEFAULT_BEHAVIOUR);
          return model.filters.length === 2 ? model : undefined;
        });
        const first = view.send({
          method: "POST",
          path: "/api/orders",
          headers: {},
          peer: DEFAULT_CLIENT,
        }, 0);
        assert.deepEqual([first.decision.status, first.decision.remaining], [429, 0]);
        // Removed: the hint goes.
        await ok(c, ["delete", "envoyfilter", "-n", "demo", "kyma-httpbin"]);
        await op.until(
          "Enforced without the hint",
          (s) => conditionOf(s, "Enforced")?.message.includes("not this operator's") === false,
          ["demo", "api-writes"],
        );
      },
    );
    /**
     * docs/examples/`example` in `previous`'s place (RateLimit `name`): Accepted by both sidecars,
     * and each answers as `sidecarsAnswer` says once it holds the new limit alone.
     */
    const inPlace = async (
      previous: string,
      example: string,
      name: string,
      holds: (text: string) => boolean,
      requests: TrafficRequest[],
      want: { continuous: string; interval: string },
    ) => {
      const file = join(REPO_ROOT, "docs", "examples", example);
      await ok(c, ["delete", "-f", join(REPO_ROOT, "docs", "examples", previous)]);
      await ok(c, ["apply", "-f", file]);
      const status = await op.until("Accepted True", accepted, ["demo", name]);
      assert.deepEqual(status.proxies, { accepted: 2, rejected: 0, pending: 0, notConnected: 0 });
      await sidecarsAnswer(
        await Deno.readTextFile(file),
        `${example} alone`,
        holds,
        requests,
        want,
      );
    };
    await t.step(
      "hosts in its place: Accepted, and the model on the received config answers as the preview",
      () =>
        inPlace(
          "ratelimit-methods.yaml",
          "ratelimit-hosts.yaml",
          "trial-tenants",
          (text) => text.includes(":authority") && !text.includes("POST|PUT|DELETE|PATCH"),
          HOSTS_REQUESTS,
          {
            continuous: "2x200 2x429 4x200", // a token back 30 s later
            interval: "2x200 2x429 3x200 1x429", // nothing back before the minute
          },
        ),
    );
    await t.step(
      "query parameters in its place: Accepted, and the model on the received config answers as the preview",
      () =>
        inPlace(
          "ratelimit-hosts.yaml",
          "ratelimit-query.yaml",
          "csv-exports",
          (text) => text.includes("%6[Ff]") && !text.includes(":authority"),
          QUERY_REQUESTS,
          {
            continuous: "3x200 1x429 1x200 1x429 1x200", // a token back 30 s later
            interval: "3x200 1x429 1x200 2x429", // nothing back before the minute
          },
        ),
    );
    await t.step(
      "the gateway's rule for its host: Accepted, and the model on the received config answers as the preview",
      async () => {
        const sample = gatewaySample.replace(
          "      - path: /headers\n",
          `      - path: /headers\n        hosts: [${HOST}]\n`,
        );
        assert.notEqual(sample, gatewaySample, "the sample's rule is narrowed");
        await ok(c, ["apply", "-f", "-"], sample);
        await op.until(
          "Accepted True for the generation with hosts",
          (s) => accepted(s) && s.enforcedGeneration === 2,
          ["mesh-system", "ingressgateway"],
        );
        const view = await holding(
          running,
          gateway,
          "the limit with hosts",
          (v) => JSON.stringify(v.config).includes(":authority"),
        );
        assertNoNacks(await running.proxy(proxyKey(gateway)), gateway.pod);
        for (const envoy of envoys) {
          const model = gatewayModel(view.config, envoy);
          const statuses = compare(sample, model, GATEWAY_HOSTS_REQUESTS, envoy);
          assert.equal(runs(statuses), "10x200 2x429 2x200", `Envoy ${envoy.version}`);
        }
      },
    );
  },
);
