/**
 * GlobalEnforced read back from the engine (issue #43 point 4): every row of GLOBAL_ENFORCED_ROWS
 * reached from what the engine's Pods say (src/api/engine_status.ts, as the operator's poller
 * publishes it), never from an assumption: True only when every Ready engine Pod holds exactly the
 * lines the filter in place carries for its domain (engine_config.ts `rlconfigLines` of its
 * annotation) and reaches Redis. Each message names the Pods and what applies meanwhile (the
 * failure mode when calls fail; admitted uncounted when a domain is not held). The local part is
 * never dropped for the global part's sake; the global part is rendered once a Pod is Ready, stays
 * while the engine is installed, and goes when it is gone. status.rates gives each global rule's
 * limit for the workload beside the local per-Pod rates.
 */
import assert from "node:assert/strict";
import { DOMAIN_LOAD_BOUND_MS, GLOBAL_ENFORCED_ROWS } from "../../src/reconcile/ratelimit/mod.ts";
import type { EngineObservation } from "../../src/reconcile/ratelimit/input.ts";
import {
  engineDomainOfFilter,
  rlconfigLines,
} from "../../src/reconcile/ratelimit/engine_config.ts";
import { LOCAL_RATELIMIT_FILTER } from "../../src/api/envoy.ts";
import { ENGINE_DOMAIN_ANNOTATION, RATELIMIT_FILTER } from "../../src/api/global_engine.ts";
import { parseRlconfig } from "../../src/api/engine_status.ts";
import { kubeTime } from "../../src/api/time.ts";
import type { Condition } from "../../src/api/common.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { Plan } from "../../src/reconcile/plan.ts";
import {
  applyPlan,
  bucket,
  enginePods,
  input,
  rateLimit,
  reconcileWorld,
  type World,
} from "./ratelimit_fixtures.ts";

const GLOBAL = {
  rules: [
    { path: "/orders", limit: { requests: 5, unit: "Second" } },
    { perClient: { header: "X-Api-Key" }, limit: { requests: 1000, unit: "Hour" } },
  ],
  default: { limit: { requests: 10000, unit: "Day" } },
};
const DOMAIN = "demo/httpbin";

function both(more: Parameters<typeof rateLimit>[0] = {}): KubeObject {
  return rateLimit({
    buckets: [{ path: "/orders", bucket: bucket(2, 2, "1m") }],
    global: GLOBAL,
    ...more,
  });
}

function conditionOf(plan: Plan, type = "GlobalEnforced"): Condition | undefined {
  return (plan.status as { conditions: Condition[] }).conditions.find((c) => c.type === type);
}

function filterOf(plan: Plan): KubeObject | undefined {
  return plan.apply.find((o) => o.kind === "EnvoyFilter");
}

/** The HTTP filters an EnvoyFilter inserts. */
function inserted(f: KubeObject | undefined): string[] {
  const patches = (f?.spec as { configPatches?: Record<string, unknown>[] } | undefined)
    ?.configPatches ?? [];
  return patches.filter((p) => p.applyTo === "HTTP_FILTER").map((p) =>
    (p.patch as { value: { name: string } }).value.name
  );
}

/** The lines an engine holding `filter`'s domain as it carries it prints. */
function linesOf(filter: KubeObject): string[] {
  const config = engineDomainOfFilter(filter);
  assert.ok(config, "the filter carries its domain");
  return rlconfigLines(config);
}

const NOW = 1_700_000_000_000;

/** A world whose filter (global part included) is in place, and the lines its domain prints. */
function inPlace(rl = both()): { world: World; lines: string[] } {
  const engine = enginePods([{ name: "e-1" }]);
  const world = applyPlan(
    { rateLimit: rl },
    reconcileWorld(
      { rateLimit: rl },
      input(rl, {
        globalEngine: engine,
        now: NOW,
      }),
    ),
  );
  assert.deepEqual(inserted(world.envoyFilter), [LOCAL_RATELIMIT_FILTER, RATELIMIT_FILTER]);
  return { world, lines: linesOf(world.envoyFilter!) };
}

/** Reconciles `world` with `engine`, at `now`. */
function at(world: World, engine: EngineObservation | undefined, now = NOW): Plan {
  return reconcileWorld(
    world,
    input(world.rateLimit, {
      ...(engine ? { globalEngine: engine } : {}),
      now,
    }),
  );
}

/** Every case keeps the local part in place and Ready Applied: the global part never drops it. */
function localKept(plan: Plan, world?: World): void {
  const f = filterOf(plan) ?? world?.envoyFilter;
  assert.ok(inserted(f).includes(LOCAL_RATELIMIT_FILTER), "the local filter stays");
}

Deno.test("Enforced: every Ready Pod holds exactly the domain in force and reaches Redis", () => {
  const { world, lines } = inPlace();
  // What the real engine prints for this domain reads back to the same lines (the parser).
  const dump = [...lines].reverse().join("\n") + "\n";
  const parsed = parseRlconfig(dump);
  assert.ok(parsed.ok);
  assert.deepEqual(parsed.domains[DOMAIN], lines);
  const engine = enginePods([
    { name: "e-1", loaded: { [DOMAIN]: lines, "other/x": ["x"] } },
    { name: "e-2", loaded: { [DOMAIN]: lines } },
    { name: "e-3", ready: false, redis: "Unreachable" },
  ]);
  const plan = at(world, engine);
  const g = conditionOf(plan)!;
  assert.deepEqual([g.status, g.reason], ["True", "Enforced"]);
  assert.equal(
    g.message,
    "Enforced: every Ready rate limit engine Pod holds domain demo/httpbin as in force and reaches Redis (when the engine does not answer: failure mode Allow: requests are admitted without the global limits)",
  );
  assert.equal(plan.requeueAfterMs, undefined);
  localKept(plan);
  // The global rules' limits for the workload, beside the local rates per Pod.
  assert.deepEqual((plan.status as { rates: unknown[] }).rates, [
    { bucket: "default", perPod: "10/30s", workload: "0/30s" },
    { bucket: "0", perPod: "2/1m", workload: "0/1m" },
    { bucket: "global.0", workload: "5/1s" },
    { bucket: "global.1", workload: "1000/1h" },
    { bucket: "global.default", workload: "10000/1d" },
  ]);
  // The same words with one Pod: a Pod coming or going writes nothing while all is enforced.
  const one = at(world, enginePods([{ name: "e-1", loaded: { [DOMAIN]: lines } }]));
  assert.equal(conditionOf(one)!.message, g.message);
});

Deno.test("EngineNotInstalled: no engine run, or no Pod: the global part is left out, the local stays", () => {
  const rl = both();
  for (
    const [engine, says] of [
      [
        undefined,
        /^The operator does not run the rate limit engine \(--global-redis-secret\), so the global limits are not sent/,
      ],
      [
        enginePods([]),
        /^The rate limit engine has no Pod in namespace platform-ratelimit, so the global limits are not sent to the proxies and nothing counts them; the local limits apply meanwhile$/,
      ],
    ] as const
  ) {
    const plan = at({ rateLimit: rl }, engine);
    const g = conditionOf(plan)!;
    assert.deepEqual([g.status, g.reason], ["False", "EngineNotInstalled"]);
    assert.match(g.message, says);
    assert.deepEqual(inserted(filterOf(plan)), [LOCAL_RATELIMIT_FILTER]);
    assert.equal(conditionOf(plan, "Ready")?.reason, "Applied");
  }
  // In place, the engine's Pods all gone: the global part is withdrawn, the local kept.
  const { world } = inPlace();
  const gone = at(world, enginePods([]));
  assert.deepEqual(inserted(filterOf(gone)), [LOCAL_RATELIMIT_FILTER]);
  assert.equal(conditionOf(gone)?.reason, "EngineNotInstalled");
  // A global-only RateLimit: nothing to apply, Ready False with the same reason, saying why.
  const only = at({ rateLimit: rateLimit({ local: false, global: GLOBAL }) }, enginePods([]));
  assert.deepEqual(only.apply, []);
  assert.match(
    conditionOf(only, "Ready")!.message,
    /^spec\.global: the rate limit engine has no Pod in namespace platform-ratelimit, and without spec\.local/,
  );
  assert.match(conditionOf(only)!.message, /no local limit applies either$/);
});

Deno.test("EngineNotReady: Pods, none Ready: not rendered yet; once in place it stays and the failure mode applies", () => {
  const engine = enginePods([{ name: "e-1", ready: false }, { name: "e-2", ready: false }]);
  const fresh = at({ rateLimit: both() }, engine);
  assert.deepEqual(inserted(filterOf(fresh)), [LOCAL_RATELIMIT_FILTER]);
  const g = conditionOf(fresh)!;
  assert.deepEqual([g.status, g.reason], ["False", "EngineNotReady"]);
  assert.match(g.message, /^No rate limit engine Pod is Ready \(e-1, e-2\), so the global limits/);
  // In place (Deny): kept, so the failure mode the RateLimit chose applies; said with the Pods.
  const { world } = inPlace(both({ global: { ...GLOBAL, failureMode: "Deny" } }));
  const plan = at(world, engine);
  assert.deepEqual(inserted(filterOf(plan)), [LOCAL_RATELIMIT_FILTER, RATELIMIT_FILTER]);
  const kept = conditionOf(plan)!;
  assert.deepEqual([kept.status, kept.reason], ["False", "EngineNotReady"]);
  assert.equal(
    kept.message,
    "None of the rate limit engine's 2 Pods is Ready (e-1, e-2), so every call for domain demo/httpbin fails (failure mode Deny: requests it limits are refused with 500)",
  );
  localKept(plan);
});

Deno.test("RedisUnreachable: a Ready Pod without Redis, or none Ready for want of it; the failure mode named", () => {
  const { world, lines } = inPlace();
  const plan = at(
    world,
    enginePods([
      { name: "e-1", loaded: { [DOMAIN]: lines } },
      { name: "e-2", loaded: { [DOMAIN]: lines }, redis: "Unreachable" },
    ]),
  );
  const g = conditionOf(plan)!;
  assert.deepEqual([g.status, g.reason], ["False", "RedisUnreachable"]);
  assert.equal(
    g.message,
    "1 of 2 Ready rate limit engine Pods cannot reach Redis (e-2): the calls for domain demo/httpbin they take fail (failure mode Allow: requests are admitted without the global limits)",
  );
  localKept(plan);
  // Redis down for every Pod: readiness follows /healthcheck, so none is Ready.
  const down = at(
    world,
    enginePods([
      { name: "e-1", ready: false, redis: "Unreachable" },
      { name: "e-2", ready: false, redis: "Unreachable" },
    ]),
  );
  assert.deepEqual(inserted(filterOf(down)), [LOCAL_RATELIMIT_FILTER, RATELIMIT_FILTER]);
  assert.match(
    conditionOf(down)!.message,
    /^No rate limit engine Pod is Ready: 2 Pods cannot reach Redis \(e-1, e-2\), so every call for domain demo\/httpbin fails \(failure mode Allow/,
  );
  // Not in place yet and Redis down: the global part waits, and says why.
  const fresh = at(
    { rateLimit: both() },
    enginePods([{ name: "e-1", ready: false, redis: "Unreachable" }]),
  );
  assert.equal(conditionOf(fresh)?.reason, "RedisUnreachable");
  assert.deepEqual(inserted(filterOf(fresh)), [LOCAL_RATELIMIT_FILTER]);
});

Deno.test("DomainNotLoaded: Unknown while a push is under way, False after the bound, then True once held", () => {
  const { world, lines } = inPlace();
  const older = lines.map((l) => l.replace("requests_per_unit=5,", "requests_per_unit=4,"));
  const engine = enginePods([
    { name: "e-1", loaded: {} },
    { name: "e-2", loaded: { [DOMAIN]: older } },
    { name: "e-3", loaded: { [DOMAIN]: lines } },
  ]);
  // The filter was applied at NOW with nothing loaded yet: the wait began then.
  assert.equal(conditionOf({ status: world.rateLimit.status } as Plan)?.reason, "DomainNotLoaded");
  let w = world;
  const first = at(w, engine, NOW + 1_000);
  const g = conditionOf(first)!;
  assert.deepEqual([g.status, g.reason], ["Unknown", "DomainNotLoaded"]);
  assert.equal(
    g.message,
    "2 of 3 Ready rate limit engine Pods have not loaded domain demo/httpbin as in force (not holding it: e-1; holding another version of it: e-2): such an engine admits the domain's requests without counting them (it answers OK for a domain it does not hold; the failure mode applies only when it does not answer)",
  );
  assert.equal(g.lastTransitionTime, kubeTime(NOW));
  assert.equal(first.requeueAfterMs, DOMAIN_LOAD_BOUND_MS - 1_000, "looks again at the bound");
  localKept(first);
  // Unknown makes no Event (every edit passes through it); False makes a Warning.
  assert.deepEqual(first.events, []);
  w = applyPlan(w, first);
  const later = at(w, engine, NOW + 11_000);
  assert.deepEqual([conditionOf(later)?.status, later.requeueAfterMs], ["Unknown", 19_000]);
  w = applyPlan(w, later);
  const past = at(w, engine, NOW + DOMAIN_LOAD_BOUND_MS);
  const f = conditionOf(past)!;
  assert.deepEqual([f.status, f.reason], ["False", "DomainNotLoaded"]);
  assert.match(f.message, /, for 30 s or more$/);
  assert.deepEqual(past.events.map((e) => `${e.type} ${e.reason}`), ["Warning DomainNotLoaded"]);
  assert.equal(past.requeueAfterMs, undefined);
  w = applyPlan(w, past);
  // Once False it stays False (its transition time is not the wait's start).
  assert.equal(conditionOf(at(w, engine, NOW + 40_000))?.status, "False");
  // Held by all: True.
  const held = enginePods([
    { name: "e-1", loaded: { [DOMAIN]: lines } },
    { name: "e-2", loaded: { [DOMAIN]: lines } },
  ]);
  assert.equal(conditionOf(at(w, held, NOW + 41_000))?.reason, "Enforced");
  // After another Unknown reason (not read yet, for long), the wait starts when the domain is
  // first seen missing, not when the condition last changed status.
  const unread = applyPlan(w, at(w, { listing: undefined, pods: [] }, NOW + 50_000));
  assert.equal(conditionOf({ status: unread.rateLimit.status } as Plan)?.status, "Unknown");
  const restarted = at(unread, engine, NOW + 200_000);
  assert.deepEqual(
    [conditionOf(restarted)?.status, conditionOf(restarted)?.lastTransitionTime],
    ["Unknown", kubeTime(NOW + 200_000)],
  );
  assert.equal(restarted.requeueAfterMs, DOMAIN_LOAD_BOUND_MS);
  // A new generation starts a new wait.
  const edited = {
    ...w.rateLimit,
    metadata: { ...w.rateLimit.metadata, generation: 2 },
  };
  const again = at({ ...w, rateLimit: edited }, engine, NOW + 42_000);
  assert.deepEqual([conditionOf(again)?.status, again.requeueAfterMs], [
    "Unknown",
    DOMAIN_LOAD_BOUND_MS,
  ]);
});

Deno.test("EngineNotVerified: not read yet, not listed, a Pod not answering, the filter's domain unreadable", () => {
  const { world, lines } = inPlace();
  const cases: [EngineObservation | undefined, RegExp][] = [
    [
      { listing: undefined, pods: [] },
      /^The global limits are sent to the engine as domain demo\/httpbin, but the rate limit engine's Pods have not been read yet, so whether it holds them and reaches Redis is not known \(when it does not answer: failure mode Allow/,
    ],
    [
      {
        listing: { listed: false, reason: "PodsUnknown", message: "list pods: forbidden" },
        pods: [],
      },
      /the rate limit engine's Pods cannot be listed \(list pods: forbidden\)/,
    ],
    [
      enginePods([
        { name: "e-1", loaded: { [DOMAIN]: lines } },
        {
          name: "e-2",
          redis: "Unknown",
          loaded: undefined,
          error: { reason: "Unreachable", message: "GET http://10.0.0.2:6070/rlconfig: refused" },
        },
      ]),
      /^What 1 of 2 Ready rate limit engine Pods holds cannot be read \(e-2: Unreachable, GET http:\/\/10\.0\.0\.2:6070\/rlconfig: refused\)/,
    ],
  ];
  for (const [engine, says] of cases) {
    const plan = at(world, engine);
    const g = conditionOf(plan)!;
    assert.deepEqual([g.status, g.reason], ["Unknown", "EngineNotVerified"], String(says));
    assert.match(g.message, says);
    // Not known is not gone: the global part in place stays.
    assert.deepEqual(inserted(filterOf(plan)), [LOCAL_RATELIMIT_FILTER, RATELIMIT_FILTER]);
  }
  // The filter in place carries an unreadable domain (kept for a refused generation).
  const broken: KubeObject = {
    ...world.envoyFilter!,
    metadata: {
      ...world.envoyFilter!.metadata,
      annotations: { ...world.envoyFilter!.metadata.annotations, [ENGINE_DOMAIN_ANNOTATION]: "{" },
    },
  };
  const invalid = both({ buckets: [{ bucket: bucket(1, 1, "1s") }] });
  const plan = reconcileWorld(
    { rateLimit: invalid, envoyFilter: broken },
    input(invalid, { globalEngine: enginePods([{ name: "e-1", loaded: { [DOMAIN]: lines } }]) }),
  );
  const g = conditionOf(plan)!;
  assert.deepEqual([g.status, g.reason], ["Unknown", "EngineNotVerified"]);
  assert.match(
    g.message,
    /^What the engine should hold of domain demo\/httpbin cannot be read: .*not JSON/,
  );
});

Deno.test("NotApplied: a refused generation, the engine Ready, and no global part in place", () => {
  const invalid = both({ buckets: [{ bucket: bucket(1, 1, "1s") }] });
  const plan = at({ rateLimit: invalid }, enginePods([{ name: "e-1" }]));
  const g = conditionOf(plan)!;
  assert.deepEqual([g.status, g.reason], ["False", "NotApplied"]);
});

Deno.test("every GlobalEnforced row is reached above, and docs/ratelimit-status.md lists it", async () => {
  const { world, lines } = inPlace();
  const reached = new Set<string>();
  const see = (plan: Plan) => {
    const c = conditionOf(plan)!;
    reached.add(`${c.status} ${c.reason}`);
  };
  see(at(world, enginePods([{ name: "e-1", loaded: { [DOMAIN]: lines } }])));
  see(at({ rateLimit: both() }, undefined));
  see(at(world, enginePods([{ name: "e-1", ready: false }])));
  see(at(world, enginePods([{ name: "e-1", redis: "Unreachable", loaded: { [DOMAIN]: lines } }])));
  const pending = at(world, enginePods([{ name: "e-1" }]));
  see(pending);
  see(at(applyPlan(world, pending), enginePods([{ name: "e-1" }]), NOW + DOMAIN_LOAD_BOUND_MS));
  see(at(world, { listing: undefined, pods: [] }));
  see(
    at(
      { rateLimit: both({ buckets: [{ bucket: bucket(1, 1, "1s") }] }) },
      enginePods([{ name: "e-1" }]),
    ),
  );
  assert.deepEqual(
    [...reached].sort(),
    GLOBAL_ENFORCED_ROWS.map((r) => `${r.status} ${r.reason}`).sort(),
  );
  const page = await Deno.readTextFile(new URL("../../docs/ratelimit-status.md", import.meta.url));
  for (const r of GLOBAL_ENFORCED_ROWS) {
    assert.match(page, new RegExp(`\\| \`${r.status}\` +\\| \`${r.reason}\` +\\|`), r.reason);
  }
});
