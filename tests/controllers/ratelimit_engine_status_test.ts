/**
 * The RateLimit controller reading the engine back (settings.engineStatus): it watches EngineStatus,
 * a type served inside the operator; any change wakes every RateLimit with spec.global (and one
 * whose filter in place still carries a domain), none other; the reconcile reads the cached objects
 * into the GlobalEnforced condition, through the cache's projection of the filter (which keeps the
 * engine domain annotation). Without the setting nothing of it is watched and the global part is
 * never rendered.
 */
import assert from "node:assert/strict";
import {
  loadRateLimitReducer,
  rateLimitController,
  rateLimitControllerFor,
} from "../../src/controllers/ratelimit.ts";
import {
  ENGINE_STATUS,
  enginesStatusObject,
  type EngineStatusFields,
  engineStatusObject,
} from "../../src/api/engine_status.ts";
import { ENGINE_DOMAIN_ANNOTATION, RATELIMIT_FILTER } from "../../src/api/global_engine.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { Condition } from "../../src/api/common.ts";
import { triggersOf } from "../../src/runtime/controller_spec.ts";
import {
  engineDomainOfFilter,
  rlconfigLines,
} from "../../src/reconcile/ratelimit/engine_config.ts";
import { FILTER_PROJECTION } from "../../src/controllers/ratelimit_cache.ts";
import { pod, rateLimit, withProxy } from "../reconcile/ratelimit_fixtures.ts";
import { cacheOf, CTX, MESH_CRD } from "./ratelimit_cache_fixtures.ts";
import { MANAGED_BY, MANAGED_BY_LABEL, MODULE_LABEL } from "../../src/reconcile/labels.ts";

// The reducer loads with a controller's preload; reconcile is called directly here.
await loadRateLimitReducer();

const ctx = CTX;
const crd = MESH_CRD;
const reading = rateLimitControllerFor({ meshRootNamespace: "istio-system", engineStatus: true });
const GLOBAL = { default: { limit: { requests: 100, unit: "Minute" } } };

function enginePod(name: string, fields: Partial<EngineStatusFields> = {}): KubeObject {
  return engineStatusObject(name, {
    ready: true,
    redis: "Reachable",
    loaded: {},
    since: "2026-11-28T18:00:00Z",
    ...fields,
  });
}

const globalOf = (plan: { status?: unknown }) =>
  (plan.status as { conditions: Condition[] }).conditions.find((c) => c.type === "GlobalEnforced")!;

Deno.test("reading the engine: EngineStatus is watched as a local type, and only then", () => {
  const w = reading.watches.find((x) => x.type === ENGINE_STATUS);
  assert.ok(w?.local, "a local watch: no CRD, no RBAC, skipped by the startup checks");
  assert.equal(rateLimitController.watches.some((x) => x.type === ENGINE_STATUS), false);
});

Deno.test("reading the engine: a change wakes every RateLimit with a global part, no other", () => {
  const withGlobal = rateLimit({ name: "g", global: GLOBAL });
  const other = rateLimit({ name: "local", selectorLabels: { app: "x" } });
  const elsewhere = rateLimit({ name: "g2", namespace: "team", global: GLOBAL });
  // spec.global removed but a refused generation keeps a filter with a domain: woken too.
  const kept = rateLimit({ name: "kept", selectorLabels: { app: "k" } });
  const keptFilter: KubeObject = {
    apiVersion: "networking.istio.io/v1alpha3",
    kind: "EnvoyFilter",
    metadata: {
      name: "kept",
      namespace: "demo",
      labels: {
        [MANAGED_BY_LABEL]: MANAGED_BY,
        [MODULE_LABEL]: "ratelimit",
      },
      annotations: { [ENGINE_DOMAIN_ANNOTATION]: "{}" },
    },
  };
  const cache = cacheOf([crd, withGlobal, other, elsewhere, kept, keptFilter]);
  const wake = triggersOf(reading);
  assert.deepEqual(wake(ENGINE_STATUS, enginePod("e-1"), cache).sort(), [
    "demo/g",
    "demo/kept",
    "team/g2",
  ]);
  assert.deepEqual(
    wake(ENGINE_STATUS, enginesStatusObject({ listed: true, pods: 1 }), cache).sort(),
    ["demo/g", "demo/kept", "team/g2"],
  );
  // Only some domains' lines changed: only their RateLimits (a domain is namespace/name), those
  // that exist.
  assert.deepEqual(
    wake(ENGINE_STATUS, enginePod("e-1", { changed: ["team/g2", "demo/gone"] }), cache),
    ["team/g2"],
  );
});

Deno.test("reading the engine: the cached EngineStatus objects become GlobalEnforced", () => {
  const rl = rateLimit({ global: GLOBAL });
  const pods = [withProxy(pod("a", { app: "httpbin" }), "sidecar")];
  const listed = enginesStatusObject({ listed: true, pods: 1 });
  // First: the engine's Pod Ready, nothing loaded yet: the global part is rendered.
  const first = reading.reconcile(
    "demo/httpbin",
    cacheOf([crd, rl, ...pods, listed, enginePod("e-1")]),
    ctx,
  )!;
  const ef = first.apply.find((o) => o.kind === "EnvoyFilter")!;
  assert.ok(JSON.stringify(ef).includes(RATELIMIT_FILTER));
  assert.equal(globalOf(first).reason, "DomainNotLoaded");
  // The filter as the cache keeps it still carries its domain's lines.
  const projected = FILTER_PROJECTION.keep(structuredClone(ef));
  const lines = rlconfigLines(engineDomainOfFilter(projected)!);
  assert.deepEqual(lines, [
    "demo/httpbin.rule_default: unit=MINUTE requests_per_unit=100, shadow_mode: false, quota_mode: false",
  ]);
  const held = enginePod("e-1", { loaded: { "demo/httpbin": lines } });
  const plan = reading.reconcile(
    "demo/httpbin",
    cacheOf([crd, rl, ef, ...pods, listed, held]),
    ctx,
  )!;
  assert.deepEqual([globalOf(plan).status, globalOf(plan).reason], ["True", "Enforced"]);
  const lost = enginePod("e-1", { loaded: { "demo/httpbin": lines }, redis: "Unreachable" });
  assert.equal(
    globalOf(reading.reconcile("demo/httpbin", cacheOf([crd, rl, ef, ...pods, listed, lost]), ctx)!)
      .reason,
    "RedisUnreachable",
  );
  // The controller that does not read the engine back: the global part is never rendered.
  const plain = rateLimitController.reconcile(
    "demo/httpbin",
    cacheOf([crd, rl, ...pods, listed, held]),
    ctx,
  )!;
  assert.ok(!JSON.stringify(plain.apply).includes(RATELIMIT_FILTER));
  assert.equal(globalOf(plain).reason, "EngineNotInstalled");
});
