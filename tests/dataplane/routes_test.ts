/**
 * Bucket scope per route entry: the per-route config the EnvoyFilter merges into each route is a
 * limiter of its own, so a gateway RateLimit over two routes gives two independent default
 * buckets; a sidecar has one inbound route; a new route configuration restarts the buckets.
 */
import assert from "node:assert/strict";
import { parseRateLimit } from "../../src/api/ratelimit.ts";
import {
  envoyBehaviour,
  GATEWAY_ROUTE,
  gatewayRoutes,
  INBOUND_ROUTE,
  Mesh,
  type MeshPod,
  routeOf,
} from "../../src/dataplane/mod.ts";
import { renderEnvoyFilter } from "../../src/reconcile/ratelimit/render.ts";

function gatewayFilter(maxTokens = 2, namespace = "mesh-system", app = "mesh-ingressgateway") {
  const parsed = parseRateLimit({
    apiVersion: "gateway.platform-project.io/v1alpha1",
    kind: "RateLimit",
    metadata: { name: "gw", namespace, uid: "u1" },
    spec: {
      selectorLabels: { app },
      enableResponseHeaders: true,
      local: { defaultBucket: { maxTokens, tokensPerFill: maxTokens, fillInterval: "1m" } },
    },
  });
  assert.ok(parsed.ok);
  return renderEnvoyFilter(parsed.value);
}

function virtualService(
  name: string,
  hosts: string[],
  http: unknown[],
  created = "2026-01-01T00:00:00Z",
) {
  return {
    apiVersion: "networking.istio.io/v1",
    kind: "VirtualService",
    metadata: { name, namespace: "demo", creationTimestamp: created },
    spec: { hosts, gateways: ["mesh-system/public"], http },
  };
}

const gwPod: MeshPod = {
  namespace: "mesh-system",
  name: "gw-0",
  labels: { app: "mesh-ingressgateway" },
  ready: true,
};
const route = { route: [{ destination: { host: "httpbin.demo.svc.cluster.local" } }] };

Deno.test("a gateway RateLimit over two routes: two independent default buckets", () => {
  const mesh = new Mesh();
  mesh.sync(
    [
      gatewayFilter(),
      virtualService("shop", ["shop.example.com"], [route]),
      virtualService("api", ["api.example.com"], [route]),
    ],
    [gwPod],
    0,
  );
  const send = (host: string) =>
    mesh.send({ to: "gateway", path: "/", headers: { Host: host } }, 0);
  const shop = [1, 2, 3].map(() => send("shop.example.com"));
  const api = [1, 2, 3].map(() => send("api.example.com"));
  assert.deepEqual(shop.map((r) => r.status), [200, 200, 429]);
  assert.deepEqual(api.map((r) => r.status), [200, 200, 429], "its own full bucket");
  assert.deepEqual([shop[0].bucket, api[0].bucket], ["default", "default"]);
  assert.deepEqual(
    [shop[0].route, api[0].route],
    ["shop.example.com demo/shop http[0]", "api.example.com demo/api http[0]"],
  );
});

Deno.test("one VirtualService: each host and each http route or match is a route entry", () => {
  const vs = virtualService("web", ["a.example.com", "*.example.org"], [
    { match: [{ uri: { prefix: "/api" } }, { uri: { exact: "/v2" } }], ...route },
    route,
  ]);
  const routes = gatewayRoutes([vs]);
  assert.deepEqual(routes.map((r) => r.name), [
    "a.example.com demo/web http[0] match[0]",
    "a.example.com demo/web http[0] match[1]",
    "a.example.com demo/web http[1]",
    "*.example.org demo/web http[0] match[0]",
    "*.example.org demo/web http[0] match[1]",
    "*.example.org demo/web http[1]",
  ]);
  const at = (host: string, path: string) => routeOf(routes, { path, headers: { host } })?.name;
  assert.equal(at("A.example.com:8080", "/api/x?q=1"), routes[0].name, "case, port, query");
  assert.equal(at("a.example.com", "/v2?x"), routes[1].name);
  assert.equal(at("a.example.com", "/v2/"), routes[2].name, "exact is exact");
  assert.equal(at("x.example.org", "/other"), routes[5].name, "the wildcard host");
  assert.equal(at("example.org", "/"), undefined, "*.example.org needs a subdomain");
  assert.equal(at("b.example.com", "/"), undefined);
  const mesh = new Mesh();
  mesh.sync([gatewayFilter(1), vs], [gwPod], 0);
  const send = (host: string, path: string) =>
    mesh.send({ to: "gateway", path, headers: { host } }, 0).status;
  assert.deepEqual([send("a.example.com", "/api"), send("a.example.com", "/api/2")], [200, 429]);
  assert.equal(send("a.example.com", "/v2"), 200, "another match condition: another entry");
  assert.equal(send("a.example.com", "/x"), 200, "the catch-all http route: another entry");
  assert.equal(send("y.example.org", "/api"), 200, "the same route under another host");
});

Deno.test("no route: Envoy's 404, no token taken; matchers the model cannot follow never match", () => {
  const mesh = new Mesh();
  mesh.sync(
    [
      gatewayFilter(1),
      virtualService("web", ["a.example.com"], [
        { match: [{ headers: { x: { exact: "1" } } }], ...route },
        { match: [{ uri: { prefix: "/p" } }], ...route },
      ]),
    ],
    [gwPod],
    0,
  );
  const r = mesh.send({ to: "gateway", path: "/", headers: { host: "nope.example.com" } }, 0);
  assert.deepEqual([r.status, r.body, r.headers, r.route], [404, "", {}, undefined]);
  const headerRoute = mesh.send({
    to: "gateway",
    path: "/",
    headers: { host: "a.example.com", x: "1" },
  }, 0);
  assert.equal(headerRoute.status, 404);
  const p = mesh.send({ to: "gateway", path: "/p", headers: { host: "a.example.com" } }, 0);
  assert.equal(p.status, 200, "the bucket is still full");
});

Deno.test("without VirtualServices the gateway has one route; a sidecar has its inbound route", () => {
  const mesh = new Mesh();
  const pod: MeshPod = { namespace: "demo", name: "a", labels: { app: "httpbin" }, ready: true };
  mesh.sync([gatewayFilter(1)], [gwPod, pod], 0);
  const a = mesh.send({ to: "gateway", path: "/a" }, 0);
  const b = mesh.send({ to: "gateway", path: "/b", headers: { host: "any" } }, 0);
  assert.deepEqual([a.status, a.route, b.status], [200, GATEWAY_ROUTE, 429]);
  const w = mesh.send({ to: { namespace: "demo", labels: { app: "httpbin" } }, path: "/" }, 0);
  assert.equal(w.route, INBOUND_ROUTE);
});

Deno.test("a new route configuration on the gateway restarts its buckets full; sidecars keep theirs", () => {
  const mesh = new Mesh();
  const pod: MeshPod = { namespace: "demo", name: "a", labels: { app: "httpbin" }, ready: true };
  const objects = [
    gatewayFilter(1),
    gatewayFilter(1, "demo", "httpbin"),
    virtualService("a", ["a"], [route]),
  ];
  mesh.sync(objects, [gwPod, pod], 0);
  const toPod = { to: { namespace: "demo", labels: { app: "httpbin" } }, path: "/" };
  const gw = { to: "gateway" as const, path: "/", headers: { host: "a" } };
  assert.deepEqual([mesh.send(gw, 0).status, mesh.send(gw, 0).status], [200, 429]);
  assert.equal(mesh.send(toPod, 0).status, 200);
  mesh.sync(objects, [gwPod, pod], 1000);
  assert.equal(mesh.send(gw, 1000).status, 429, "unchanged: same buckets");
  mesh.sync([...objects, virtualService("b", ["b"], [route])], [gwPod, pod], 2000);
  assert.equal(mesh.send(gw, 2000).status, 200, "new routes: new buckets, full");
  assert.equal(mesh.send(toPod, 2000).status, 429, "the sidecar's bucket was not restarted");
});

Deno.test("the Envoy version of the mesh decides the refill: the issue's example", () => {
  const run = (version: string) => {
    const b = envoyBehaviour(version);
    assert.ok(b.ok);
    const mesh = new Mesh({ envoy: b.value });
    const parsed = parseRateLimit({
      apiVersion: "gateway.platform-project.io/v1alpha1",
      kind: "RateLimit",
      metadata: { name: "rl", namespace: "demo", uid: "u" },
      spec: {
        selectorLabels: { app: "httpbin" },
        enableResponseHeaders: true,
        local: { defaultBucket: { maxTokens: 2, tokensPerFill: 2, fillInterval: "10s" } },
      },
    });
    assert.ok(parsed.ok);
    const pod: MeshPod = { namespace: "demo", name: "a", labels: { app: "httpbin" }, ready: true };
    mesh.sync([renderEnvoyFilter(parsed.value)], [pod], 0);
    const to = { namespace: "demo", labels: { app: "httpbin" } };
    return [0, 0, 5000].map((t) => mesh.send({ to, path: "/" }, t))
      .map((r) => [r.status, r.headers["x-ratelimit-remaining"], r.headers["x-ratelimit-reset"]]);
  };
  assert.deepEqual(run("1.38"), [[200, "1", "0"], [200, "0", "5"], [200, "0", "5"]]);
  assert.deepEqual(run("1.30"), [[200, "1", "10"], [200, "0", "10"], [429, "0", "5"]]);
  assert.deepEqual(run("1.32"), [[200, "1", undefined], [200, "0", undefined], [
    200,
    "0",
    undefined,
  ]]);
});

Deno.test("no global: two meshes on different Envoys side by side keep their own behaviour", () => {
  const mesh = (v: string) => {
    const b = envoyBehaviour(v);
    assert.ok(b.ok);
    const m = new Mesh({ envoy: b.value });
    m.sync([gatewayFilter(1)], [gwPod], 0);
    return m;
  };
  const old = mesh("1.30");
  const now = mesh("1.38");
  const gw = { to: "gateway" as const, path: "/" };
  // 1 token a minute: after taking it at 0, the next whole token and the timer's fill both come at
  // 60 s. At 59.5 s both refuse; 1.30 counts whole seconds to the fill (60 - 59), 1.38 the time to
  // the token (0.5 s, rounded down).
  for (const m of [old, now]) assert.equal(m.send(gw, 0).status, 200);
  const [a, b] = [old.send(gw, 59_500), now.send(gw, 59_500)];
  assert.deepEqual([a.status, a.headers["x-ratelimit-reset"]], [429, "1"]);
  assert.deepEqual([b.status, b.headers["x-ratelimit-reset"]], [429, "0"]);
  assert.equal(new Mesh().envoy.version, "1.38", "the default, when none is named");
});
