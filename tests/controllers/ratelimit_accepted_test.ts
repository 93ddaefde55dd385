/**
 * The RateLimit controller asking istiod (settings.proxyStatus): it watches ProxyStatus, a type
 * served inside the operator; a proxy's change wakes the RateLimits selecting its Pod, istiod's own
 * wakes them all, and the reconcile reads them into the Accepted condition. Without the setting
 * nothing of it is watched and Accepted is Unknown (IstiodNotAsked). The Istio version a cached
 * ProxyStatus carries decides whether per-client buckets are sent (Envoy 1.34, Istio 1.26, and
 * later), and the filter the cache keeps still says that the limit in force is per-client.
 */
import assert from "node:assert/strict";
import {
  loadRateLimitReducer,
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
import {
  bucket,
  DIGEST_ONLY,
  heldOf,
  pod,
  rateLimit,
  withImage,
  withProxy,
} from "../reconcile/ratelimit_fixtures.ts";
import { proxyImageVersion } from "../../src/api/pod.ts";
import { RESOURCES } from "../../src/api/resources.ts";
import { filterLimits } from "../../src/reconcile/ratelimit/input.ts";
import { cacheOf, CTX, MESH_CRD } from "./ratelimit_cache_fixtures.ts";

// The reducer loads with a controller's preload; reconcile is called directly here.
await loadRateLimitReducer();

const ctx = CTX;
const crd = MESH_CRD;
const asking = rateLimitControllerFor({ meshRootNamespace: "istio-system", proxyStatus: true });
const UUID = "5b2e3c1a-9f0e-4d7b-8c6a-2f1e0d9c8b7a";
const nonce = `2026-11-28T11:00:00Z/3${UUID}`;
const HELD: HeldLimits = heldOf(rateLimit());

/**
 * The ProxyStatus the poller publishes for a Pod's proxy that reports Istio `istioVersion` and
 * acknowledged a push holding `held` (none: not read yet).
 */
function proxyOf(
  podName: string,
  istioVersion = "1.31.0",
  held: HeldLimits | undefined = HELD,
): KubeObject {
  const [p] = parseSyncz([{
    proxy: `${podName}.demo`,
    proxy_type: "sidecar",
    istio_version: istioVersion,
    listener_sent: nonce,
    listener_acked: nonce,
    route_sent: nonce,
    route_acked: nonce,
  }]).proxies;
  return proxyStatusObject(
    p,
    held ? { limits: [held], unreadable: 0, confirmed: true } : undefined,
  )!;
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

const answered = istiodStatusObject("platform-system", { reachable: true, proxies: 2 });
const perClient = rateLimit({
  buckets: [{ perClient: { header: "X-Api-Key" }, bucket: bucket(2, 1, "1m") }],
});
const twoPods = ["a", "b"].map((n) => withProxy(pod(n, { app: "httpbin" }), "sidecar"));
const conditionOf = (plan: { status?: unknown }, type: string) =>
  (plan.status as { conditions: Condition[] }).conditions.find((c) => c.type === type)!;

/** A cache with the per-client RateLimit, `objects`, and the proxies of Pods a, b by version. */
function perClientCache(versions: Record<string, string>, objects: KubeObject[] = []) {
  const proxies = Object.entries(versions).map(([n, v]) => proxyOf(n, v, undefined));
  return cacheOf([crd, perClient, ...objects, ...twoPods, answered, ...proxies]);
}

Deno.test("asking istiod: per-client buckets are not sent while a cached proxy reports Istio 1.25", () => {
  const plan = asking.reconcile("demo/httpbin", perClientCache({ a: "1.26.1", b: "1.25.2" }), ctx)!;
  assert.deepEqual(plan.apply, []);
  const ready = conditionOf(plan, "Ready");
  assert.deepEqual([ready.status, ready.reason], ["False", "ProxyTooOld"]);
  assert.match(ready.message, /b \(Istio 1\.25\.2, Envoy 1\.33\)/);
  // Upgraded: the same RateLimit is applied.
  const upgraded = perClientCache({ a: "1.26.1", b: "1.26.1" });
  const applied = asking.reconcile("demo/httpbin", upgraded, ctx)!;
  assert.equal(conditionOf(applied, "Ready").reason, "Applied");
  assert.equal(applied.apply.length, 1);
});

Deno.test("asking istiod: the cached filter in force stays per-client; Accepted names the old proxy", () => {
  // Applied while both proxies were new; then b came back as Istio 1.25 (a rollback).
  const ef = asking.reconcile("demo/httpbin", perClientCache({ a: "1.26.1", b: "1.26.1" }), ctx)!
    .apply[0];
  assert.equal(ef.kind, RESOURCES.EnvoyFilter.kind);
  // The cache keeps a projection of the filter; it still reads as per-client.
  const cache = perClientCache({ a: "1.26.1", b: "1.25.2" }, [ef]);
  const kept = cache.get(RESOURCES.EnvoyFilter, "demo", "httpbin")!;
  assert.notDeepEqual(kept, ef, "projected");
  assert.equal(filterLimits(kept)?.perClient, true);
  const plan = asking.reconcile("demo/httpbin", cache, ctx)!;
  assert.equal(conditionOf(plan, "Ready").reason, "Applied");
  const accepted = conditionOf(plan, "Accepted");
  assert.deepEqual([accepted.status, accepted.reason], ["False", "ProxyTooOld"]);
  assert.match(
    accepted.message,
    /1 of 2 proxies runs an Envoy that refuses.*b \(Istio 1\.25\.2, Envoy 1\.33\)/,
  );
});

Deno.test("asking istiod: a cached Pod's proxy image dates it while istiod does not list it", () => {
  // The projected Pods keep the version their proxy image tag says, and nothing else of it.
  const imaged = [
    withImage(twoPods[0], "docker.io/istio/proxyv2:1.26.1"),
    withImage(twoPods[1], "gcr.io/istio-release/proxyv2:1.25.2-distroless"),
  ];
  const cacheWith = (pods: KubeObject[], versions: Record<string, string>) =>
    cacheOf([
      crd,
      perClient,
      ...pods,
      answered,
      ...Object.entries(versions).map(([n, v]) => proxyOf(n, v, undefined)),
    ]);
  const cache = cacheWith(imaged, { a: "1.26.1" });
  const kept = cache.get(RESOURCES.Pod, "demo", "b")!;
  assert.notDeepEqual(kept, imaged[1], "projected");
  assert.equal(proxyImageVersion(kept), "1.25.2");
  // b, Istio 1.25.2 by its image, reconnecting: refused all the same.
  const plan = asking.reconcile("demo/httpbin", cache, ctx)!;
  assert.deepEqual(plan.apply, []);
  const ready = conditionOf(plan, "Ready");
  assert.deepEqual([ready.status, ready.reason], ["False", "ProxyTooOld"]);
  assert.match(ready.message, /: b \(Istio 1\.25\.2, Envoy 1\.33, by its image\); upgrade/);
  // b's image pinned by digest and b not listed: the new generation waits.
  const digest = cacheWith([imaged[0], withImage(twoPods[1], DIGEST_ONLY)], { a: "1.26.1" });
  const waits = conditionOf(asking.reconcile("demo/httpbin", digest, ctx)!, "Ready");
  assert.deepEqual([waits.status, waits.reason], ["False", "ProxyVersionUnknown"]);
  assert.match(waits.message, /its image tag gives no Istio version: b;/);
  // Listed as 1.26.1: applied.
  const listed = cacheWith([imaged[0], withImage(twoPods[1], DIGEST_ONLY)], {
    a: "1.26.1",
    b: "1.26.1",
  });
  assert.equal(
    conditionOf(asking.reconcile("demo/httpbin", listed, ctx)!, "Ready").reason,
    "Applied",
  );
});
