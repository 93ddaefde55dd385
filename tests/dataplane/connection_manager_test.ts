/**
 * What the connection manager does to a request before the filters (connection_manager.ts), as
 * read in envoyproxy/envoy source/common/http/conn_manager_utility.cc (`maybeNormalizePath`,
 * `mutateRequestHeaders`, `cleanInternalHeaders`) and source/common/http/utility.cc
 * (`getLastAddressFromXFF`), with Istio's settings: a gateway uses the remote address, a sidecar
 * does not; no trusted hops; `http_reject_path_with_fragment: false` (pkg/bootstrap/config.go).
 */
import assert from "node:assert/strict";
import { removedBeforeFilters } from "../../src/api/envoy.ts";
import { decide, newProxyState, proxyConfig } from "../../src/dataplane/mod.ts";
import { admit, type Downstream, requestIdOf } from "../../src/dataplane/connection_manager.ts";
import type { Request } from "../../src/dataplane/request.ts";
import { byAddressFilter, filter, model, ON, pathAction, proxy, tb, version } from "./filters.ts";

const SIDECAR: Downstream = {
  useRemoteAddress: false,
  xffNumTrustedHops: 0,
  privateIsInternal: false,
};
const GATEWAY: Downstream = { ...SIDECAR, useRemoteAddress: true };
const ids = () => {
  let n = 0;
  return () => requestIdOf(++n);
};
const seen = (req: Request, d: Downstream) => admit(req, d, ids());

Deno.test("the fragment leaves the path before rate limit actions read :path", () => {
  const cfg = {
    token_bucket: tb(100, 100, "60s"),
    filter_enabled: ON,
    filter_enforced: ON,
    always_consume_default_token_bucket: false,
    descriptors: [{
      entries: [{ key: "path", value: "/api/v1/login" }],
      token_bucket: tb(1, 1, "60s"),
    }],
  };
  const s = proxy(filter(cfg, [{ actions: [pathAction] }]));
  assert.equal(decide(s, { path: "/api/v1/login#top" }, 0).bucket, 0);
  assert.equal(decide(s, { path: "/api/v1/login#a?b" }, 0).status, 429, "the same bucket");
  assert.equal(seen({ path: "/a?x=1#f" }, SIDECAR).request.path, "/a?x=1");
});

Deno.test("hop-by-hop headers go, except connection and upgrade on an upgrade", () => {
  const headers = {
    Connection: "keep-alive",
    "Keep-Alive": "timeout=5",
    "Proxy-Connection": "x",
    "Transfer-Encoding": "chunked",
    Upgrade: "h2c",
    "x-tenant": "acme",
  };
  for (const d of [SIDECAR, GATEWAY]) {
    const h = seen({ path: "/", headers }, d).request.headers ?? {};
    assert.deepEqual(
      ["Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade"].map((k) =>
        h[k]
      ),
      [undefined, undefined, undefined, undefined, undefined],
    );
    assert.equal(h["x-tenant"], "acme");
    const ws = seen({ path: "/", headers: { ...headers, Connection: "keep-alive, Upgrade" } }, d);
    assert.deepEqual([ws.request.headers?.Connection, ws.request.headers?.Upgrade], [
      "keep-alive, Upgrade",
      "h2c",
    ]);
    assert.equal(ws.request.headers?.["Keep-Alive"], undefined);
  }
});

Deno.test("internal x-envoy headers go from external requests; a gateway strips the edge ones too", () => {
  const headers = {
    "x-envoy-internal": "true",
    "x-envoy-retry-on": "5xx",
    "x-envoy-decorator-operation": "op",
  };
  const side = seen({ path: "/", peer: "8.8.8.8", headers }, SIDECAR).request.headers ?? {};
  assert.deepEqual(
    [side["x-envoy-internal"], side["x-envoy-retry-on"], side["x-envoy-decorator-operation"]],
    [undefined, undefined, "op"],
  );
  const gw = seen({ path: "/", peer: "8.8.8.8", headers }, GATEWAY).request.headers ?? {};
  assert.deepEqual([gw["x-envoy-internal"], gw["x-envoy-decorator-operation"]], [
    undefined,
    undefined,
  ]);
  assert.equal(gw["x-envoy-external-address"], "8.8.8.8");
  // Envoy 1.30 counts a private single address as internal: the header is set, the rest kept.
  const old = { ...GATEWAY, privateIsInternal: true };
  const inner = seen({ path: "/", peer: "10.1.2.3", headers }, old).request.headers ?? {};
  assert.deepEqual([inner["x-envoy-internal"], inner["x-envoy-retry-on"]], ["true", "5xx"]);
  assert.ok(removedBeforeFilters("X-Envoy-Retry-On") && removedBeforeFilters("transfer-encoding"));
  assert.ok(!removedBeforeFilters("x-envoy-internal") && !removedBeforeFilters("upgrade"));
});

Deno.test("x-forwarded-for, x-forwarded-proto and x-request-id at a gateway and a sidecar", () => {
  const req = {
    path: "/",
    peer: "2001:DB8:0::1",
    headers: { "X-Forwarded-For": "1.2.3.4", "x-forwarded-proto": "https", "x-request-id": "mine" },
  };
  const gw = seen(req, GATEWAY);
  assert.equal(gw.remoteAddress, "2001:db8::1", "the peer, as Envoy prints it");
  assert.deepEqual(gw.request.headers, {
    "x-forwarded-for": "1.2.3.4,2001:db8::1",
    "x-forwarded-proto": "http",
    "x-envoy-external-address": "2001:db8::1",
    "x-request-id": "00000000-0000-4000-8000-000000000001",
  });
  const side = seen(req, SIDECAR);
  assert.equal(side.remoteAddress, "1.2.3.4", "the last x-forwarded-for entry");
  assert.deepEqual(side.request.headers, req.headers, "kept as sent");
  const bare = seen({ path: "/", peer: "10.0.0.1", tls: true }, SIDECAR).request.headers;
  assert.deepEqual(bare, {
    "x-forwarded-proto": "https",
    "x-request-id": "00000000-0000-4000-8000-000000000001",
  });
});

Deno.test("a sidecar's client: the last x-forwarded-for entry only when Envoy parses it", () => {
  const client = (xff: string) =>
    seen({ path: "/", peer: "10.0.0.9", headers: { "x-forwarded-for": xff } }, SIDECAR)
      .remoteAddress;
  assert.deepEqual(
    ["1.2.3.4:5678", ":", "1:2", "2001:DB8:0::1", "::ffff:1.2.3.4", "5.5.5.5, 1.2.3.4 "].map(
      client,
    ),
    ["10.0.0.9", "10.0.0.9", "10.0.0.9", "2001:db8::1", "::ffff:1.2.3.4", "1.2.3.4"],
  );
});

Deno.test("per-client buckets: two spellings of one IPv6 client share its bucket", () => {
  const byAddress = byAddressFilter(1);
  const s = proxy(byAddress);
  const ask = (xff: string) => decide(s, { path: "/", headers: { "x-forwarded-for": xff } }, 0);
  assert.equal(ask("2001:DB8:0::1").status, 200);
  const again = ask("2001:db8::1");
  assert.deepEqual([again.status, again.client], [429, "2001:db8::1"]);
  const gateway = newProxyState(
    proxyConfig([model(byAddress)], "SIDECAR_INBOUND"),
    0,
    version("1.38"),
    true,
  );
  assert.equal(decide(gateway, { path: "/", peer: "2001:DB8::2" }, 0).client, "2001:db8::2");
});
