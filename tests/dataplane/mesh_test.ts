/** The Mesh: which proxies a filter reaches, round-robin, per-pod buckets, restarts, rejections. */
import assert from "node:assert/strict";
import { parseRateLimit } from "../../src/api/ratelimit.ts";
import { Mesh, type MeshPod, meshPodOf } from "../../src/dataplane/mod.ts";
import { renderEnvoyFilter } from "../../src/reconcile/ratelimit/render.ts";
import type { KubeObject } from "../../src/api/object.ts";

function filterFor(opts: {
  name?: string;
  namespace?: string;
  selector?: Record<string, string>;
  maxTokens?: number;
  buckets?: unknown[];
}): KubeObject {
  const parsed = parseRateLimit({
    apiVersion: "gateway.platform-project.io/v1alpha1",
    kind: "RateLimit",
    metadata: { name: opts.name ?? "rl", namespace: opts.namespace ?? "demo", uid: "u1" },
    spec: {
      selectorLabels: opts.selector ?? { app: "httpbin" },
      enableResponseHeaders: true,
      local: {
        defaultBucket: { maxTokens: opts.maxTokens ?? 2, tokensPerFill: 1, fillInterval: "10s" },
        buckets: opts.buckets ?? [],
      },
    },
  });
  assert.ok(parsed.ok);
  return renderEnvoyFilter(parsed.value);
}

const httpbin = (name: string, ready = true, namespace = "demo"): MeshPod => ({
  namespace,
  name,
  labels: { app: "httpbin" },
  ready,
});
const to = { namespace: "demo", labels: { app: "httpbin" } };

Deno.test("requests go round-robin over ready pods, each with its own buckets", () => {
  const mesh = new Mesh();
  mesh.sync([filterFor({})], [httpbin("b"), httpbin("a"), httpbin("c", false)], 0);
  const answers = [0, 1, 2, 3, 4].map(() => mesh.send({ to, path: "/" }, 0));
  assert.deepEqual(answers.map((r) => r.pod), ["demo/a", "demo/b", "demo/a", "demo/b", "demo/a"]);
  assert.deepEqual(answers.map((r) => r.status), [200, 200, 200, 200, 429]);
  assert.deepEqual(answers.map((r) => r.headers["x-ratelimit-remaining"]), [
    "1",
    "1",
    "0",
    "0",
    "0",
  ]);
});

Deno.test("no limit: 200 without rate limit headers; no ready pod: 503", () => {
  const mesh = new Mesh();
  mesh.sync([], [httpbin("a")], 0);
  const r = mesh.send({ to, path: "/" }, 0);
  assert.deepEqual([r.status, r.headers, r.bucket], [200, {}, undefined]);
  mesh.sync([], [httpbin("a", false)], 0);
  assert.equal(mesh.send({ to, path: "/" }, 0).status, 503);
});

Deno.test("a filter reaches pods of its namespace whose labels it selects", () => {
  const mesh = new Mesh();
  mesh.sync(
    [filterFor({ maxTokens: 1 })],
    [httpbin("a"), httpbin("a", true, "other"), {
      namespace: "demo",
      name: "w",
      labels: { app: "web" },
      ready: true,
    }],
    0,
  );
  const twice = (target: typeof to) =>
    [0, 1].map(() => mesh.send({ to: target, path: "/" }, 0).status);
  assert.deepEqual(twice(to), [200, 429]);
  assert.deepEqual(twice({ namespace: "other", labels: { app: "httpbin" } }), [200, 200]);
  assert.deepEqual(twice({ namespace: "demo", labels: { app: "web" } }), [200, 200]);
});

Deno.test("a filter in the root namespace reaches matching workloads of every namespace (Istio)", () => {
  const mesh = new Mesh();
  mesh.sync(
    [filterFor({ namespace: "mesh-system", maxTokens: 1 })],
    [httpbin("a", true, "other")],
    0,
  );
  const target = { namespace: "other", labels: { app: "httpbin" } };
  assert.deepEqual([0, 1].map(() => mesh.send({ to: target, path: "/" }, 0).status), [200, 429]);
});

Deno.test("an unchanged filter keeps the buckets; a changed one restarts them full", () => {
  const mesh = new Mesh();
  mesh.sync([filterFor({ maxTokens: 1 })], [httpbin("a")], 0);
  assert.equal(mesh.send({ to, path: "/" }, 0).status, 200);
  mesh.sync([filterFor({ maxTokens: 1 })], [httpbin("a")], 1000);
  assert.equal(mesh.send({ to, path: "/" }, 1000).status, 429, "same config: same, empty bucket");
  mesh.sync([filterFor({ maxTokens: 3 })], [httpbin("a")], 2000);
  const r = mesh.send({ to, path: "/" }, 2000);
  assert.deepEqual([r.status, r.headers["x-ratelimit-remaining"]], [200, "2"]);
  // Fills count from the change (2000): due at 12000, not at 10000.
  mesh.send({ to, path: "/" }, 2000);
  mesh.send({ to, path: "/" }, 2000);
  assert.equal(mesh.send({ to, path: "/" }, 11_999).status, 429);
  assert.equal(mesh.send({ to, path: "/" }, 12_000).status, 200);
});

Deno.test("a replaced pod (new uid) is a new proxy with full buckets", () => {
  const mesh = new Mesh();
  mesh.sync([filterFor({ maxTokens: 1 })], [{ ...httpbin("a"), uid: "1" }], 0);
  mesh.send({ to, path: "/" }, 0);
  mesh.sync([filterFor({ maxTokens: 1 })], [{ ...httpbin("a"), uid: "2" }], 5);
  assert.equal(mesh.send({ to, path: "/" }, 5).status, 200);
});

Deno.test("a filter the proxy rejects is reported and the previous config stays", () => {
  const mesh = new Mesh();
  const good = filterFor({ maxTokens: 1 });
  mesh.sync([good], [httpbin("a")], 0);
  mesh.send({ to, path: "/" }, 0);
  const bad = structuredClone(good);
  const spec = bad.spec as { configPatches: Array<{ patch: { value: Record<string, unknown> } }> };
  spec.configPatches[1].patch.value.route = { rate_limits: [{ actions: [] }] };
  mesh.sync([bad], [httpbin("a")], 1);
  assert.deepEqual(mesh.rejections().map((r) => `${r.filter} ${r.pod}`), ["demo/rl demo/a"]);
  assert.equal(mesh.send({ to, path: "/" }, 1).status, 429, "still the old, empty bucket");
});

Deno.test("the gateway: its own pods and context; viaGateway passes it first", () => {
  const gwPod: MeshPod = {
    namespace: "mesh-system",
    name: "gw",
    labels: { app: "mesh-ingressgateway" },
    ready: true,
  };
  const mesh = new Mesh();
  mesh.sync(
    [filterFor({
      namespace: "mesh-system",
      selector: { app: "mesh-ingressgateway" },
      maxTokens: 1,
    })],
    [gwPod, httpbin("a")],
    0,
  );
  const r = mesh.send({ to, path: "/", viaGateway: true }, 0);
  assert.deepEqual([r.status, r.pod], [200, "demo/a"]);
  const second = mesh.send({ to, path: "/", viaGateway: true }, 0);
  assert.deepEqual([second.status, second.pod], [429, "mesh-system/gw"]);
  assert.equal(mesh.send({ to, path: "/" }, 0).status, 200, "directly, the workload has no limit");
  assert.equal(mesh.send({ to: "gateway", path: "/" }, 0).status, 429);
});

Deno.test("meshPodOf reads readiness from the Ready condition and deletion", () => {
  const obj = {
    metadata: { name: "p", namespace: "demo", uid: "9", labels: { app: "x" } },
    status: { conditions: [{ type: "Ready", status: "True" }] },
  };
  assert.deepEqual(meshPodOf(obj), {
    namespace: "demo",
    name: "p",
    uid: "9",
    labels: { app: "x" },
    ready: true,
    sidecar: false,
    router: false,
  });
  const proxy = { name: "istio-proxy", image: "proxyv2" };
  assert.equal(meshPodOf({ ...obj, spec: { containers: [proxy] } }).sidecar, true);
  const router = meshPodOf({
    ...obj,
    spec: { containers: [{ ...proxy, args: ["proxy", "router"] }] },
  });
  assert.deepEqual([router.sidecar, router.router], [true, true], "a gateway's proxy");
  const sidecar = meshPodOf({
    ...obj,
    spec: { containers: [{ ...proxy, args: ["proxy", "sidecar"] }] },
  });
  assert.deepEqual([sidecar.sidecar, sidecar.router], [true, false]);
  assert.equal(
    meshPodOf({ ...obj, spec: { initContainers: [{ ...proxy, restartPolicy: "Always" }] } })
      .sidecar,
    true,
    "a native sidecar",
  );
  assert.equal(meshPodOf({ ...obj, spec: { initContainers: [proxy] } }).sidecar, false);
  const injected = { ...obj.metadata, annotations: { "sidecar.istio.io/status": "{}" } };
  assert.equal(meshPodOf({ ...obj, metadata: injected }).sidecar, true);
  assert.equal(
    meshPodOf({ ...obj, status: { conditions: [{ type: "Ready", status: "False" }] } }).ready,
    false,
  );
  assert.equal(
    meshPodOf({ metadata: { ...obj.metadata, deletionTimestamp: "x" }, status: obj.status }).ready,
    false,
  );
  assert.equal(meshPodOf({ metadata: { name: "q" } }).ready, false);
});

Deno.test("a Pod without a mesh sidecar is not limited: no proxy, no filter reaches it", () => {
  const mesh = new Mesh();
  const plain: MeshPod = { ...httpbin("a"), sidecar: false };
  mesh.sync([filterFor({ maxTokens: 1 })], [plain], 0);
  assert.deepEqual([0, 1, 2].map(() => mesh.send({ to, path: "/" }, 0).status), [200, 200, 200]);
  assert.equal(mesh.proxy("demo", "a"), undefined);
  // The same Pod with its sidecar: the filter bites.
  mesh.sync([filterFor({ maxTokens: 1 })], [{ ...plain, sidecar: true }], 0);
  assert.deepEqual([0, 1].map(() => mesh.send({ to, path: "/" }, 0).status), [200, 429]);
});

Deno.test("other objects are ignored; a rejected filter affects only the pods it selects", () => {
  const mesh = new Mesh();
  const bad = filterFor({ name: "web", selector: { app: "web" } });
  const spec = bad.spec as { configPatches: Array<{ patch: { value: Record<string, unknown> } }> };
  spec.configPatches[1].patch.value.route = { rate_limits: [{ actions: [] }] };
  const web: MeshPod = { namespace: "demo", name: "w", labels: { app: "web" }, ready: true };
  mesh.sync(
    [
      { kind: "ConfigMap", metadata: { name: "x", namespace: "demo" } },
      bad,
      filterFor({ maxTokens: 1 }),
    ],
    [httpbin("a"), web],
    0,
  );
  assert.deepEqual(mesh.rejections().map((r) => `${r.filter} ${r.pod}`), ["demo/web demo/w"]);
  assert.deepEqual([0, 1].map(() => mesh.send({ to, path: "/" }, 0).status), [200, 429]);
});
