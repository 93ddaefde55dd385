/**
 * The generated route patch on whole route configurations that hold forwarding, redirect and
 * direct-response routes, in the sidecar and in the gateway context: the forwarding routes get
 * the limit, every other route stays byte for byte as it was, and Envoy's route checks pass.
 *
 * Facts from upstream:
 * - istio/istio pilot/pkg/networking/core/envoyfilter/rc_patch.go: patchHTTPRoute applies a MERGE
 *   to each route that routeMatch accepts; with `vhost.route.action: ROUTE` only routes whose
 *   action is `route` (or an action other than redirect/direct_response) are accepted.
 * - envoyproxy/envoy api/envoy/config/route/v3/route_components.proto: Route.action is a required
 *   oneof (route, redirect, direct_response, filter_action, non_forwarding_action), and
 *   RouteAction.cluster_specifier is a required oneof. Merging `route: {...}` into a redirect
 *   route replaces the redirect with a RouteAction that has no cluster: the whole route
 *   configuration is refused.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { parseRateLimit, type RateLimit } from "../../src/api/ratelimit.ts";
import {
  type EnvoyFilterModel,
  patchRouteConfiguration,
  type ProxyContext,
  readEnvoyFilter,
  routeConfigurationErrors,
  routeReached,
} from "../../src/dataplane/mod.ts";
import { renderEnvoyFilter } from "../../src/reconcile/ratelimit/render.ts";
import { ROUTE_METADATA_KEY } from "../../src/api/envoy.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { bucket, rateLimit } from "./ratelimit_fixtures.ts";

type Json = Record<string, unknown>;
const LRL = "envoy.filters.http.local_ratelimit";

/** A sidecar's inbound route configuration: the app's route, a redirect, a direct response. */
const SIDECAR_ROUTES: Json = {
  name: "inbound|8080||",
  validate_clusters: false,
  virtual_hosts: [{
    name: "inbound|http|8000",
    domains: ["*"],
    routes: [
      { name: "legacy", match: { prefix: "/v1/" }, redirect: { prefix_rewrite: "/v2/" } },
      { name: "health", match: { path: "/healthz" }, direct_response: { status: 200 } },
      {
        name: "default",
        match: { prefix: "/" },
        route: { cluster: "inbound|8080||", timeout: "0s" },
        decorator: { operation: "httpbin.demo.svc.cluster.local:8000/*" },
      },
    ],
  }],
};

/** A gateway's route configuration: an HTTPS redirect host, a catch-all 404, and an API host. */
const GATEWAY_ROUTES: Json = {
  name: "http.8080",
  virtual_hosts: [
    {
      name: "www.example.com:80",
      domains: ["www.example.com"],
      routes: [{ match: { prefix: "/" }, redirect: { https_redirect: true } }],
    },
    {
      name: "api.example.com:80",
      domains: ["api.example.com"],
      routes: [
        {
          name: "headers",
          match: { prefix: "/headers" },
          route: { cluster: "outbound|8000||httpbin.demo.svc.cluster.local" },
        },
        { name: "old", match: { prefix: "/old" }, redirect: { path_redirect: "/new" } },
        { name: "gone", match: { prefix: "/gone" }, direct_response: { status: 410 } },
        {
          name: "split",
          match: { prefix: "/" },
          route: { weighted_clusters: { clusters: [{ name: "a", weight: 100 }] } },
        },
      ],
    },
    {
      name: "blackhole:8080",
      domains: ["*"],
      routes: [{ name: "default", match: { prefix: "/" }, direct_response: { status: 404 } }],
    },
  ],
};

function parsed(raw: unknown): RateLimit {
  const r = parseRateLimit(raw);
  assert.ok(r.ok, r.ok ? "" : JSON.stringify(r.errors));
  return r.value;
}

const sample = (name: string): RateLimit =>
  parsed(parse(Deno.readTextFileSync(new URL(`../../samples/${name}`, import.meta.url))));

function model(ef: KubeObject): EnvoyFilterModel {
  const r = readEnvoyFilter(ef);
  assert.ok(r.ok, r.ok ? "" : JSON.stringify(r.errors));
  return r.value;
}

/** Every route with where it is, in order. */
function routesOf(rc: Json): { at: string; route: Json }[] {
  return (rc.virtual_hosts as { routes: Json[] }[]).flatMap((vh, i) =>
    vh.routes.map((route, j) => ({ at: `virtual_hosts[${i}].routes[${j}]`, route }))
  );
}

const isForwarding = (r: Json) => r.route !== undefined;

/** The RateLimits whose filters are checked: the samples and fixtures with and without rules. */
const CASES: { name: string; rl: RateLimit; context: ProxyContext; routes: Json }[] = [
  {
    name: "sample workload",
    rl: sample("ratelimit-workload.yaml"),
    context: "SIDECAR_INBOUND",
    routes: SIDECAR_ROUTES,
  },
  {
    name: "sample gateway",
    rl: sample("ratelimit-gateway.yaml"),
    context: "GATEWAY",
    routes: GATEWAY_ROUTES,
  },
  {
    name: "no rules",
    rl: parsed(rateLimit()),
    context: "SIDECAR_INBOUND",
    routes: SIDECAR_ROUTES,
  },
  {
    name: "gateway, headers rule",
    rl: parsed(rateLimit({
      namespace: "mesh-system",
      selectorLabels: { app: "mesh-ingressgateway" },
      buckets: [{ headers: { "X-Client": "batch" }, bucket: bucket(1, 1, "1m") }],
    })),
    context: "GATEWAY",
    routes: GATEWAY_ROUTES,
  },
];

Deno.test("the route patch matches forwarding routes only, in both contexts", () => {
  for (const c of CASES) {
    const patches = (renderEnvoyFilter(c.rl).spec as { configPatches: Json[] }).configPatches;
    const route = patches.find((p) => p.applyTo === "HTTP_ROUTE")!;
    assert.deepEqual(route.match, {
      context: c.context,
      routeConfiguration: { vhost: { route: { action: "ROUTE" } } },
    }, c.name);
  }
});

Deno.test("forwarding routes get the limit; redirect and direct-response routes are untouched", () => {
  for (const c of CASES) {
    assert.deepEqual(routeConfigurationErrors(c.routes), [], `${c.name}: the fixture is valid`);
    const ef = renderEnvoyFilter(c.rl);
    const patched = patchRouteConfiguration([model(ef)], c.context, c.routes);
    assert.deepEqual(routeConfigurationErrors(patched), [], c.name);
    const before = routesOf(c.routes);
    const after = routesOf(patched);
    assert.equal(after.length, before.length);
    const value = (ef.spec as { configPatches: { patch: { value: Json } }[] }).configPatches[1]
      .patch.value;
    before.forEach(({ at, route }, i) => {
      const now = after[i].route;
      if (!isForwarding(route)) {
        assert.deepEqual(now, route, `${c.name}: ${at} changed`);
        return;
      }
      assert.deepEqual(
        (now.typed_per_filter_config as Json)[LRL],
        (value.typed_per_filter_config as Json)[LRL],
        `${c.name}: ${at} lacks the per-route config`,
      );
      const want = (value.route as { rate_limits?: unknown[] } | undefined)?.rate_limits;
      assert.deepEqual((now.route as Json).rate_limits, want, `${c.name}: ${at} rate_limits`);
      // The route digest joins the route's metadata, whose other entries stay.
      const { typed_per_filter_config: _t, metadata, ...rest } = now;
      const byFilter = (metadata as { filter_metadata: Json }).filter_metadata;
      const { [ROUTE_METADATA_KEY]: digest, ...others } = byFilter;
      assert.deepEqual(
        digest,
        (value.metadata as { filter_metadata: Json }).filter_metadata[ROUTE_METADATA_KEY],
        `${c.name}: ${at} digest`,
      );
      const kept = Object.keys(others).length > 0
        ? { metadata: { ...metadata as Json, filter_metadata: others } }
        : {};
      // Nothing of the route itself is lost.
      const { rate_limits: _r, ...action } = now.route as Json;
      assert.deepEqual(
        { ...rest, ...kept, route: action },
        route,
        `${c.name}: ${at} lost a field`,
      );
    });
    assert.ok(before.some((r) => !isForwarding(r.route)), `${c.name}: has other routes`);
  }
});

Deno.test("without the action match, the patch breaks redirect and direct-response routes", () => {
  // What the filter did before: match on the context alone. The check above must catch it.
  for (const c of CASES.filter((c) => c.rl.spec.local!.buckets.length > 0)) {
    const ef = renderEnvoyFilter(c.rl);
    const patches = (ef.spec as { configPatches: Json[] }).configPatches;
    patches[1] = { ...patches[1], match: { context: c.context } };
    const patched = patchRouteConfiguration([model(ef)], c.context, c.routes);
    const errors = routeConfigurationErrors(patched);
    const broken = routesOf(c.routes).filter((r) => !isForwarding(r.route)).map((r) => r.at);
    assert.deepEqual(errors.map((e) => e.path), broken.map((at) => `${at}.route`), c.name);
    assert.match(errors[0].message, /cluster specifier/);
  }
});

Deno.test("routeReached follows istiod's routeMatch, other actions included", () => {
  const forward = { route: { cluster: "c" } };
  const redirect = { redirect: { https_redirect: true } };
  const direct = { direct_response: { status: 404 } };
  const other = { non_forwarding_action: {} };
  const table: [Json, string[]][] = [
    [forward, ["ANY", "ROUTE"]],
    [redirect, ["ANY", "REDIRECT"]],
    [direct, ["ANY", "DIRECT_RESPONSE"]],
    // istiod's switch has no case for these: every action restriction reaches them.
    [other, ["ANY", "ROUTE", "REDIRECT", "DIRECT_RESPONSE"]],
  ];
  for (const [route, reached] of table) {
    const got = (["ANY", "ROUTE", "REDIRECT", "DIRECT_RESPONSE"] as const).filter((a) =>
      routeReached(route, a)
    );
    assert.deepEqual(got, reached, JSON.stringify(route));
  }
});

Deno.test("two filters: per-route configs replace per key, rate_limits append", () => {
  const a = model(renderEnvoyFilter(parsed(rateLimit({
    name: "a",
    buckets: [{ path: "/a", bucket: bucket(1, 1, "30s") }],
  }))));
  const b = model(renderEnvoyFilter(parsed(rateLimit({
    name: "b",
    defaultBucket: bucket(5, 5, "1m"),
    buckets: [{ path: "/b", bucket: bucket(1, 1, "1m") }],
  }))));
  const patched = patchRouteConfiguration([a, b], "SIDECAR_INBOUND", SIDECAR_ROUTES);
  const route = routesOf(patched).find((r) => isForwarding(r.route))!.route;
  const cfg = (route.typed_per_filter_config as Json)[LRL] as Json;
  assert.deepEqual(cfg.token_bucket, { max_tokens: 5, tokens_per_fill: 5, fill_interval: "60s" });
  assert.equal(((route.route as Json).rate_limits as unknown[]).length, 2);
  assert.deepEqual(routeConfigurationErrors(patched), []);
});

Deno.test("the EnvoyFilter reader: route matches it does not model are errors, not guesses", () => {
  const ef = renderEnvoyFilter(parsed(rateLimit()));
  const patches = (ef.spec as { configPatches: Json[] }).configPatches;
  const withMatch = (match: Json) => ({
    ...ef,
    spec: { ...(ef.spec as Json), configPatches: [patches[0], { ...patches[1], match }] },
  });
  const errors = (match: Json) => {
    const r = readEnvoyFilter(withMatch(match));
    return r.ok ? [] : r.errors.map((e) => `${e.path}: ${e.message}`);
  };
  const ctx = "SIDECAR_INBOUND";
  assert.deepEqual(errors({ context: ctx, routeConfiguration: { vhost: { route: {} } } }), []);
  assert.match(
    errors({ context: ctx, routeConfiguration: { vhost: { route: { name: "default" } } } })[0],
    /route action .* match are modelled/,
  );
  assert.match(
    errors({ context: ctx, routeConfiguration: { portNumber: 8080 } })[0],
    /match\.routeConfiguration: only a context and a route action/,
  );
  assert.match(
    errors({ context: ctx, routeConfiguration: { vhost: { route: { action: "FORWARD" } } } })[0],
    /action: expected one of ANY, ROUTE, REDIRECT, DIRECT_RESPONSE/,
  );
  // A merge restricted to redirect routes does not limit what a request forwarded meets.
  const redirectOnly = readEnvoyFilter(
    withMatch({ context: ctx, routeConfiguration: { vhost: { route: { action: "REDIRECT" } } } }),
  );
  assert.ok(redirectOnly.ok);
  assert.equal(redirectOnly.value.contexts.SIDECAR_INBOUND?.routeConfig, undefined);
  assert.equal(redirectOnly.value.contexts.SIDECAR_INBOUND?.routePatches[0].action, "REDIRECT");
});
