/** Reading istiod's `/debug/syncz`: where each proxy stands, and the push counter of a nonce. */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  LISTENER_TYPE,
  MAX_FIELD,
  parseSyncz,
  proxyId,
  type ProxySync,
  pushNumber,
  ROUTE_TYPE,
  verdictOf,
} from "../../src/api/istiod.ts";

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

Deno.test("sent and not yet answered, or nothing sent, is Pending", () => {
  const inFlight = entry({
    resources: {
      [LISTENER_TYPE]: { sent: nonce(5), acked: nonce(3) },
      [ROUTE_TYPE]: { sent: nonce(3), acked: nonce(3) },
    },
  });
  assert.deepEqual(verdictOf(only([inFlight])), { state: "Pending" });
  assert.deepEqual(verdictOf(only([entry({ resources: {} })])), { state: "Pending" });
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
