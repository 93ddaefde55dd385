/**
 * Per-client rules from spec to EnvoyFilter: a wildcard descriptor (an entry without a value) fed
 * by `request_headers` or `remote_address`, `max_dynamic_descriptors` on the route config, a
 * per-client header required for the rule so that requests without it go on; refusals name the
 * field and keep the last good filter; the data-plane model runs the rendered filter per client.
 */
import assert from "node:assert/strict";
import { at } from "../../src/api/json.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { LOCAL_RATELIMIT_FILTER } from "../../src/api/envoy.ts";
import { judgeSpec } from "../../src/reconcile/ratelimit/render.ts";
import { envoyBehaviour, Mesh } from "../../src/dataplane/mod.ts";
import {
  applyPlan,
  bucket,
  input,
  rateLimit,
  reconcileWorld,
  type World,
} from "./ratelimit_fixtures.ts";

type Json = Record<string, unknown>;

function rendered(rl: KubeObject): KubeObject {
  const v = judgeSpec(rl, "demo");
  assert.ok(v.ok, v.ok ? "" : v.problems.join("\n"));
  return v.desired;
}

function routePatch(ef: KubeObject): Json {
  const patches = at(ef, "spec", "configPatches") as { applyTo: string }[];
  return at(patches.find((p) => p.applyTo === "HTTP_ROUTE"), "patch", "value") as Json;
}

const perRoute = (ef: KubeObject) =>
  at(routePatch(ef), "typed_per_filter_config", LOCAL_RATELIMIT_FILTER) as Json;
const actionsOf = (ef: KubeObject) =>
  (at(routePatch(ef), "route", "rate_limits") as { actions: Json[] }[]).map((r) => r.actions);

Deno.test("a header key: request_headers into a wildcard entry; the header is required", () => {
  const ef = rendered(rateLimit({
    maxClients: 7,
    buckets: [{ path: "/api", perClient: { header: "X-Api-Key" }, bucket: bucket(2, 1, "1m") }],
  }));
  const cfg = perRoute(ef);
  assert.equal(cfg.max_dynamic_descriptors, 7);
  const d = (cfg.descriptors as { entries: Json[] }[])[0];
  assert.deepEqual(d.entries.at(-1), { key: "client", value: "" });
  const actions = actionsOf(ef)[0];
  assert.deepEqual(actions.at(-1), {
    request_headers: { header_name: "x-api-key", descriptor_key: "client" },
  });
  assert.deepEqual(at(actions[1], "header_value_match", "headers"), [
    { name: "x-api-key", present_match: true },
  ]);
});

Deno.test("client IP, every request: generic_key names the rule, remote_address the client", () => {
  const ef = rendered(rateLimit({
    buckets: [{ perClient: { clientIP: true }, bucket: bucket(2, 1, "1m") }],
  }));
  assert.deepEqual(actionsOf(ef)[0], [
    { generic_key: { descriptor_key: "rule", descriptor_value: "0" } },
    { remote_address: {} },
  ]);
  const cfg = perRoute(ef);
  assert.equal(cfg.max_dynamic_descriptors, 20);
  assert.deepEqual((cfg.descriptors as { entries: Json[] }[])[0].entries, [
    { key: "rule", value: "0" },
    { key: "remote_address", value: "" },
  ]);
});

Deno.test("no per-client rule: no max_dynamic_descriptors (filters of existing limits unchanged)", () => {
  const ef = rendered(rateLimit({ buckets: [{ path: "/a", bucket: bucket(1, 1, "1m") }] }));
  assert.equal(perRoute(ef).max_dynamic_descriptors, undefined);
});

Deno.test("refusals name the field", () => {
  const problems = (buckets: unknown[], maxClients?: unknown) => {
    const v = judgeSpec(rateLimit({ buckets, maxClients }), "demo");
    assert.ok(!v.ok);
    return v.problems.join("\n");
  };
  const b = bucket(1, 1, "1m");
  assert.match(
    problems([{ perClient: {}, bucket: b }]),
    /spec\.local\.buckets\[0\]\.perClient: perClient needs one key/,
  );
  assert.match(
    problems([{ perClient: { header: "x", clientIP: true }, bucket: b }]),
    /spec\.local\.buckets\[0\]\.perClient gives header and clientIP/,
  );
  assert.match(
    problems([{ perClient: { clientIP: false }, bucket: b }]),
    /perClient\.clientIP is false/,
  );
  assert.match(
    problems([{ perClient: { header: "a b" }, bucket: b }]),
    /perClient\.header "a b" is not an HTTP header name/,
  );
  assert.match(
    problems([{ perClient: { clientIP: true }, bucket: b }], 0),
    /spec\.local\.maxClients/,
  );
  assert.match(
    problems([{ perClient: { clientIP: true }, bucket: b }], 100001),
    /spec\.local\.maxClients/,
  );
  // Every request is the address rule's: a later rule is never used.
  assert.match(
    problems([{ perClient: { clientIP: true }, bucket: b }, { path: "/x", bucket: b }]),
    /buckets\[1\] is never used/,
  );
});

Deno.test("a rule after a per-client header rule is used by requests without the header", () => {
  const rl = rateLimit({
    buckets: [
      { perClient: { header: "X-Api-Key" }, bucket: bucket(1, 1, "1m") },
      { path: "/x", bucket: bucket(1, 1, "1m") },
    ],
  });
  const envoy = envoyBehaviour("1.38");
  assert.ok(envoy.ok);
  const mesh = new Mesh({ envoy: envoy.value });
  const labels = { app: "httpbin" };
  mesh.sync([rendered(rl)], [{ namespace: "demo", name: "p", labels, ready: true }], 0);
  assert.deepEqual(mesh.rejections(), []);
  const send = (headers: Record<string, string>, path = "/x") =>
    mesh.send({ to: { namespace: "demo", labels }, path, headers }, 0);
  assert.deepEqual([send({ "x-api-key": "k1" }).client, send({ "x-api-key": "k1" }).status], [
    "k1",
    429,
  ]);
  assert.equal(send({ "x-api-key": "k2" }).status, 200);
  assert.equal(send({}).bucket, 1);
  assert.equal(send({}, "/y").bucket, "default");
});

Deno.test("a refused per-client edit keeps the last good filter", () => {
  const good = rateLimit({
    buckets: [{ perClient: { header: "X-Api-Key" }, bucket: bucket(1, 1, "1m") }],
  });
  let w: World = { rateLimit: good };
  w = applyPlan(w, reconcileWorld(w, input(good)));
  const before = w.envoyFilter;
  assert.ok(before);
  const bad = rateLimit({
    generation: 2,
    buckets: [{ perClient: { header: "X-Api-Key", clientIP: true }, bucket: bucket(1, 1, "1m") }],
  });
  const next: World = { ...w, rateLimit: { ...bad, status: w.rateLimit.status } };
  const after = applyPlan(next, reconcileWorld(next, input(bad)));
  assert.deepEqual(after.envoyFilter, before);
  const ready = ((after.rateLimit.status as Json).conditions as { type: string; message: string }[])
    .find((c) => c.type === "Ready")!;
  assert.match(ready.message, /spec\.local\.buckets\[0\]\.perClient gives header and clientIP/);
});
