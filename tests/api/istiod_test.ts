/** Reading istiod's `/debug/syncz`: where each proxy stands, and the push counter of a nonce. */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  heldLimitsOf,
  LISTENER_TYPE,
  MAX_FIELD,
  parseSyncz,
  proxyId,
  proxyStatusObject,
  proxyStatusOf,
  type ProxySync,
  pushNumber,
  ROUTE_TYPE,
  verdictOf,
} from "../../src/api/istiod.ts";
import { ROUTE_METADATA_KEY } from "../../src/api/envoy.ts";

const UUID = "5b2e3c1a-9f0e-4d7b-8c6a-2f1e0d9c8b7a";
const nonce = (n: number) => `2026-11-28T11:00:00Z/${n}${UUID}`;

function entry(over: Record<string, unknown> = {}) {
  return {
    proxy: "demo-0.apps",
    proxy_type: "sidecar",
    istio_version: "1.31.0",
    resources: {
      [LISTENER_TYPE]: { sent: nonce(3), acked: nonce(3) },
      [ROUTE_TYPE]: { sent: nonce(3), acked: nonce(3) },
    },
    ...over,
  };
}

function only(body: unknown): ProxySync {
  const { proxies } = parseSyncz(body);
  assert.equal(proxies.length, 1);
  return proxies[0];
}

Deno.test("a proxy that acknowledged the listeners and routes last sent is Acked", () => {
  const p = only([entry()]);
  assert.equal(p.id, "demo-0.apps");
  assert.equal(p.istioVersion, "1.31.0");
  assert.deepEqual(verdictOf(p), { state: "Acked" });
});

Deno.test("a NACK of the listeners or the routes is Rejected with the proxy's error", () => {
  const nack = entry({
    resources: {
      [LISTENER_TYPE]: { sent: nonce(4), acked: nonce(3) },
      [ROUTE_TYPE]: {
        sent: nonce(4),
        acked: nonce(3),
        lastError: "Proto constraint validation failed (RateLimitValidationError.Actions)",
      },
    },
  });
  assert.deepEqual(verdictOf(only([nack])), {
    state: "Rejected",
    type: "routes",
    error: "Proto constraint validation failed (RateLimitValidationError.Actions)",
  });
});

Deno.test("a proxy that never asked for routes (a gateway without a Gateway) is Acked on its listeners", () => {
  const gateway = entry({ resources: { [LISTENER_TYPE]: { sent: nonce(3), acked: nonce(3) } } });
  assert.deepEqual(verdictOf(only([gateway])), { state: "Acked" });
});

Deno.test("sent and not yet answered, or nothing sent, is Pending", () => {
  const inFlight = entry({
    resources: {
      [LISTENER_TYPE]: { sent: nonce(5), acked: nonce(3) },
      [ROUTE_TYPE]: { sent: nonce(3), acked: nonce(3) },
    },
  });
  assert.deepEqual(verdictOf(only([inFlight])), { state: "Pending" });
  assert.deepEqual(verdictOf(only([entry({ resources: {} })])), { state: "Pending" });
  const routesInFlight = entry({
    resources: {
      [LISTENER_TYPE]: { sent: nonce(3), acked: nonce(3) },
      [ROUTE_TYPE]: { sent: nonce(4), acked: "" },
    },
  });
  assert.deepEqual(verdictOf(only([routesInFlight])), { state: "Pending" });
});

Deno.test("the top-level nonces are read when resources does not name the type", () => {
  const p = only([{
    proxy: "gw.mesh-system",
    listener_sent: nonce(1),
    listener_acked: nonce(1),
    route_sent: nonce(1),
    route_acked: nonce(1),
  }]);
  assert.deepEqual(verdictOf(p), { state: "Acked" });
});

Deno.test("entries without a proxy id are skipped and counted; a body that is no list has none", () => {
  assert.deepEqual(parseSyncz([1, null, {}, { proxy: "" }, entry()]).skipped, 4);
  assert.deepEqual(parseSyncz({ proxies: [] }), { proxies: [], skipped: 1 });
});

Deno.test("a long error is cut at the bound", () => {
  const long = "x".repeat(MAX_FIELD * 3);
  const p = only([entry({ resources: { [LISTENER_TYPE]: { lastError: long } } })]);
  assert.equal(p.listeners.lastError.length, MAX_FIELD + 1);
});

Deno.test("an error over several lines, as Envoy's end, becomes one line", () => {
  const detail = "Error adding/updating listener(s) virtualInbound: Proto constraint validation " +
    "failed (RateLimitValidationError.Actions)\n\n  at entry 0\n";
  const p = only([entry({ resources: { [LISTENER_TYPE]: { lastError: detail } } })]);
  assert.equal(
    p.listeners.lastError,
    "Error adding/updating listener(s) virtualInbound: Proto constraint validation failed " +
      "(RateLimitValidationError.Actions) at entry 0",
  );
});

Deno.test("pushNumber: the counter between the time and the UUID; undefined otherwise", () => {
  assert.equal(pushNumber(nonce(17)), 17);
  assert.equal(pushNumber(UUID), undefined);
  assert.equal(pushNumber("no-slash-here" + UUID), undefined);
  fc.assert(fc.property(fc.nat({ max: 2 ** 40 }), (n) => pushNumber(nonce(n)) === n));
});

Deno.test("parseSyncz never throws, whatever the JSON", () => {
  fc.assert(fc.property(fc.jsonValue(), (v) => {
    const { proxies } = parseSyncz(v);
    for (const p of proxies) verdictOf(p);
  }));
});

Deno.test("proxyId is pod.namespace, as pilot-agent names its node", () => {
  assert.equal(proxyId({ name: "demo-0", namespace: "apps" }), "demo-0.apps");
});

// Answers of a real istiod (pilot-discovery at the pinned istio.io/istio), captured with the proxy
// stand-in as the demo Pod's sidecar and the ingress gateway, the samples' EnvoyFilters applied.
const FIXTURES = new URL("./fixtures/", import.meta.url);
const fixture = (name: string) => JSON.parse(Deno.readTextFileSync(new URL(name, FIXTURES)));
const LRL = "envoy.filters.http.local_ratelimit";
const PREFIX = "http_local_rate_limiter";

Deno.test("a real syncz: both proxies acknowledged, read by their Pod", () => {
  const { proxies, skipped } = parseSyncz(fixture("istiod_syncz.json"));
  assert.equal(skipped, 0);
  assert.deepEqual(proxies.map((p) => [p.type, verdictOf(p).state]).sort(), [
    ["router", "Acked"],
    ["sidecar", "Acked"],
  ]);
  for (const p of proxies) {
    assert.ok(pushNumber(p.listeners.acked) !== undefined, p.listeners.acked);
  }
});

Deno.test("a real syncz: each proxy's Istio version, and from it its Envoy on reading", () => {
  const { proxies } = parseSyncz(fixture("istiod_syncz.json"));
  // The stand-in reports ISTIO_VERSION 1.31.0 (the pinned module is 1.31-dev), newer than the
  // table: Envoy 1.38 or later. syncz has no Envoy version of its own.
  for (const p of proxies) {
    assert.equal(p.istioVersion, "1.31.0");
    const status = proxyStatusOf(proxyStatusObject(p));
    assert.deepEqual(status?.envoy, { istio: "1.31.0", minor: 38, bound: "atLeast" });
  }
});

Deno.test("a ProxyStatus keeps the Istio version only; its Envoy is read from it, or absent", () => {
  const p = only([entry({ istio_version: "1.25.2" })]);
  const obj = proxyStatusObject(p)!;
  assert.equal((obj.status as Record<string, unknown>).envoy, undefined, "not stored");
  assert.deepEqual(proxyStatusOf(obj)?.envoy, { istio: "1.25.2", minor: 33, bound: "exact" });
  for (const v of [undefined, "", "unknown", 7]) {
    const q = only([entry({ istio_version: v })]);
    assert.equal(q.istioVersion, typeof v === "string" ? v : "");
    const read = proxyStatusOf(proxyStatusObject(q));
    assert.ok(read, String(v));
    assert.equal("envoy" in read, false, String(v));
  }
});

Deno.test("a real config dump: the sidecar holds the workload sample's buckets on its inbound routes", () => {
  const held = heldLimitsOf(fixture("istiod_config_dump_sidecar.json"), LRL, PREFIX);
  assert.equal(held.unreadable, 0);
  // samples/ratelimit-workload.yaml: default 10 per 30s; rules 2/60s, 5/30s, 1/120s.
  assert.deepEqual(held.limits, [{
    shadow: false,
    buckets: [
      { maxTokens: 10, tokensPerFill: 10, fillInterval: "30s" },
      { maxTokens: 2, tokensPerFill: 2, fillInterval: "60s" },
      { maxTokens: 5, tokensPerFill: 5, fillInterval: "30s" },
      { maxTokens: 1, tokensPerFill: 1, fillInterval: "120s" },
    ],
  }]);
});

Deno.test("held limits: a 0% enforced fraction is left out of protobuf JSON and reads as shadow", () => {
  const dump = fixture("istiod_config_dump_sidecar.json");
  const text = JSON.stringify(dump).replaceAll(
    `"filterEnforced":{"defaultValue":{"numerator":100}`,
    `"filterEnforced":{"defaultValue":{}`,
  );
  const held = heldLimitsOf(JSON.parse(text), LRL, PREFIX);
  assert.deepEqual(held.limits.map((l) => l.shadow), [true]);
});

Deno.test("held limits: another stat prefix is not ours; an unreadable bucket is counted", () => {
  const dump = JSON.stringify(fixture("istiod_config_dump_sidecar.json"));
  assert.deepEqual(heldLimitsOf(JSON.parse(dump), LRL, "someone_else").limits, []);
  const broken = dump.replaceAll(`"fillInterval":"120s"`, `"fillInterval":120`);
  const held = heldLimitsOf(JSON.parse(broken), LRL, PREFIX);
  assert.deepEqual(held.limits, []);
  assert.ok(held.unreadable > 0);
});

Deno.test("held limits: the operator's route digest is read beside them; another digest is another config", () => {
  const dump = JSON.stringify(fixture("istiod_config_dump_sidecar.json"));
  const ours = `"typedPerFilterConfig":{"${LRL}"`;
  assert.ok(dump.split(ours).length > 2, "routes of ours (each inbound chain has its own)");
  // As istiod's protobuf JSON writes a route's metadata (Istio's own entry beside ours).
  const withDigest = (digest: string, snake = false) =>
    JSON.parse(dump.replaceAll(
      ours,
      `"metadata":{"${
        snake ? "filter_metadata" : "filterMetadata"
      }":{"istio":{"config":"x"},"${ROUTE_METADATA_KEY}":{"digest":"${digest}"}}},${ours}`,
    ));
  const read = heldLimitsOf(withDigest("0b7713b59aa0ed"), LRL, PREFIX).limits;
  assert.deepEqual(read.map((l) => l.digest), ["0b7713b59aa0ed"]);
  assert.equal(read[0].buckets.length, 4);
  assert.deepEqual(
    heldLimitsOf(withDigest("abc", true), LRL, PREFIX).limits.map((l) => l.digest),
    ["abc"],
  );
  // Without (an older operator's filter): no digest.
  assert.equal(heldLimitsOf(JSON.parse(dump), LRL, PREFIX).limits[0].digest, undefined);
  // A digest that is not a string is none.
  const odd = JSON.parse(JSON.stringify(withDigest("x")).replace(`"digest":"x"`, `"digest":7`));
  assert.equal(heldLimitsOf(odd, LRL, PREFIX).limits[0].digest, undefined);
});
