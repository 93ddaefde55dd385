/**
 * The RateLimit controller asking istiod (settings.proxyStatus): it watches ProxyStatus, a type
 * served inside the operator; a proxy's change wakes the RateLimits selecting its Pod, istiod's own
 * wakes them all, and the reconcile reads them into the Accepted condition. Without the setting
 * nothing of it is watched and Accepted is Unknown (IstiodNotAsked).
 */
import assert from "node:assert/strict";
import {
  ENVOYFILTER_CRD,
  rateLimitController,
  rateLimitControllerFor,
} from "../../src/controllers/ratelimit.ts";
import {
  type HeldLimits,
  istiodStatusObject,
  parseSyncz,
  PROXY_STATUS,
  proxyStatusObject,
} from "../../src/api/istiod.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { Condition } from "../../src/api/common.ts";
import { triggersOf } from "../../src/runtime/controller_spec.ts";
import { IMAGES, NOW } from "../reconcile/serverless_fixtures.ts";
import { pod, rateLimit, withProxy } from "../reconcile/ratelimit_fixtures.ts";
import { cacheOf } from "./ratelimit_cache_fixtures.ts";

const ctx = { now: NOW, images: IMAGES, namespace: "platform-system" };
const crd: KubeObject = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  metadata: { name: ENVOYFILTER_CRD },
};
const asking = rateLimitControllerFor({ meshRootNamespace: "istio-system", proxyStatus: true });
const UUID = "5b2e3c1a-9f0e-4d7b-8c6a-2f1e0d9c8b7a";
const nonce = `2026-11-28T11:00:00Z/3${UUID}`;
const HELD: HeldLimits = {
  shadow: false,
  buckets: [{ maxTokens: 10, tokensPerFill: 10, fillInterval: "30s" }],
};

function proxyOf(podName: string): KubeObject {
  const [p] = parseSyncz([{
    proxy: `${podName}.demo`,
    proxy_type: "sidecar",
    istio_version: "1.31.0",
    listener_sent: nonce,
    listener_acked: nonce,
    route_sent: nonce,
    route_acked: nonce,
  }]).proxies;
  return proxyStatusObject(p, { limits: [HELD], unreadable: 0, confirmed: true })!;
}

const accepted = (plan: { status?: unknown }) =>
  (plan.status as { conditions: Condition[] }).conditions.find((c) => c.type === "Accepted")!;

Deno.test("asking istiod: ProxyStatus is watched as a local type, and only then", () => {
  const w = asking.watches.find((x) => x.type === PROXY_STATUS);
  assert.ok(w?.local, "a local watch: no CRD, no RBAC, skipped by the startup checks");
  assert.equal(rateLimitController.watches.some((x) => x.type === PROXY_STATUS), false);
});

Deno.test("asking istiod: the cached ProxyStatus objects become the Accepted condition", () => {
  const rl = rateLimit();
  const pods = [withProxy(pod("a", { app: "httpbin" }), "sidecar")];
  const ef = asking.reconcile("demo/httpbin", cacheOf([crd, rl, ...pods]), ctx)!.apply[0];
  const istiod = istiodStatusObject("platform-system", { reachable: true, proxies: 1 });
  const cache = cacheOf([crd, rl, ef, ...pods, proxyOf("a"), istiod]);
  assert.deepEqual(
    [accepted(asking.reconcile("demo/httpbin", cache, ctx)!).status],
    ["True"],
  );
  // Without istiod's own status (no answer yet): Unknown.
  const noAnswer = cacheOf([crd, rl, ef, ...pods, proxyOf("a")]);
  assert.equal(
    accepted(asking.reconcile("demo/httpbin", noAnswer, ctx)!).reason,
    "IstiodUnavailable",
  );
  // The controller that does not ask: Unknown, IstiodNotAsked, whatever the cache holds.
  assert.equal(
    accepted(rateLimitController.reconcile("demo/httpbin", cache, ctx)!).reason,
    "IstiodNotAsked",
  );
});

Deno.test("asking istiod: a proxy's change wakes the RateLimits of its Pod; istiod's wakes all", () => {
  const rls = [rateLimit(), rateLimit({ name: "other", selectorLabels: { app: "other" } })];
  const pods = [withProxy(pod("a", { app: "httpbin" }), "sidecar")];
  const cache = cacheOf([crd, ...rls, ...pods]);
  const wake = triggersOf(asking);
  assert.deepEqual(wake(PROXY_STATUS, proxyOf("a"), cache), ["demo/httpbin"]);
  assert.deepEqual(wake(PROXY_STATUS, proxyOf("gone"), cache), []);
  const istiod = istiodStatusObject("platform-system", { reachable: true, proxies: 1 });
  assert.deepEqual(wake(PROXY_STATUS, istiod, cache).sort(), ["demo/httpbin", "demo/other"]);
});
