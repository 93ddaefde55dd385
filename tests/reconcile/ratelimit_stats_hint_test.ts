/**
 * The stats hint of an enforced RateLimit: Istio hides Envoy's local rate limit stats unless the
 * proxy's stats inclusion names them, so the Enforced message says which Pods do not (as far as
 * the Pods show), in each form Istio reads (annotation prefixes, suffixes, regexps; the Pod's
 * `proxy.istio.io/config` as YAML or JSON; the annotation winning over the proxy config per kind).
 */
import assert from "node:assert/strict";
import type { Condition } from "../../src/api/common.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { reconcileRateLimit } from "../../src/reconcile/ratelimit/mod.ts";
import { exportsLimitStats, LIMIT_STATS } from "../../src/reconcile/ratelimit/render.ts";
import { input, pod, rateLimit, withProxy } from "./ratelimit_fixtures.ts";

function meshPod(name: string, annotations: Record<string, string> = {}): KubeObject {
  const p = withProxy(pod(name, { app: "httpbin" }), "sidecar");
  return { ...p, metadata: { ...p.metadata, annotations } };
}

const enforced = (pods: KubeObject[]): Condition =>
  (reconcileRateLimit(input(rateLimit(), { pods })).status as { conditions: Condition[] })
    .conditions.find((c) => c.type === "Enforced")!;

const PREFIXES = "sidecar.istio.io/statsInclusionPrefixes";
const CONFIG = "proxy.istio.io/config";

Deno.test("the counters read are the dashboard's, under our filters' stat_prefix", () => {
  assert.deepEqual(LIMIT_STATS, [
    "http_local_rate_limiter.http_local_rate_limit.ok",
    "http_local_rate_limiter.http_local_rate_limit.enforced",
    "http_local_rate_limiter.http_local_rate_limit.rate_limited",
  ]);
});

Deno.test("every form of stats inclusion Istio reads is understood, and only a match counts", () => {
  const yes: Record<string, string>[] = [
    { [PREFIXES]: "http_local_rate_limiter" },
    { [PREFIXES]: "cluster_manager,http_local_rate_limiter.http_local" },
    { "sidecar.istio.io/statsInclusionRegexps": ".*http_local_rate_limit.*" },
    { "sidecar.istio.io/statsInclusionSuffixes": "ok,enforced,rate_limited" },
    { [CONFIG]: "proxyStatsMatcher:\n  inclusionPrefixes:\n    - http_local_rate_limiter\n" },
    {
      [CONFIG]:
        "concurrency: 2\nproxyStatsMatcher:\n  inclusionRegexps: ['.*local_rate_limit.*']\n",
    },
    { [CONFIG]: '{"proxyStatsMatcher":{"inclusionPrefixes":["http_local_rate_limiter"]}}' },
  ];
  const no: Record<string, string>[] = [
    {},
    { [PREFIXES]: "cluster_manager" },
    // Istio splits on "," and does not trim: " http_local…" is not a prefix of the stat.
    { [PREFIXES]: "cluster_manager, http_local_rate_limiter" },
    // A regexp matches the whole name, as Envoy's StringMatcher does.
    { "sidecar.istio.io/statsInclusionRegexps": "http_local_rate_limit" },
    { "sidecar.istio.io/statsInclusionSuffixes": "ok" },
    { [CONFIG]: "proxyStatsMatcher:\n  inclusionPrefixes:\n    - cluster_manager\n" },
    { [CONFIG]: "holdApplicationUntilProxyStarts: true\n" },
    { [CONFIG]: "proxyStatsMatcher: [" },
    // The annotation wins over the proxy config for its kind (pilot-agent's getStatsOptions).
    {
      [PREFIXES]: "cluster_manager",
      [CONFIG]: "proxyStatsMatcher:\n  inclusionPrefixes: [http_local_rate_limiter]\n",
    },
  ];
  for (const a of yes) assert.ok(exportsLimitStats(meshPod("p", a)), JSON.stringify(a));
  for (const a of no) assert.ok(!exportsLimitStats(meshPod("p", a)), JSON.stringify(a));
});

Deno.test("an enforced limit names the Pods that hide the stats and how to show them", () => {
  const shown = { [PREFIXES]: "http_local_rate_limiter" };
  const all = enforced([meshPod("a", shown), meshPod("b", shown)]);
  assert.equal(all.reason, "Enforced");
  assert.equal(all.message, "Enforced on all 2 Pods with app=httpbin: each has a mesh sidecar");

  const some = enforced([meshPod("c"), meshPod("a", shown), meshPod("b")]);
  assert.equal(some.reason, "Enforced");
  assert.equal(
    some.message,
    "Enforced on all 3 Pods with app=httpbin: each has a mesh sidecar; 2 of them (b, c) do not " +
      "export Envoy's rate limit stats (http_local_rate_limiter) unless the mesh-wide " +
      "proxyStatsMatcher names them: to see them, annotate the Pod template with " +
      "sidecar.istio.io/statsInclusionPrefixes: http_local_rate_limiter",
  );
  const one = enforced([meshPod("a")]);
  assert.match(one.message, /which has a mesh sidecar; its proxy does not export Envoy's/);
});

Deno.test("the hint is not a state: a limit that does not bite says only why", () => {
  const missing = pod("bare", { app: "httpbin" });
  const c = enforced([meshPod("a"), missing]);
  assert.equal(c.reason, "SidecarMissing");
  assert.doesNotMatch(c.message, /stats/);
});
