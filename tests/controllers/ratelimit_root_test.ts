/**
 * The controller across namespaces: a RateLimit in the mesh's root namespace reads the Pods of
 * every namespace, a Pod anywhere wakes it, and a gateway Pod it shares with a namespace's own
 * RateLimit makes each the other's rival, through the indexes, as the reducer needs them.
 */
import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import {
  ENVOYFILTER_CRD,
  loadRateLimitReducer,
  rateLimitControllerFor,
} from "../../src/controllers/ratelimit.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { IMAGES, NOW } from "../reconcile/serverless_fixtures.ts";
import { pod, rateLimit, withProxy } from "../reconcile/ratelimit_fixtures.ts";
import { cacheOf } from "./ratelimit_cache_fixtures.ts";
import { triggersOf } from "../../src/runtime/controller_spec.ts";

// The reducer loads with a controller's preload; reconcile is called directly here.
await loadRateLimitReducer();

const ctx = { now: NOW, images: IMAGES, namespace: "platform-system" };
const crd: KubeObject = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: ENVOYFILTER_CRD },
};
const controller = rateLimitControllerFor({ meshRootNamespace: "mesh-system" });
const GATEWAY = { istio: "ingressgateway" };
const TLS = { "security.istio.io/tlsMode": "istio" };

const gwRoot = withProxy(pod("gw-0", { ...GATEWAY, ...TLS }, "mesh-system"), "router");
const gwEdge = withProxy(pod("gw-1", { ...GATEWAY, ...TLS }, "edge"), "router");
const app = withProxy(pod("httpbin-0", { app: "httpbin", ...TLS }, "demo"), "sidecar");
const rootGateway = rateLimit({
  name: "gateway",
  namespace: "mesh-system",
  selectorLabels: GATEWAY,
  created: "2024-01-01T00:00:00Z",
});
const edge = rateLimit({
  name: "edge",
  namespace: "edge",
  selectorLabels: GATEWAY,
  created: "2024-06-01T00:00:00Z",
});
const everyone = rateLimit({ name: "everyone", namespace: "mesh-system", selectorLabels: TLS });

function ready(key: string, objects: KubeObject[]) {
  const plan = controller.reconcile(key, cacheOf(objects), ctx)!;
  const status = plan.status as {
    podsSelected?: number;
    conditions: { type: string; reason: string; message: string }[];
  };
  return { plan, status, ready: status.conditions.find((c) => c.type === "Ready")! };
}

Deno.test("root RateLimit: reads the Pods of every namespace; one reaching a workload is refused", () => {
  const world = [crd, gwRoot, gwEdge, app, rootGateway, everyone];
  const gw = ready("mesh-system/gateway", world);
  assert.equal(gw.ready.reason, "Applied");
  assert.equal(gw.status.podsSelected, 2, "the gateways of mesh-system and edge");
  const wide = ready("mesh-system/everyone", world);
  assert.equal(wide.ready.reason, "MeshWide");
  assert.match(wide.ready.message, /demo\/httpbin-0/);
  assert.deepEqual(wide.plan.apply, []);
});

Deno.test("root RateLimit: a Pod of any namespace wakes it; a namespaced one only its own", () => {
  const cache = cacheOf([crd, rootGateway, everyone, edge]);
  const wakes = (p: KubeObject) => triggersOf(controller)(RESOURCES.Pod, p, cache).sort();
  assert.deepEqual(wakes(app), ["mesh-system/everyone"]);
  assert.deepEqual(wakes(gwEdge), ["edge/edge", "mesh-system/everyone", "mesh-system/gateway"]);
  const other = withProxy(pod("x", { app: "x" }, "demo"), "sidecar");
  assert.deepEqual(wakes(other), []);
});

Deno.test("a gateway Pod shared across the root namespace: rivals both ways, the older wins", () => {
  const world = [crd, gwRoot, gwEdge, app, rootGateway, edge];
  const newer = ready("edge/edge", world);
  assert.equal(newer.ready.reason, "Conflict");
  assert.match(newer.ready.message, /older RateLimit mesh-system\/gateway/);
  assert.equal(ready("mesh-system/gateway", world).ready.reason, "Applied");
  // Each wakes the other when it changes.
  const cache = cacheOf(world);
  assert.ok(triggersOf(controller)(RESOURCES.RateLimit, rootGateway, cache).includes("edge/edge"));
  assert.ok(
    triggersOf(controller)(RESOURCES.RateLimit, edge, cache).includes("mesh-system/gateway"),
  );
  // Without the shared gateway Pod, no conflict: selectors alone never decide across namespaces.
  const apart = ready("edge/edge", [crd, gwRoot, app, rootGateway, edge]);
  assert.equal(apart.ready.reason, "Applied");
});
