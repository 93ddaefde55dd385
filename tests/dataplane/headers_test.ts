/**
 * x-ratelimit headers as each Envoy version sends them, on hand-written filters: which bucket they
 * describe, and x-ratelimit-reset (1.30: to the next fill; 1.31 to 1.34: none; 1.35+: to the next
 * whole token).
 */
import assert from "node:assert/strict";
import { decide } from "../../src/dataplane/mod.ts";
import { filter, ON, proxy, tb } from "./filters.ts";

Deno.test("filter_enforced 0%: limited requests pass, tokens are still counted, headers still sent", () => {
  const headersAt = (envoy: string) => {
    const s = proxy(
      filter({
        token_bucket: tb(1, 1, "60s"),
        filter_enabled: ON,
        enable_x_ratelimit_headers: "DRAFT_VERSION_03",
      }),
      envoy,
    );
    decide(s, { path: "/" }, 0);
    const r = decide(s, { path: "/" }, 0);
    assert.equal(r.status, 200);
    return r.headers;
  };
  const empty = { "x-ratelimit-limit": "1", "x-ratelimit-remaining": "0" };
  // 1.38: a whole token takes 60 s; 1.30: the next fill is 60 s away; 1.31 to 1.34 send no reset.
  assert.deepEqual(headersAt("1.38"), { ...empty, "x-ratelimit-reset": "60" });
  assert.deepEqual(headersAt("1.30"), { ...empty, "x-ratelimit-reset": "60" });
  assert.deepEqual(headersAt("1.33"), empty);
});

Deno.test("Envoy 1.30's headers describe the first request descriptor found, not the deciding bucket", () => {
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
  const limits = [
    { actions: [{ generic_key: { descriptor_value: "a" } }] },
    { actions: [{ generic_key: { descriptor_value: "b" } }] },
  ];
  // `descriptorHelper` (v1.30.0): the first request descriptor (rate_limits order) in the config.
  const old = proxy(filter(cfg, limits), "1.30");
  const r = decide(old, { path: "/" }, 0);
  assert.equal(r.bucket, 1, "b, the lower rate, still decides");
  assert.deepEqual(r.headers, {
    "x-ratelimit-limit": "5",
    "x-ratelimit-remaining": "4",
    "x-ratelimit-reset": "1",
  });
  const now = decide(proxy(filter(cfg, limits), "1.38"), { path: "/" }, 0);
  assert.deepEqual(now.headers, {
    "x-ratelimit-limit": "1",
    "x-ratelimit-remaining": "0",
    "x-ratelimit-reset": "60",
  });
});
