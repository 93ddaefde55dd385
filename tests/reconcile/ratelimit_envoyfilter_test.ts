/**
 * The generated EnvoyFilter: Istio's schema (@kubernetes-models/istio validate()), Envoy's field
 * names and value formats, the gateway/sidecar choice, ownership, and, read back by the data-plane
 * model, the bucket selection of docs/design.md.
 *
 * Envoy API the expectations come from (envoyproxy/envoy, api/envoy/...):
 * - extensions/filters/http/local_ratelimit/v3/local_rate_limit.proto: LocalRateLimit fields
 *   stat_prefix, token_bucket, filter_enabled, filter_enforced (RuntimeFractionalPercent
 *   {runtime_key, default_value {numerator, denominator: HUNDRED}}), descriptors,
 *   enable_x_ratelimit_headers (extensions/common/ratelimit/v3/ratelimit.proto enum
 *   XRateLimitHeadersRFCVersion: OFF, DRAFT_VERSION_03),
 *   always_consume_default_token_bucket, status (type.v3.HttpStatus {code: TooManyRequests});
 *   type URL type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit.
 * - type/v3/token_bucket.proto: max_tokens, tokens_per_fill, fill_interval as a protobuf-JSON
 *   Duration ("30s", never Go's "1m0s").
 * - config/route/v3/route_components.proto: Route.rate_limits[].actions[], RateLimit.Action
 *   .HeaderValueMatch {descriptor_key, descriptor_value, expect_match, headers}, HeaderMatcher
 *   {name, string_match, invert_match}.
 */
import assert from "node:assert/strict";
import { EnvoyFilter } from "@kubernetes-models/istio/networking.istio.io/v1alpha3/EnvoyFilter";
import { parse } from "yaml";
import { parseRateLimit, type RateLimit } from "../../src/api/ratelimit.ts";
import { Mesh } from "../../src/dataplane/mod.ts";
import { readEnvoyFilter } from "../../src/dataplane/envoyfilter.ts";
import { MANAGED_BY_LABEL, MODULE_LABEL } from "../../src/reconcile/labels.ts";
import { parseSpec, renderEnvoyFilter, renderSpec } from "../../src/reconcile/ratelimit/render.ts";
import { filterLimits } from "../../src/reconcile/ratelimit/input.ts";
import { ROUTE_METADATA_KEY } from "../../src/api/envoy.ts";
import { deepFreeze } from "../../src/api/json.ts";
import { canOverlap } from "../../src/reconcile/ratelimit/render.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { bucket, rateLimit } from "./ratelimit_fixtures.ts";

type Json = Record<string, unknown>;

function parsed(raw: unknown): RateLimit {
  const r = parseRateLimit(raw);
  assert.ok(r.ok, r.ok ? "" : JSON.stringify(r.errors));
  return r.value;
}

const sample = (name: string): RateLimit =>
  parsed(parse(Deno.readTextFileSync(new URL(`../../samples/${name}`, import.meta.url))));

function patches(ef: KubeObject): Json[] {
  return (ef.spec as { configPatches: Json[] }).configPatches;
}

function routeValue(ef: KubeObject): Json {
  return (patches(ef)[1].patch as { value: Json }).value;
}

function perRoute(ef: KubeObject): Json {
  return (routeValue(ef).typed_per_filter_config as Json)[
    "envoy.filters.http.local_ratelimit"
  ] as Json;
}

Deno.test("the EnvoyFilter passes Istio's schema for every sample and for no rules", () => {
  const cases = [
    sample("ratelimit-workload.yaml"),
    sample("ratelimit-gateway.yaml"),
    parsed(rateLimit()),
    parsed(
      rateLimit({ buckets: [{ headers: { "X-A": "1", "x-b": "" }, bucket: bucket(1, 1, "1m") }] }),
    ),
  ];
  for (const rl of cases) {
    const ef = renderEnvoyFilter(rl);
    // Throws with the failing field when the object breaks the schema.
    new EnvoyFilter(ef as ConstructorParameters<typeof EnvoyFilter>[0]).validate();
  }
});

Deno.test("Istio's schema check would catch a broken filter (the check is not vacuous)", () => {
  const ef = renderEnvoyFilter(parsed(rateLimit()));
  patches(ef)[0].applyTo = "HTTP_FLITER";
  assert.throws(() =>
    new EnvoyFilter(ef as ConstructorParameters<typeof EnvoyFilter>[0]).validate()
  );
});

Deno.test("name, namespace, owner, labels and workload selector", () => {
  const rl = sample("ratelimit-workload.yaml");
  rl.metadata.uid = "1234";
  const ef = renderEnvoyFilter(rl);
  assert.equal(ef.apiVersion, "networking.istio.io/v1alpha3");
  assert.equal(ef.kind, "EnvoyFilter");
  assert.equal(ef.metadata.name, "httpbin");
  assert.equal(ef.metadata.namespace, "demo");
  assert.deepEqual(ef.metadata.ownerReferences, [{
    apiVersion: "gateway.platform-project.io/v1alpha1",
    kind: "RateLimit",
    name: "httpbin",
    uid: "1234",
    controller: true,
    blockOwnerDeletion: true,
  }]);
  assert.equal(ef.metadata.labels?.[MANAGED_BY_LABEL], "platform-operator");
  assert.equal(ef.metadata.labels?.[MODULE_LABEL], "ratelimit");
  assert.deepEqual((ef.spec as Json).workloadSelector, { labels: { app: "httpbin" } });
});

Deno.test("context: as given, else GATEWAY for a selector naming a gateway by convention", () => {
  const ctx = (ef: KubeObject) => patches(ef).map((p) => (p.match as Json).context);
  const render = (rl: RateLimit) => ctx(renderEnvoyFilter(rl));
  assert.deepEqual(render(sample("ratelimit-gateway.yaml")), ["GATEWAY", "GATEWAY"]);
  assert.deepEqual(render(sample("ratelimit-workload.yaml")), [
    "SIDECAR_INBOUND",
    "SIDECAR_INBOUND",
  ]);
  const conventional: Record<string, string>[] = [{ istio: "ingressgateway" }, {
    app: "istio-ingressgateway",
  }];
  for (const selectorLabels of conventional) {
    const rl = parsed(rateLimit({ namespace: "istio-system", selectorLabels }));
    assert.deepEqual(render(rl), ["GATEWAY", "GATEWAY"], JSON.stringify(selectorLabels));
  }
  const otherApp = parsed(
    rateLimit({ namespace: "mesh-system", selectorLabels: { app: "other" } }),
  );
  assert.deepEqual(render(otherApp), ["SIDECAR_INBOUND", "SIDECAR_INBOUND"]);
  // Both kinds of proxy selected: each gets the patches of its own context.
  const both = renderEnvoyFilter(otherApp, ["SIDECAR_INBOUND", "GATEWAY"]);
  assert.deepEqual(ctx(both), ["SIDECAR_INBOUND", "SIDECAR_INBOUND", "GATEWAY", "GATEWAY"]);
  assert.deepEqual(patches(both).map((p) => p.applyTo), [
    "HTTP_FILTER",
    "HTTP_ROUTE",
    "HTTP_FILTER",
    "HTTP_ROUTE",
  ]);
});

Deno.test("Envoy field names and value formats of the local_ratelimit config", () => {
  const ef = renderEnvoyFilter(sample("ratelimit-workload.yaml"));
  const [filter, route] = patches(ef);
  assert.equal(filter.applyTo, "HTTP_FILTER");
  assert.deepEqual((filter.match as Json).listener, {
    filterChain: {
      filter: {
        name: "envoy.filters.network.http_connection_manager",
        subFilter: { name: "envoy.filters.http.router" },
      },
    },
  });
  assert.deepEqual(filter.patch, {
    operation: "INSERT_BEFORE",
    value: {
      name: "envoy.filters.http.local_ratelimit",
      typed_config: {
        "@type":
          "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit",
        stat_prefix: "http_local_rate_limiter",
      },
    },
  });
  assert.equal(route.applyTo, "HTTP_ROUTE");
  assert.equal((route.patch as Json).operation, "MERGE");
  const cfg = perRoute(ef);
  assert.equal(
    cfg["@type"],
    "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit",
  );
  assert.deepEqual(cfg.token_bucket, { max_tokens: 10, tokens_per_fill: 10, fill_interval: "30s" });
  const always = { numerator: 100, denominator: "HUNDRED" };
  assert.deepEqual(cfg.filter_enabled, {
    runtime_key: "local_rate_limit_enabled",
    default_value: always,
  });
  assert.deepEqual(cfg.filter_enforced, {
    runtime_key: "local_rate_limit_enforced",
    default_value: always,
  });
  assert.equal(cfg.enable_x_ratelimit_headers, "DRAFT_VERSION_03");
  assert.equal(cfg.always_consume_default_token_bucket, false);
  assert.deepEqual(cfg.status, { code: "TooManyRequests" });
  const descriptors = cfg.descriptors as Array<{ entries: unknown[]; token_bucket: Json }>;
  assert.equal(descriptors.length, 3);
  assert.deepEqual(descriptors.map((d) => d.token_bucket.fill_interval), ["60s", "30s", "120s"]);
  const rateLimits = (routeValue(ef).route as { rate_limits: unknown[] }).rate_limits;
  assert.equal(rateLimits.length, 3, "one rate_limits entry a rule");
  // Every duration is protobuf JSON: digits and an `s`.
  const durations = JSON.stringify(ef).match(/"fill_interval":"[^"]*"/g) ?? [];
  assert.ok(durations.length === 4 && durations.every((d) => /"\d+s"$/.test(d)), String(durations));
});

Deno.test("response headers off gives OFF", () => {
  const cfg = perRoute(renderEnvoyFilter(parsed(rateLimit({ enableResponseHeaders: false }))));
  assert.equal(cfg.enable_x_ratelimit_headers, "OFF");
});

Deno.test("no rules: no rate_limits at all (never an entry with empty actions) and no descriptors", () => {
  const ef = renderEnvoyFilter(parsed(rateLimit()));
  assert.equal(routeValue(ef).route, undefined);
  assert.equal(perRoute(ef).descriptors, undefined);
  assert.doesNotMatch(JSON.stringify(ef), /"actions":\[\]/);
  assert.ok(readEnvoyFilter(ef).ok);
});

Deno.test("each rule's actions produce exactly that rule's descriptor entries, in order", () => {
  const ef = renderEnvoyFilter(sample("ratelimit-workload.yaml"));
  const rateLimits =
    (routeValue(ef).route as { rate_limits: Array<{ actions: Json[] }> }).rate_limits;
  const descriptors = perRoute(ef).descriptors as Array<
    { entries: Array<{ key: string; value: string }> }
  >;
  rateLimits.forEach((r, i) => {
    const keys = r.actions.map((a) => {
      const m = a.header_value_match as { descriptor_key: string; descriptor_value: string };
      return { key: m.descriptor_key, value: m.descriptor_value };
    });
    assert.deepEqual(keys, descriptors[i].entries, `rule ${i}`);
  });
  // Rule 0 has a path and headers; rule 1 (/ip) cannot overlap rule 0 (/headers), so it excludes
  // nothing; rule 2 (headers only) must exclude rules 0 and 1 (two path clauses each).
  assert.deepEqual(descriptors[0].entries.map((e) => e.key), ["rule", "rule_headers"]);
  assert.deepEqual(descriptors[1].entries.map((e) => `${e.key}=${e.value}`), ["rule=1"]);
  assert.deepEqual(descriptors[2].entries.map((e) => `${e.key}=${e.value}`), [
    "rule=2",
    "not_rule=0",
    "not_rule=0",
    "not_rule=1",
    "not_rule=1",
  ]);
});

Deno.test("header names are lower-cased and sorted; values kept exactly", () => {
  const rl = parsed(rateLimit({
    buckets: [{ headers: { "X-Zeta": "A b", "X-Alpha": "True" }, bucket: bucket(1, 1, "30s") }],
  }));
  const actions =
    ((routeValue(renderEnvoyFilter(rl)).route as Json).rate_limits as Array<{ actions: Json[] }>)[0]
      .actions;
  assert.deepEqual((actions[0].header_value_match as Json).headers, [
    { name: "x-alpha", string_match: { exact: "True" } },
    { name: "x-zeta", string_match: { exact: "A b" } },
  ]);
});

/** One pod of httpbin with the generated filter applied at time 0. */
function meshWith(rl: RateLimit, labels: Record<string, string> = rl.spec.selectorLabels): Mesh {
  const mesh = new Mesh();
  const namespace = rl.metadata.namespace ?? "default";
  mesh.sync([renderEnvoyFilter(rl)], [{ namespace, name: "p0", labels, ready: true }], 0);
  assert.deepEqual(mesh.rejections(), []);
  return mesh;
}

Deno.test("docs/design.md's example: the header on another path uses the default bucket", () => {
  const rl = sample("ratelimit-workload.yaml");
  const to = { namespace: "demo", labels: { app: "httpbin" } };
  const mesh = meshWith(rl);
  const send = (path: string, headers: Record<string, string> = {}) =>
    mesh.send({ to, path, headers }, 0);
  assert.equal(send("/headers", { "X-Rate-Limited": "true" }).bucket, 0);
  assert.equal(send("/headers?show_env=1", { "x-rate-limited": "true" }).bucket, 0);
  assert.equal(send("/anything", { "X-Rate-Limited": "true" }).bucket, "default");
  assert.equal(send("/headers").bucket, "default");
  assert.equal(
    send("/headers", { "X-Rate-Limited": "TRUE" }).bucket,
    "default",
    "values are exact",
  );
  assert.equal(
    send("/headers/", { "X-Rate-Limited": "true" }).bucket,
    "default",
    "paths are exact",
  );
  assert.equal(send("/ip").bucket, 1);
  assert.equal(send("/ip?x=1", { "X-Client": "batch" }).bucket, 1, "first match wins");
  assert.equal(send("/status", { "X-Client": "batch" }).bucket, 2);
  assert.equal(send("/headers", { "X-Rate-Limited": "true", "X-Client": "batch" }).bucket, 0);
});

Deno.test("the gateway's filter limits the gateway's pods", () => {
  const rl = sample("ratelimit-gateway.yaml");
  const mesh = meshWith(rl);
  const r = mesh.send({ to: "gateway", path: "/headers" }, 0);
  assert.equal(r.bucket, 0);
  assert.deepEqual(r.headers, {
    "x-ratelimit-limit": "10",
    "x-ratelimit-remaining": "9",
    "x-ratelimit-reset": "0",
  });
});

Deno.test("maxTokens 1: one request admitted, the next in the interval gets the 429", () => {
  const rl = parsed(rateLimit({ defaultBucket: bucket(1, 1, "30s"), enableResponseHeaders: true }));
  const mesh = meshWith(rl);
  const to = { namespace: "demo", labels: { app: "httpbin" } };
  const a = mesh.send({ to, path: "/" }, 0);
  const b = mesh.send({ to, path: "/" }, 29_999);
  const c = mesh.send({ to, path: "/" }, 30_000);
  assert.deepEqual([a.status, b.status, c.status], [200, 429, 200]);
  // Envoy 1.38: the next token is 1 ms away, which Envoy's reset header rounds down to 0 s.
  assert.deepEqual(b.headers, {
    "x-ratelimit-limit": "1",
    "x-ratelimit-remaining": "0",
    "x-ratelimit-reset": "0",
    "content-type": "text/plain",
  });
  assert.equal(b.body, "local_rate_limited");
});

Deno.test("canOverlap: different paths, or one header with different values, never overlap", () => {
  assert.ok(!canOverlap({ path: "/a" }, { path: "/b" }));
  assert.ok(
    !canOverlap({ headers: { "X-A": "1" } }, { headers: { "x-a": "2" } }),
  );
  assert.ok(canOverlap({ path: "/a" }, { headers: { "x-a": "2" } }));
  assert.ok(
    canOverlap({ headers: { "X-A": "1" } }, { headers: { "x-b": "2" } }),
  );
  assert.ok(
    canOverlap({ path: "/a", headers: { "X-A": "1" } }, {
      path: "/a",
      headers: { "x-a": "1" },
    }),
  );
});

Deno.test("the route digest: in the routes' metadata, one for each render of each RateLimit", () => {
  const digestOf = (ef: KubeObject) => {
    const byFilter = (routeValue(ef).metadata as { filter_metadata: Json }).filter_metadata;
    assert.deepEqual(Object.keys(byFilter), [ROUTE_METADATA_KEY]);
    return (byFilter[ROUTE_METADATA_KEY] as { digest: string }).digest;
  };
  const rules = [{ path: "/a", bucket: bucket(5, 1, "1s") }];
  const base = digestOf(renderEnvoyFilter(parsed(rateLimit({ buckets: rules }))));
  assert.match(base, /^[0-9a-f]{14}$/);
  assert.equal(digestOf(renderEnvoyFilter(parsed(rateLimit({ buckets: rules })))), base, "stable");
  // The same buckets, another route config: another digest.
  const others = [
    rateLimit({ buckets: [{ ...rules[0], path: "/b" }] }),
    rateLimit({ buckets: [{ ...rules[0], perClient: { header: "X-User" } }] }),
    rateLimit({ buckets: [{ ...rules[0], headers: { "X-A": "1" } }] }),
    rateLimit({ buckets: rules, enableResponseHeaders: true }),
    // The same route config of another generation, or another RateLimit of the same name.
    rateLimit({ buckets: rules, generation: 2 }),
    rateLimit({ buckets: rules, uid: "uid-other" }),
  ].map((rl) => digestOf(renderEnvoyFilter(parsed(rl))));
  assert.equal(new Set([base, ...others]).size, others.length + 1, "each its own");
  // Each context's route patch carries the same one.
  const both = renderEnvoyFilter(parsed(rateLimit({ buckets: rules })), [
    "SIDECAR_INBOUND",
    "GATEWAY",
  ]);
  const digests = patches(both).filter((p) => p.applyTo === "HTTP_ROUTE").map((p) =>
    JSON.stringify((p.patch as { value: Json }).value.metadata)
  );
  assert.equal(digests.length, 2);
  assert.equal(digests[0], digests[1]);
});

Deno.test("the route digest a frozen RateLimit keeps is its render's, with or without the global part", () => {
  const raw = rateLimit({
    buckets: [{ path: "/a", bucket: bucket(5, 1, "30s") }],
    global: { rules: [{ path: "/a", limit: { requests: 100, unit: "Minute" } }] },
  });
  const digestOf = (spec: unknown, global: boolean) => {
    const p = parseSpec(spec);
    assert.ok(p.ok, p.ok ? "" : p.problems.join("; "));
    const v = renderSpec(p, "demo", undefined, undefined, { global });
    assert.ok(v.ok);
    return filterLimits(v.desired)?.digest;
  };
  const fresh = [digestOf(raw, false), digestOf(raw, true)];
  assert.notEqual(fresh[0], fresh[1], "the global entries are in the route patch");
  const frozen = deepFreeze(structuredClone(raw));
  for (const global of [false, true, true, false, true]) {
    assert.equal(digestOf(frozen, global), fresh[global ? 1 : 0], `global ${global}`);
  }
});
