/**
 * tests/istio/received_model.ts without a cluster: on a received config written here in the shape
 * istiod sends (the operator's rendered per-route config and rate_limits merged into a forwarding
 * route, a redirect beside it), the model picks the route as Envoy does and answers as the preview;
 * what it does not read is refused, never skipped.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { REPO_ROOT } from "../../tools/cluster/paths.ts";
import type { ConfigView, JsonObject } from "../../tools/istio-check/proxy-standin/mod.ts";
import { DEFAULT_CLIENT } from "../../src/cli/ratelimit/run.ts";
import { DEFAULT_BEHAVIOUR, LOCAL_RATELIMIT_FILTER } from "../../src/dataplane/mod.ts";
import { renderedRoutePatch } from "./mesh_fixtures.ts";
import { ReceivedProxy } from "./received_model.ts";

const HCM_TYPE =
  "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager";

/** A gateway's config: one listener, RDS `http.8080`, a redirect and a forwarding route. */
async function gatewayConfig(edit: (routes: JsonObject) => void = () => {}): Promise<ConfigView> {
  const patch = renderedRoutePatch(
    await Deno.readTextFile(join(REPO_ROOT, "samples", "ratelimit-gateway.yaml")),
  );
  const routes: JsonObject = {
    name: "http.8080",
    virtual_hosts: [{
      name: "a.example.com:8080",
      domains: ["a.example.com"],
      routes: [
        { name: "old", match: { path: "/old" }, redirect: { path_redirect: "/new" } },
        {
          name: "app",
          match: { prefix: "/" },
          route: { cluster: "outbound|8000||app", ...(patch.route as JsonObject) },
          typed_per_filter_config: patch.typed_per_filter_config,
          // Istio's own entry beside the operator's route digest, as istiod merges the patch.
          metadata: {
            filter_metadata: {
              istio: { config: "/apis/networking.istio.io/v1/namespaces/demo/virtual-service/app" },
              ...((patch.metadata as JsonObject).filter_metadata as JsonObject),
            },
          },
        },
      ],
    }],
  };
  edit(routes);
  return {
    listeners: [{
      name: "0.0.0.0_8080",
      filter_chains: [{
        filters: [{
          name: "envoy.filters.network.http_connection_manager",
          typed_config: {
            "@type": HCM_TYPE,
            rds: { route_config_name: "http.8080" },
            http_filters: [
              {
                name: LOCAL_RATELIMIT_FILTER,
                typed_config: {
                  "@type":
                    "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit",
                  stat_prefix: "http_local_rate_limiter",
                },
              },
              { name: "envoy.filters.http.router" },
            ],
          },
        }],
      }],
    }],
    routes: [routes],
    clusters: [],
    endpoints: [],
  };
}

const get = (path: string, host = "a.example.com") => ({
  path,
  headers: { host },
  peer: DEFAULT_CLIENT,
});

Deno.test("the received config: routes taken as Envoy takes them, limits from the route", async () => {
  const model = new ReceivedProxy(
    await gatewayConfig(),
    { listener: "0.0.0.0_8080" },
    DEFAULT_BEHAVIOUR,
    true,
  );
  assert.equal(model.filters.length, 1);
  const statuses = (path: string, n: number) =>
    Array.from({ length: n }, () => model.send(get(path), 0)).map((a) =>
      `${a.route} ${a.kind} ${a.decision.status}`
    );
  // The sample's rule: 10 /headers a minute; the redirect is never limited.
  assert.deepEqual(statuses("/headers", 11), [
    ...Array(10).fill("app route 200"),
    "app route 429",
  ]);
  assert.deepEqual(new Set(statuses("/old", 20)), new Set(["old redirect 301"]));
  // `path` matches the whole path without the query, `prefix` its start.
  assert.equal(model.send(get("/old?x=1"), 0).route, "old");
  assert.equal(model.send(get("/older"), 0).route, "app");
  // A host no virtual host takes.
  assert.throws(
    () => model.send(get("/", "b.example.com"), 0),
    /no virtual host for "b\.example\.com"/,
  );
});

Deno.test("the received config: what the model does not read is refused", async () => {
  const entry = { listener: "0.0.0.0_8080" };
  const refused = async (edit: (routes: JsonObject) => void, error: RegExp) => {
    const config = await gatewayConfig(edit);
    assert.throws(
      () => new ReceivedProxy(config, entry, DEFAULT_BEHAVIOUR, true).send(get("/"), 0),
      error,
    );
  };
  const vh = (routes: JsonObject) => (routes.virtual_hosts as JsonObject[])[0];
  const app = (routes: JsonObject) => (vh(routes).routes as JsonObject[])[1];
  await refused((r) => {
    app(r).match = { prefix: "/", headers: [{ name: "x" }] };
  }, /route app: match on headers/);
  await refused((r) => {
    app(r).match = { safe_regex: { regex: ".*" } };
  }, /route app: match on safe_regex/);
  await refused((r) => {
    vh(r).rate_limits = [];
  }, /virtual host a\.example\.com:8080: rate_limits/);
  await refused((r) => {
    vh(r).domains = ["a.*"];
  }, /prefix wildcard domains are not read/);
  await refused((r) => {
    (app(r).typed_per_filter_config as JsonObject)[LOCAL_RATELIMIT_FILTER] = {
      "@type": "type.googleapis.com/envoy.config.route.v3.FilterConfig",
      config: {},
    };
  }, /the model cannot read app\.typed_per_filter_config/);
  await refused((r) => {
    (app(r).route as JsonObject).rate_limits = [{ actions: [] }];
  }, /the model cannot read the rate_limits of route app/);
  // A listener with two plaintext HTTP chains for the same entry.
  const config = await gatewayConfig();
  const listener = config.listeners[0];
  listener.filter_chains = [
    ...(listener.filter_chains as JsonObject[]),
    ...(listener.filter_chains as JsonObject[]),
  ];
  assert.throws(
    () => new ReceivedProxy(config, entry, DEFAULT_BEHAVIOUR, true),
    /0\.0\.0\.0_8080: 2 plaintext HTTP\/1\.1 chains, not one/,
  );
  assert.throws(
    () => new ReceivedProxy(config, { listener: "virtualInbound" }, DEFAULT_BEHAVIOUR, false),
    /the proxy holds no listener virtualInbound/,
  );
});
