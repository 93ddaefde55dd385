/**
 * spec.global through the reducer: the global filter and its route entries only while the engine
 * is Ready (the safety gate), their fields, their place in the chain and stage, shadow mode and
 * response headers on both parts, global-only RateLimits, the GlobalEnforced condition, and what
 * is read back of a filter in place.
 */
import assert from "node:assert/strict";
import { reconcileRateLimit } from "../../src/reconcile/ratelimit/mod.ts";
import {
  GLOBAL_DEFAULT_RULE,
  globalEntries,
  ruleEntries,
} from "../../src/reconcile/ratelimit/render.ts";
import {
  digestPatch,
  filterLimits,
  limitsPatch,
  ONE_READY_ENGINE,
} from "../../src/reconcile/ratelimit/input.ts";
import {
  GLOBAL_ENGINE_CLUSTER,
  GLOBAL_STAGE,
  RATELIMIT_FILTER,
  RATELIMIT_TYPE,
} from "../../src/api/global_engine.ts";
import { LOCAL_RATELIMIT_FILTER } from "../../src/api/envoy.ts";
import { parseRateLimit } from "../../src/api/ratelimit.ts";
import type { Condition } from "../../src/api/common.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { Plan } from "../../src/reconcile/plan.ts";
import { readEnvoyFilter } from "../../src/dataplane/envoyfilter.ts";
import {
  applyPlan,
  bucket,
  enginePods,
  input,
  rateLimit,
  reconcileWorld,
  type World,
} from "./ratelimit_fixtures.ts";

type Json = Record<string, unknown>;

const GLOBAL = {
  rules: [
    { path: "/orders", limit: { requests: 5, unit: "Second" } },
    { perClient: { header: "X-Api-Key" }, limit: { requests: 1000, unit: "Hour" } },
  ],
  default: { limit: { requests: 10000, unit: "Day" } },
};

/** Engine Pods, none Ready. */
const NOT_READY_ENGINE = enginePods([{ name: "e-1", ready: false }]);

const LOCAL_RULES = [{ path: "/orders", bucket: bucket(2, 2, "1m") }];

function both(more: Parameters<typeof rateLimit>[0] = {}): KubeObject {
  return rateLimit({ buckets: LOCAL_RULES, global: GLOBAL, ...more });
}

function filterOf(plan: Plan): KubeObject {
  const f = plan.apply.find((o) => o.kind === "EnvoyFilter");
  assert.ok(f, "an EnvoyFilter is applied");
  return f;
}

function patches(f: KubeObject): Json[] {
  return (f.spec as { configPatches: Json[] }).configPatches;
}

/** The HTTP filter names a filter inserts, in order. */
function insertedFilters(f: KubeObject): string[] {
  return patches(f).filter((p) => p.applyTo === "HTTP_FILTER").map((p) =>
    (p.patch as { value: { name: string } }).value.name
  );
}

function routeValue(f: KubeObject): Json {
  const route = patches(f).find((p) => p.applyTo === "HTTP_ROUTE")!;
  return (route.patch as { value: Json }).value;
}

function rateLimitsOf(f: KubeObject): Json[] {
  return ((routeValue(f).route as { rate_limits?: Json[] } | undefined)?.rate_limits) ?? [];
}

function globalConfig(f: KubeObject): Json {
  const p = patches(f).find((p) =>
    (p.patch as { value: { name?: string } }).value.name === RATELIMIT_FILTER
  )!;
  return (p.patch as { value: { typed_config: Json } }).value.typed_config;
}

function conditionOf(plan: Plan, type: string): Condition | undefined {
  return (plan.status as { conditions: Condition[] }).conditions.find((c) => c.type === type);
}

Deno.test("the gate: while no engine Pod is Ready, no global filter and no global entry", () => {
  for (const engine of [undefined, NOT_READY_ENGINE]) {
    const plan = reconcileRateLimit(input(both(), engine ? { globalEngine: engine } : {}));
    const f = filterOf(plan);
    assert.deepEqual(insertedFilters(f), [LOCAL_RATELIMIT_FILTER]);
    assert.ok(!JSON.stringify(f).includes(RATELIMIT_FILTER + '"'), "no ratelimit filter");
    assert.ok(!JSON.stringify(f).includes(GLOBAL_ENGINE_CLUSTER));
    assert.ok(rateLimitsOf(f).every((r) => r.stage === undefined));
    // The local part is exactly that of the same RateLimit without spec.global.
    const localOnly = filterOf(reconcileRateLimit(input(rateLimit({ buckets: LOCAL_RULES }))));
    assert.deepEqual(f.spec, localOnly.spec);
    const g = conditionOf(plan, "GlobalEnforced");
    assert.deepEqual(
      [g?.status, g?.reason],
      ["False", engine ? "EngineNotReady" : "EngineNotInstalled"],
    );
    assert.match(g!.message, /the local limits apply meanwhile/);
    assert.equal(conditionOf(plan, "Ready")?.reason, "Applied");
    assert.match(conditionOf(plan, "Ready")!.message, /the global limits wait for the engine/);
  }
});

Deno.test("the engine Ready: the ratelimit filter after local_ratelimit, before the router", () => {
  const plan = reconcileRateLimit(input(both(), { globalEngine: ONE_READY_ENGINE }));
  const f = filterOf(plan);
  assert.deepEqual(insertedFilters(f), [LOCAL_RATELIMIT_FILTER, RATELIMIT_FILTER]);
  // Both are inserted before the router, in this order: the router stays last.
  for (const p of patches(f).filter((p) => p.applyTo === "HTTP_FILTER")) {
    assert.equal((p.patch as Json).operation, "INSERT_BEFORE");
    assert.equal(
      JSON.stringify((p.match as Json).listener),
      JSON.stringify({
        filterChain: {
          filter: {
            name: "envoy.filters.network.http_connection_manager",
            subFilter: { name: "envoy.filters.http.router" },
          },
        },
      }),
    );
  }
  assert.deepEqual(globalConfig(f), {
    "@type": RATELIMIT_TYPE,
    domain: "demo/httpbin",
    stage: GLOBAL_STAGE,
    timeout: "0.1s",
    failure_mode_deny: false,
    rate_limit_service: {
      grpc_service: {
        envoy_grpc: {
          cluster_name: "outbound|8081||ratelimit-engine.platform-ratelimit.svc.cluster.local",
        },
      },
      transport_api_version: "V3",
    },
    enable_x_ratelimit_headers: "OFF",
    disable_x_envoy_ratelimited_header: true,
    rate_limited_as_resource_exhausted: true,
  });
  // The one Ready engine Pod has loaded nothing yet: the push is under way.
  const g = conditionOf(plan, "GlobalEnforced");
  assert.deepEqual([g?.status, g?.reason], ["Unknown", "DomainNotLoaded"]);
  assert.match(g!.message, /has not loaded domain demo\/httpbin as in force/);
  assert.match(conditionOf(plan, "Ready")!.message, /global 2 rules, default 10000 a day/);
});

Deno.test("a global refusal gets a local refusal's body: the connection manager's mapper", () => {
  const f = filterOf(reconcileRateLimit(input(both(), { globalEngine: ONE_READY_ENGINE })));
  const mappers = patches(f).filter((p) => p.applyTo === "NETWORK_FILTER");
  assert.equal(mappers.length, 1);
  assert.deepEqual(mappers[0].patch, {
    operation: "MERGE",
    value: {
      typed_config: {
        "@type":
          "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        local_reply_config: {
          mappers: [{
            filter: { response_flag_filter: { flags: ["RL"] } },
            body: { inline_string: "local_rate_limited" },
          }],
        },
      },
    },
  });
  // Not without the global part: a local refusal has that body already.
  const local = filterOf(reconcileRateLimit(input(both())));
  assert.ok(patches(local).every((p) => p.applyTo !== "NETWORK_FILTER"));
});

Deno.test("route entries: local ones at stage 0 (unset), global ones at GLOBAL_STAGE", () => {
  const f = filterOf(reconcileRateLimit(input(both(), { globalEngine: ONE_READY_ENGINE })));
  const entries = rateLimitsOf(f);
  const spec = parseRateLimit(both());
  assert.ok(spec.ok);
  const local = ruleEntries(spec.value.spec.local!.buckets);
  const global = globalEntries(spec.value.spec.global!);
  assert.deepEqual(entries, [
    ...local.map(({ actions }) => ({ actions })),
    ...global.map(({ actions }) => ({ stage: GLOBAL_STAGE, actions })),
  ]);
  assert.equal(global.length, 3);
  // Global rules are matched as local rules are (one renderer): the same rules give the same
  // actions. The default names itself and excludes every rule.
  assert.deepEqual(global.slice(0, 2), ruleEntries(spec.value.spec.global!.rules!));
  const def = global[2];
  assert.deepEqual(def.entries[0], { key: "rule", value: GLOBAL_DEFAULT_RULE });
  assert.deepEqual(def.entries.slice(1).map((e) => e.key), ["not_rule", "not_rule", "not_rule"]);
  assert.deepEqual(def.entries.slice(1).map((e) => e.value), ["0", "0", "1"]);
  // The local route config's descriptors are the local rules' only.
  const cfg = (routeValue(f).typed_per_filter_config as Json)[LOCAL_RATELIMIT_FILTER] as Json;
  assert.equal((cfg.descriptors as Json[]).length, 1);
});

Deno.test("failureMode Deny sets failure_mode_deny; enableResponseHeaders sets both filters' headers", () => {
  const deny = filterOf(reconcileRateLimit(input(
    rateLimit({ global: { ...GLOBAL, failureMode: "Deny" }, enableResponseHeaders: true }),
    { globalEngine: ONE_READY_ENGINE },
  )));
  assert.equal(globalConfig(deny).failure_mode_deny, true);
  assert.equal(globalConfig(deny).enable_x_ratelimit_headers, "DRAFT_VERSION_03");
  const cfg = (routeValue(deny).typed_per_filter_config as Json)[LOCAL_RATELIMIT_FILTER] as Json;
  assert.equal(cfg.enable_x_ratelimit_headers, "DRAFT_VERSION_03");
  const unavailable = filterOf(reconcileRateLimit(input(
    rateLimit({ global: GLOBAL, grpcStatus: "Unavailable" }),
    { globalEngine: ONE_READY_ENGINE },
  )));
  assert.equal(globalConfig(unavailable).rate_limited_as_resource_exhausted, undefined);
});

Deno.test("shadow mode applies to both parts: neither filter enforces", () => {
  const plan = reconcileRateLimit(
    input(both({ enforce: false }), { globalEngine: ONE_READY_ENGINE }),
  );
  const f = filterOf(plan);
  const cfg = (routeValue(f).typed_per_filter_config as Json)[LOCAL_RATELIMIT_FILTER] as Json;
  assert.deepEqual((cfg.filter_enforced as Json).default_value, {
    numerator: 0,
    denominator: "HUNDRED",
  });
  assert.deepEqual(globalConfig(f).filter_enforced, {
    runtime_key: "global_rate_limit_enforced",
    default_value: { numerator: 0, denominator: "HUNDRED" },
  });
  assert.equal((plan.status as { mode: string }).mode, "Shadow");
  // Enforcing: no filter_enforced on the global filter (Envoy's default enforces).
  const enforcing = filterOf(reconcileRateLimit(input(both(), { globalEngine: ONE_READY_ENGINE })));
  assert.equal(globalConfig(enforcing).filter_enforced, undefined);
  // A global-only RateLimit in shadow mode reads back as Shadow from its global filter.
  const only = reconcileRateLimit(input(
    rateLimit({ local: false, global: GLOBAL, enforce: false }),
    { globalEngine: ONE_READY_ENGINE },
  ));
  assert.equal((only.status as { mode: string }).mode, "Shadow");
});

Deno.test("global limits only: refused while the engine is not Ready, applied once it is", () => {
  const rl = rateLimit({ local: false, global: GLOBAL });
  const waiting = reconcileRateLimit(input(rl));
  assert.deepEqual(waiting.apply, []);
  assert.equal((waiting.status as { state: string }).state, "Error");
  assert.equal(conditionOf(waiting, "Ready")?.reason, "EngineNotInstalled");
  const g = conditionOf(waiting, "GlobalEnforced");
  assert.deepEqual([g?.status, g?.reason], ["False", "EngineNotInstalled"]);
  assert.match(g!.message, /no local limit applies either/);

  const plan = reconcileRateLimit(input(rl, { globalEngine: ONE_READY_ENGINE }));
  const f = filterOf(plan);
  assert.deepEqual(insertedFilters(f), [RATELIMIT_FILTER]);
  assert.equal(routeValue(f).typed_per_filter_config, undefined);
  assert.ok(rateLimitsOf(f).every((r) => r.stage === GLOBAL_STAGE));
  const status = plan.status as { state: string; mode: string; rates: unknown[] };
  assert.equal(status.state, "Ready");
  assert.equal(status.mode, "Enforcing");
  // No local bucket; each global rule's limit for the workload as a whole, no per-Pod rate.
  assert.deepEqual(status.rates, [
    { bucket: "global.0", workload: "5/1s" },
    { bucket: "global.1", workload: "1000/1h" },
    { bucket: "global.default", workload: "10000/1d" },
  ]);
});

Deno.test("the engine going away: the next reconcile removes the global part, keeps the local", () => {
  let world: World = { rateLimit: both() };
  const base = input(both());
  world = applyPlan(world, reconcileWorld(world, { ...base, globalEngine: ONE_READY_ENGINE }));
  assert.deepEqual(insertedFilters(world.envoyFilter!), [LOCAL_RATELIMIT_FILTER, RATELIMIT_FILTER]);
  const plan = reconcileWorld(world, base);
  assert.deepEqual(insertedFilters(filterOf(plan)), [LOCAL_RATELIMIT_FILTER]);
  assert.equal(conditionOf(plan, "GlobalEnforced")?.reason, "EngineNotInstalled");
  // An invalid generation keeps the filter in place, global part included, and says so.
  const invalid = rateLimit({ buckets: [{ bucket: bucket(1, 1, "1s") }], global: GLOBAL });
  const kept = reconcileWorld({ ...world, rateLimit: invalid }, {
    ...base,
    globalEngine: ONE_READY_ENGINE,
  });
  assert.deepEqual(kept.apply, []);
  assert.equal(conditionOf(kept, "GlobalEnforced")?.reason, "DomainNotLoaded");
});

Deno.test("GlobalEnforced is written only for a RateLimit with spec.global, and dropped after", () => {
  let world: World = { rateLimit: both() };
  world = applyPlan(world, reconcileWorld(world, input(both())));
  assert.ok(conditionOf({ ...reconcileWorld(world, input(both())) }, "GlobalEnforced"));
  const without = rateLimit({ buckets: LOCAL_RULES });
  const plan = reconcileWorld({
    ...world,
    rateLimit: { ...without, status: world.rateLimit.status },
  }, input(without));
  assert.equal(conditionOf(plan, "GlobalEnforced"), undefined);
  assert.deepEqual(
    (plan.status as { conditions: Condition[] }).conditions.map((c) => c.type),
    ["Ready", "Enforced", "Accepted"],
  );
});

Deno.test("filterLimits reads the global part back; the cache's patch reads the same", () => {
  for (
    const rl of [both(), both({ enforce: false }), rateLimit({ local: false, global: GLOBAL })]
  ) {
    const f = filterOf(reconcileRateLimit(input(rl, { globalEngine: ONE_READY_ENGINE })));
    const limits = filterLimits(f);
    assert.ok(limits?.global, "global read");
    assert.equal(limits.global.failureMode, "Allow");
    assert.equal(typeof limits.digest, "string", "digest read");
    const { digest, ...rest } = limits;
    const patches = [limitsPatch(rest), digestPatch(digest!)];
    const kept: KubeObject = { ...f, spec: { configPatches: patches } };
    assert.deepEqual(filterLimits(kept), limits);
  }
  const local = filterOf(reconcileRateLimit(input(both())));
  assert.equal(filterLimits(local)?.global, undefined);
});

Deno.test("global rules are validated as local rules are, naming spec.global.rules[i]", () => {
  const plan = reconcileRateLimit(input(rateLimit({
    global: {
      rules: [
        { path: "/a", limit: { requests: 1, unit: "Second" } },
        { path: "/a", headers: { "X-A": "1" }, limit: { requests: 1, unit: "Second" } },
        { headers: { "bad name": "1" }, limit: { requests: 1, unit: "Second" } },
        { perClient: { header: "x", clientIP: true }, limit: { requests: 1, unit: "Second" } },
      ],
    },
  })));
  const message = conditionOf(plan, "Ready")!.message;
  assert.match(
    message,
    /spec\.global\.rules\[1\] is never used: every request it matches is matched first by spec\.global\.rules\[0\]/,
  );
  assert.match(
    message,
    /spec\.global\.rules\[2\]\.headers name "bad name" is not an HTTP header name/,
  );
  assert.match(message, /spec\.global\.rules\[3\]\.perClient gives header and clientIP/);
});

Deno.test("the data-plane model reads the global filter (tests/dataplane/global_test.ts runs it)", () => {
  const f = filterOf(reconcileRateLimit(input(both(), { globalEngine: ONE_READY_ENGINE })));
  const read = readEnvoyFilter(f);
  assert.ok(read.ok, JSON.stringify(read));
  assert.equal(read.value.contexts.SIDECAR_INBOUND?.globalFilters.length, 1);
  const local = readEnvoyFilter(filterOf(reconcileRateLimit(input(both()))));
  assert.ok(local.ok);
  assert.equal(local.value.contexts.SIDECAR_INBOUND?.globalFilters.length, 0);
});
