/**
 * The model's shadow mode and gRPC rejections, as Envoy's local_ratelimit.cc and
 * Http::Utility::sendLocalReply do them: a rejection not enforced goes on with
 * request_headers_to_add_when_not_enforced; an enforced one is 429 text/plain for HTTP and a
 * trailers-only HTTP 200 with grpc-status 8 (rate_limited_as_resource_exhausted) or 14 for gRPC.
 */
import assert from "node:assert/strict";
import { decide } from "../../src/dataplane/proxy.ts";
import { isGrpcRequest } from "../../src/dataplane/local_reply.ts";
import { errorsOf, filter, ON, proxy, tb } from "./filters.ts";

const OFF = { default_value: { numerator: 0, denominator: "HUNDRED" } };
const grpc = { "content-type": "application/grpc" };

Deno.test("shadow: every request admitted; over the limit the upstream sees the header", () => {
  const p = proxy(filter({
    token_bucket: tb(1, 1, "60s"),
    filter_enabled: ON,
    filter_enforced: OFF,
    request_headers_to_add_when_not_enforced: [{
      header: { key: "x-ratelimit-would-reject", value: "true" },
      append_action: "OVERWRITE_IF_EXISTS_OR_ADD",
    }],
  }));
  const first = decide(p, { path: "/" }, 0);
  assert.equal(first.status, 200);
  assert.equal(first.wouldReject, undefined);
  assert.equal(first.upstreamHeaders, undefined);
  const second = decide(p, { path: "/", headers: { "X-RateLimit-Would-Reject": "forged" } }, 1);
  assert.equal(second.status, 200);
  assert.equal(second.rejected, undefined);
  assert.equal(second.wouldReject, true);
  // Overwritten, not appended to what the client sent.
  assert.deepEqual(second.upstreamHeaders, { "x-ratelimit-would-reject": "true" });
  // Counting goes on: a shadow rejection takes no token, so the bucket refills as usual.
  assert.equal(decide(p, { path: "/" }, 60_001).wouldReject, undefined);
});

Deno.test("append_action: the proto's default appends to the client's value", () => {
  const p = proxy(filter({
    token_bucket: tb(1, 1, "60s"),
    filter_enabled: ON,
    request_headers_to_add_when_not_enforced: [{ header: { key: "x-shadow", value: "1" } }],
  }));
  decide(p, { path: "/" }, 0);
  const d = decide(p, { path: "/", headers: { "x-shadow": "0" } }, 1);
  assert.deepEqual(d.upstreamHeaders, { "x-shadow": "0,1" });
});

Deno.test("gRPC: RESOURCE_EXHAUSTED with the flag, UNAVAILABLE (429 mapped) without", () => {
  for (const [flag, code] of [[true, "8"], [false, "14"]] as const) {
    const p = proxy(filter({
      token_bucket: tb(1, 1, "60s"),
      filter_enabled: ON,
      filter_enforced: ON,
      status: { code: "TooManyRequests" },
      ...(flag ? { rate_limited_as_resource_exhausted: true } : {}),
    }));
    assert.equal(decide(p, { path: "/svc/M", headers: grpc }, 0).status, 200);
    const d = decide(p, { path: "/svc/M", headers: grpc }, 1);
    assert.equal(d.status, 200);
    assert.equal(d.rejected, true);
    assert.equal(d.body, "");
    assert.equal(d.headers["content-type"], "application/grpc");
    assert.equal(d.headers["grpc-status"], code);
    assert.equal(d.headers["grpc-message"], "local_rate_limited");
    // An HTTP request on the same proxy keeps 429 local_rate_limited.
    const http = decide(p, { path: "/get" }, 2);
    assert.deepEqual([http.status, http.body, http.headers["grpc-status"]], [
      429,
      "local_rate_limited",
      undefined,
    ]);
  }
});

Deno.test("what counts as gRPC: application/grpc and application/grpc+proto, not grpc-web", () => {
  const is = (type: string) => isGrpcRequest({ path: "/", headers: { "Content-Type": type } });
  assert.equal(is("application/grpc"), true);
  assert.equal(is("application/grpc+proto"), true);
  assert.equal(is("application/grpc-web"), false);
  assert.equal(is("application/json"), false);
  assert.equal(isGrpcRequest({ path: "/" }), false);
});

Deno.test("a misspelt or out-of-range shadow field is refused as Envoy would", () => {
  const bad = errorsOf(filter({
    token_bucket: tb(1, 1, "60s"),
    request_headers_to_add_when_not_enforced: [{
      header: { key: "x", value: "1" },
      append_action: "APPEND",
    }],
  }));
  assert.match(bad, /request_headers_to_add_when_not_enforced/);
});
