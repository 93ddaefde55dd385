/**
 * The proxy model on hand-written EnvoyFilters: it interprets Envoy's config (not this operator's
 * intent), so Envoy's own behaviours show: the default bucket charged too when
 * always_consume_default_token_bucket is left at true, Kyma's merged action list that never matches
 * a path-only bucket, and the configs Envoy rejects.
 */
import assert from "node:assert/strict";
import { decide, newProxyState, proxyConfig, readEnvoyFilter } from "../../src/dataplane/mod.ts";
import {
  errorsOf,
  filter,
  type Json,
  model,
  ON,
  pathAction,
  proxy,
  tb,
  TYPE,
  version,
} from "./filters.ts";

Deno.test("always_consume_default_token_bucket left at its default (true) charges both buckets", () => {
  const cfg = {
    token_bucket: tb(2, 2, "60s"),
    filter_enabled: ON,
    filter_enforced: ON,
    descriptors: [{ entries: [{ key: "path", value: "/a" }], token_bucket: tb(5, 5, "60s") }],
  };
  const s = proxy(filter(cfg, [{ actions: [pathAction] }]));
  const statuses = [0, 1, 2].map(() => decide(s, { path: "/a" }, 0).status);
  assert.deepEqual(statuses, [200, 200, 429], "the default bucket (2) runs out first");
  const off = proxy(
    filter({ ...cfg, always_consume_default_token_bucket: false }, [{ actions: [pathAction] }]),
  );
  assert.deepEqual([0, 1, 2].map(() => decide(off, { path: "/a" }, 0).status), [200, 200, 200]);
});

Deno.test("Kyma's merged action list never matches a path-only bucket when another uses a header", () => {
  const cfg = {
    token_bucket: tb(100, 100, "60s"),
    filter_enabled: ON,
    filter_enforced: ON,
    always_consume_default_token_bucket: false,
    descriptors: [
      { entries: [{ key: "path", value: "/a" }], token_bucket: tb(1, 1, "60s") },
      { entries: [{ key: "x-user", value: "u" }], token_bucket: tb(1, 1, "60s") },
    ],
  };
  const merged = [{
    actions: [pathAction, { request_headers: { header_name: "x-user", descriptor_key: "x-user" } }],
  }];
  const s = proxy(filter(cfg, merged));
  const r = decide(s, { path: "/a" }, 0);
  assert.equal(r.bucket, "default", "x-user is absent, so no descriptor at all");
  const both = decide(s, { path: "/a", headers: { "x-user": "u" } }, 0);
  assert.equal(both.bucket, "default", "two entries never equal a one-entry descriptor");
});

Deno.test("filter_enabled left out (0%): nothing is limited", () => {
  const s = proxy(filter({ token_bucket: tb(1, 1, "60s"), filter_enforced: ON }));
  assert.deepEqual([0, 1].map(() => decide(s, { path: "/" }, 0).status), [200, 200]);
});

Deno.test("matched descriptors are charged lowest fill rate first; the rejecting one reports", () => {
  const cfg = {
    token_bucket: tb(9, 9, "1s"),
    filter_enabled: ON,
    filter_enforced: ON,
    always_consume_default_token_bucket: false,
    enable_x_ratelimit_headers: "DRAFT_VERSION_03",
    descriptors: [
      { entries: [{ key: "generic_key", value: "a" }], token_bucket: tb(5, 5, "1s") },
      { entries: [{ key: "generic_key", value: "b" }], token_bucket: tb(1, 1, "60s") },
    ],
  };
  const s = proxy(filter(cfg, [
    { actions: [{ generic_key: { descriptor_value: "a" } }] },
    { actions: [{ generic_key: { descriptor_value: "b" } }] },
  ]));
  const first = decide(s, { path: "/" }, 0);
  assert.equal(first.bucket, 1, "b has the lower fill rate");
  assert.equal(first.headers["x-ratelimit-limit"], "1");
  const second = decide(s, { path: "/" }, 0);
  assert.deepEqual([second.status, second.bucket], [429, 1]);
  assert.equal(second.body, "local_rate_limited");
  assert.equal(second.headers["content-type"], "text/plain");
});

Deno.test("header matchers: missing headers never match, inverted or not; present_match can", () => {
  const cfg = {
    token_bucket: tb(9, 9, "1s"),
    filter_enabled: ON,
    filter_enforced: ON,
    always_consume_default_token_bucket: false,
    descriptors: [{ entries: [{ key: "k", value: "v" }], token_bucket: tb(9, 9, "1s") }],
  };
  const withMatcher = (m: Json, expectMatch = true) =>
    proxy(filter(cfg, [{
      actions: [{
        header_value_match: {
          descriptor_key: "k",
          descriptor_value: "v",
          expect_match: expectMatch,
          headers: [m],
        },
      }],
    }]));
  const bucketFor = (m: Json, headers: Record<string, string>, expect = true) =>
    decide(withMatcher(m, expect), { path: "/p?q", headers }, 0).bucket;
  const exact = { name: "X-A", string_match: { exact: "1" } };
  assert.equal(bucketFor(exact, { "x-a": "1" }), 0, "names are case-insensitive");
  assert.equal(bucketFor(exact, {}), "default");
  assert.equal(
    bucketFor({ ...exact, invert_match: true }, {}),
    "default",
    "absent: no match even inverted",
  );
  assert.equal(bucketFor({ ...exact, invert_match: true }, { "x-a": "2" }), 0);
  assert.equal(bucketFor(exact, {}, false), 0, "expect_match false: absent header does not match");
  assert.equal(bucketFor({ name: "x-a", present_match: true, invert_match: true }, {}), 0);
  assert.equal(
    bucketFor({ name: ":path", string_match: { prefix: "/p?" } }, {}),
    0,
    ":path holds the query",
  );
  assert.equal(bucketFor({ name: ":path", exact_match: "/p" }, {}), "default");
  assert.equal(
    bucketFor({ name: ":path", safe_regex_match: { regex: "/p" } }, {}),
    "default",
    "RE2 full match",
  );
  assert.equal(
    bucketFor({ name: ":path", string_match: { safe_regex: { regex: "/p\\?.*" } } }, {}),
    0,
  );
});

Deno.test("TypedStruct-wrapped configs (Kyma's form) are read too", () => {
  const obj = filter({});
  const route = ((obj.spec as Json).configPatches as Json[])[1];
  const value = (route.patch as Json).value as Json;
  value.typed_per_filter_config = {
    "envoy.filters.http.local_ratelimit": {
      "@type": "type.googleapis.com/udpa.type.v1.TypedStruct",
      type_url: TYPE,
      value: {
        stat_prefix: "r",
        token_bucket: tb(1, 1, "30.000000s"),
        filter_enabled: ON,
        filter_enforced: ON,
      },
    },
  };
  const s = proxy(obj);
  assert.deepEqual([0, 1].map(() => decide(s, { path: "/" }, 0).status), [200, 429]);
});

Deno.test("configs Envoy rejects are rejected, with the field named", () => {
  const base = { token_bucket: tb(1, 1, "30s"), filter_enabled: ON, filter_enforced: ON };
  assert.match(errorsOf(filter(base, [{ actions: [] }])), /rate_limits\[0\]\.actions/);
  assert.match(
    errorsOf(filter({ filter_enabled: ON })),
    /token bucket must be set for per filter configs/,
  );
  assert.match(errorsOf(filter({ ...base, token_bucket: tb(1, 1, "0.010s") })), />= 50ms/);
  assert.match(errorsOf(filter({ ...base, token_bucket: tb(0, 1, "1s") })), /max_tokens/);
  assert.match(errorsOf(filter({ ...base, token_bucket: tb(1, 1, "1m") })), /protobuf Duration/);
  assert.match(errorsOf(filter({ ...base, fill_interval_typo: "1s" })), /unknown field/);
  const d = { entries: [{ key: "k", value: "v" }], token_bucket: tb(1, 1, "45s") };
  // Envoy up to 1.33 refills descriptors on the default timer's ticks; 1.34 dropped the check.
  assert.match(
    errorsOf(filter({ ...base, descriptors: [d] }), "1.33"),
    /not a multiple of token bucket fill timer/,
  );
  assert.ok(readEnvoyFilter(filter({ ...base, descriptors: [d] }), version("1.34")).ok);
  const d2 = { ...d, token_bucket: tb(1, 1, "60s") };
  assert.match(errorsOf(filter({ ...base, descriptors: [d2, d2] })), /duplicate descriptor/);
  assert.match(errorsOf(filter(base, undefined, "ADD")), /must be the last filter/);
  assert.match(
    errorsOf(filter({ ...base, filter_enabled: { default_value: { numerator: 50 } } })),
    /not modelled/,
  );
});

Deno.test("a filter that does not touch the local rate limit is ignored, not rejected", () => {
  const other = {
    apiVersion: "networking.istio.io/v1alpha3",
    kind: "EnvoyFilter",
    metadata: { name: "lua", namespace: "demo" },
    spec: {
      configPatches: [{
        applyTo: "HTTP_FILTER",
        patch: { operation: "INSERT_FIRST", value: { name: "envoy.filters.http.lua" } },
      }],
    },
  };
  const m = model(other);
  assert.deepEqual(m.contexts, {});
  const s = newProxyState(proxyConfig([m], "SIDECAR_INBOUND"), 0);
  assert.equal(decide(s, { path: "/" }, 0).status, 200);
});

Deno.test("a per-route config without the filter in the chain limits nothing", () => {
  const obj = filter({ token_bucket: tb(1, 1, "30s"), filter_enabled: ON, filter_enforced: ON });
  ((obj.spec as Json).configPatches as Json[]).shift();
  const s = proxy(obj);
  assert.deepEqual([0, 1].map(() => decide(s, { path: "/" }, 0).status), [200, 200]);
});

Deno.test("two filters on one proxy: both filter instances charge the shared route buckets", () => {
  const cfg = { token_bucket: tb(4, 4, "30s"), filter_enabled: ON, filter_enforced: ON };
  const a = model(filter(cfg));
  const s = newProxyState(proxyConfig([a, a], "SIDECAR_INBOUND"), 0);
  assert.deepEqual([0, 1, 2].map(() => decide(s, { path: "/" }, 0).status), [200, 200, 429]);
});

Deno.test("a rejected HEAD request gets the 429's headers and no body (sendLocalReply's is_head_request_)", () => {
  const cfg = { token_bucket: tb(1, 1, "60s"), filter_enabled: ON, filter_enforced: ON };
  const s = proxy(filter(cfg, []));
  assert.equal(decide(s, { path: "/a", method: "HEAD" }, 0).status, 200);
  const head = decide(s, { path: "/a", method: "HEAD" }, 0);
  assert.deepEqual([head.status, head.body, head.headers["content-type"]], [429, "", "text/plain"]);
  const get = decide(s, { path: "/a" }, 0);
  assert.deepEqual([get.status, get.body], [429, "local_rate_limited"]);
  const grpc = { "content-type": "application/grpc" };
  const call = decide(s, { path: "/a", method: "HEAD", headers: grpc }, 0);
  assert.equal(call.headers["grpc-message"], undefined, "no grpc-message for HEAD");
  assert.equal(
    decide(s, { path: "/a", headers: grpc }, 0).headers["grpc-message"],
    "local_rate_limited",
  );
});
