/**
 * How a route's `rate_limits` become request descriptors, on two points where Envoy's code differs
 * from the obvious reading and its own tests say nothing discriminating:
 *
 * - a `request_headers` action takes the first value of a repeated header
 *   (`RequestHeadersAction::populateDescriptor`, source/common/router/router_ratelimit.cc:
 *   `header_value[0]`, "TODO(envoyproxy/envoy#13454): Potentially populate all header values"),
 *   while header matchers join all values with "," (`HeaderUtility::getAllOfHeaderAsString`);
 * - the local rate limit filter skips an entry with a non-empty `disable_key`, whatever the
 *   runtime says (`Filter::populateDescriptors`,
 *   source/extensions/filters/http/local_ratelimit/local_ratelimit.cc; Envoy's
 *   `DescriptorFilterTest.DisabledInRoute` sets one but checks only that the request passes).
 */
import assert from "node:assert/strict";
import { decide, DEFAULT_ENVOY } from "../../src/dataplane/mod.ts";
import { filter, ON, proxy, tb } from "./filters.ts";

/** A per-route config: 100 tokens by default, 1 for each descriptor, the default not charged. */
function oneTokenEach(descriptors: Array<Array<{ key: string; value: string }>>) {
  return {
    token_bucket: tb(100, 100, "60s"),
    filter_enabled: ON,
    filter_enforced: ON,
    always_consume_default_token_bucket: false,
    descriptors: descriptors.map((entries) => ({ entries, token_bucket: tb(1, 1, "60s") })),
  };
}

/** `X-User` and `x-user`: one header with two values, in this order. */
const TWO_VALUES = { path: "/", headers: { "X-User": "alice", "x-user": "bob" } };

for (const envoy of ["1.30", DEFAULT_ENVOY]) {
  Deno.test(`Envoy ${envoy}: a request_headers action takes the first value of a repeated header`, () => {
    const s = proxy(
      filter(oneTokenEach([[{ key: "user", value: "alice" }]]), [
        { actions: [{ request_headers: { header_name: "x-user", descriptor_key: "user" } }] },
      ]),
      envoy,
    );
    const first = decide(s, TWO_VALUES, 0);
    assert.equal(first.bucket, 0, "user=alice, not user=alice,bob");
    const second = decide(s, TWO_VALUES, 0);
    assert.ok(second.rejected, "alice's one token is gone");
    assert.equal(decide(s, { path: "/", headers: { "x-user": "bob" } }, 0).bucket, "default");
  });

  Deno.test(`Envoy ${envoy}: a header matcher still reads every value of a repeated header, joined`, () => {
    const s = proxy(
      filter(oneTokenEach([[{ key: "header_match", value: "both" }]]), [{
        actions: [{
          header_value_match: {
            descriptor_value: "both",
            headers: [{ name: "x-user", string_match: { exact: "alice,bob" } }],
          },
        }],
      }]),
      envoy,
    );
    assert.equal(decide(s, TWO_VALUES, 0).bucket, 0);
    assert.equal(decide(s, { path: "/", headers: { "x-user": "alice" } }, 0).bucket, "default");
  });

  Deno.test(`Envoy ${envoy}: a rate_limits entry with a disable_key gives no descriptor`, () => {
    const limits = (disableKey: string) => [{
      disable_key: disableKey,
      actions: [{ generic_key: { descriptor_value: "a" } }],
    }];
    const cfg = oneTokenEach([[{ key: "generic_key", value: "a" }]]);
    const off = proxy(filter(cfg, limits("local_rate_limit_off")), envoy);
    const got = [0, 1, 2].map(() => decide(off, { path: "/" }, 0));
    assert.deepEqual(got.map((d) => d.bucket), ["default", "default", "default"]);
    assert.ok(got.every((d) => !d.rejected), "only the default bucket (100 tokens) counts");
    // An empty disable_key is no key: the entry is evaluated.
    const on = proxy(filter(cfg, limits("")), envoy);
    assert.equal(decide(on, { path: "/" }, 0).bucket, 0);
    assert.ok(decide(on, { path: "/" }, 0).rejected);
  });
}
