/**
 * Shadow mode (spec.enforce: false) and the gRPC status of a rejection, from spec to EnvoyFilter
 * and status: the filter counts every request and enforces none, the status says Shadow, moving
 * to enforcing is an edit of one field, and a bad value is refused naming the field while the
 * last good filter stays.
 */
import assert from "node:assert/strict";
import { at } from "../../src/api/json.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { LOCAL_RATELIMIT_FILTER, SHADOW_HEADER } from "../../src/api/envoy.ts";
import { renderedGeneration } from "../../src/reconcile/ratelimit/render.ts";
import { applyPlan, input, rateLimit, reconcileWorld, type World } from "./ratelimit_fixtures.ts";

/** The per-route LocalRateLimit config of a rendered filter. */
function routeConfig(ef: KubeObject | undefined): Record<string, unknown> {
  const patches = at(ef, "spec", "configPatches") as { applyTo: string }[];
  const route = patches.find((p) => p.applyTo === "HTTP_ROUTE");
  return at(route, "patch", "value", "typed_per_filter_config", LOCAL_RATELIMIT_FILTER) as Record<
    string,
    unknown
  >;
}

const statusOf = (w: World) => w.rateLimit.status as Record<string, unknown>;
const ready = (w: World) =>
  (statusOf(w).conditions as { type: string; reason: string; message: string }[])
    .find((c) => c.type === "Ready")!;

function reconciled(rl: KubeObject, prev?: World): World {
  const world: World = { rateLimit: rl, envoyFilter: prev?.envoyFilter };
  if (prev?.rateLimit.status) world.rateLimit = { ...rl, status: prev.rateLimit.status };
  return applyPlan(world, reconcileWorld(world, input(rl)));
}

Deno.test("enforce: false renders filter_enforced 0% with the would-reject request header", () => {
  const w = reconciled(rateLimit({ enforce: false }));
  const cfg = routeConfig(w.envoyFilter);
  assert.deepEqual(at(cfg, "filter_enabled", "default_value"), {
    numerator: 100,
    denominator: "HUNDRED",
  });
  assert.deepEqual(at(cfg, "filter_enforced", "default_value"), {
    numerator: 0,
    denominator: "HUNDRED",
  });
  assert.deepEqual(cfg.request_headers_to_add_when_not_enforced, [{
    header: { key: SHADOW_HEADER, value: "true" },
    append_action: "OVERWRITE_IF_EXISTS_OR_ADD",
  }]);
  assert.equal(statusOf(w).mode, "Shadow");
  assert.equal(ready(w).reason, "Applied");
  assert.match(ready(w).message, /in shadow mode \(counts, rejects nothing\)/);
});

Deno.test("enforce defaults to true, Kyma's meaning: enforced 100%, no shadow header", () => {
  const w = reconciled(rateLimit());
  const cfg = routeConfig(w.envoyFilter);
  assert.equal(at(cfg, "filter_enforced", "default_value", "numerator"), 100);
  assert.equal(cfg.request_headers_to_add_when_not_enforced, undefined);
  assert.equal(statusOf(w).mode, "Enforcing");
  assert.doesNotMatch(ready(w).message, /shadow/);
  // The same filter as `enforce: true` written out.
  const explicit = reconciled(rateLimit({ enforce: true }));
  assert.deepEqual(explicit.envoyFilter, w.envoyFilter);
});

Deno.test("shadow to enforced is an edit of one field; the filter follows", () => {
  const shadow = reconciled(rateLimit({ enforce: false, generation: 1 }));
  const enforced = reconciled(rateLimit({ enforce: true, generation: 2 }), shadow);
  assert.equal(renderedGeneration(enforced.envoyFilter!), 2);
  assert.equal(
    at(routeConfig(enforced.envoyFilter), "filter_enforced", "default_value", "numerator"),
    100,
  );
  assert.equal(statusOf(enforced).mode, "Enforcing");
  // Buckets untouched: only the enforcement and the header differ.
  const a = routeConfig(shadow.envoyFilter);
  const b = routeConfig(enforced.envoyFilter);
  assert.deepEqual(a.token_bucket, b.token_bucket);
  assert.deepEqual(a.descriptors, b.descriptors);
});

for (
  const [field, value, says] of [
    ["enforce", "false", /^Invalid spec, generation 2 rejected: spec\.enforce: /],
    ["grpcStatus", "Internal", /^Invalid spec, generation 2 rejected: spec\.grpcStatus: /],
  ] as const
) {
  Deno.test(`a bad spec.${field} is refused naming it; the shadow limit in force stays`, () => {
    const shadow = reconciled(rateLimit({ enforce: false, generation: 1 }));
    const bad = reconciled(rateLimit({ [field]: value, generation: 2 }), shadow);
    assert.equal(statusOf(bad).state, "Error");
    assert.equal(ready(bad).reason, "InvalidSpec");
    assert.match(ready(bad).message, says);
    assert.match(ready(bad).message, /generation 1 still enforced/);
    assert.deepEqual(bad.envoyFilter, shadow.envoyFilter);
    // The status describes the limit in force, not the refused spec.
    assert.equal(statusOf(bad).mode, "Shadow");
    assert.equal(statusOf(bad).enforcedGeneration, 1);
  });
}

Deno.test("gRPC rejections are RESOURCE_EXHAUSTED unless grpcStatus says Unavailable", () => {
  const def = routeConfig(reconciled(rateLimit()).envoyFilter);
  assert.equal(def.rate_limited_as_resource_exhausted, true);
  assert.deepEqual(def.status, { code: "TooManyRequests" });
  const unavailable = routeConfig(
    reconciled(rateLimit({ grpcStatus: "Unavailable" })).envoyFilter,
  );
  assert.equal(unavailable.rate_limited_as_resource_exhausted, undefined);
  assert.deepEqual(unavailable.status, { code: "TooManyRequests" });
});
