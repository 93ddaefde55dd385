/**
 * Each proxy's Envoy (issue 42 point 6): per-client buckets (dynamic descriptors, Envoy 1.34 and
 * later, Istio 1.26 and later) are never sent to a proxy istiod says runs an older one. A new
 * generation with them is refused (Ready False ProxyTooOld, naming the Pods and their versions)
 * and the last good filter stays; the generation already in force stays, and Accepted is False
 * ProxyTooOld for those proxies; a version istiod does not give is said to be unknown, not
 * assumed either way.
 */
import assert from "node:assert/strict";
import type { Condition } from "../../src/api/common.ts";
import { type HeldLimits, proxyStatusOf } from "../../src/api/istiod.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { Plan } from "../../src/reconcile/plan.ts";
import { reconcileRateLimit } from "../../src/reconcile/ratelimit/mod.ts";
import type { ProxyObservation } from "../../src/reconcile/ratelimit/input.ts";
import { filterLimits } from "../../src/reconcile/ratelimit/input.ts";
import {
  applyPlan,
  bucket,
  input,
  pod,
  proxyStatus,
  rateLimit,
  withProxy,
  type World,
} from "./ratelimit_fixtures.ts";

type Status = {
  state: string;
  enforcedGeneration?: number;
  proxies?: Record<string, number>;
  conditions: Condition[];
};

const PER_CLIENT = [{ perClient: { header: "X-Api-Key" }, bucket: bucket(2, 1, "1m") }];
const perClient = (generation = 1) => rateLimit({ generation, buckets: PER_CLIENT });

const pods = ["a", "b"].map((n) => withProxy(pod(n, { app: "httpbin" }), "sidecar"));

/** istiod answered, and says of each named Pod's proxy its Istio version (and what it holds). */
function observed(versions: Record<string, string>, held?: HeldLimits[]): ProxyObservation {
  return {
    istiod: { reachable: true, proxies: Object.keys(versions).length },
    byPod: new Map(
      Object.entries(versions).map(([n, v]) => [
        `demo/${n}`,
        proxyStatusOf(
          proxyStatus(n, v, held ? { limits: held, unreadable: 0, confirmed: true } : undefined),
        )!,
      ]),
    ),
  };
}

const cond = (p: Plan, type: string) =>
  (p.status as Status).conditions.find((c) => c.type === type)!;
const brief = (c: Condition) => `${c.status} ${c.reason}`;

Deno.test("a new per-client RateLimit is refused while a selected proxy runs Envoy 1.33", () => {
  const plan = reconcileRateLimit(
    input(perClient(), { pods, proxies: observed({ a: "1.26.3", b: "1.25.2" }) }),
  );
  assert.deepEqual(plan.apply, [], "nothing sent: no proxy gets a shape it refuses");
  assert.deepEqual(plan.delete, []);
  const ready = cond(plan, "Ready");
  assert.equal(brief(ready), "False ProxyTooOld");
  assert.match(
    ready.message,
    /^spec\.local\.buckets\[0\]\.perClient: per-client buckets need Envoy 1\.34 \(Istio 1\.26\) or later, and 1 selected proxy reports an older one, which refuses the filter: b \(Istio 1\.25\.2, Envoy 1\.33\); upgrade its proxy/,
  );
  assert.match(ready.message, /this one is not applied$/);
  assert.equal((plan.status as Status).state, "Error");
  assert.equal(brief(cond(plan, "Enforced")), "False NotApplied");
  assert.deepEqual(plan.events.map((e) => `${e.type} ${e.reason}`), ["Warning ProxyTooOld"]);
});

Deno.test("Istio older than the table still refuses; newer, or 1.26 and later, is applied", () => {
  const verdict = (v: string) =>
    brief(cond(
      reconcileRateLimit(input(perClient(), { pods, proxies: observed({ a: "1.26.0", b: v }) })),
      "Ready",
    ));
  assert.equal(verdict("1.22.1"), "False ProxyTooOld");
  assert.equal(verdict("1.25.0-beta.1"), "False ProxyTooOld");
  for (const v of ["1.26.0", "1.27-dev", "1.30.1", "1.31.0", "release-1.40"]) {
    assert.equal(verdict(v), "True Applied", v);
  }
  const old = reconcileRateLimit(
    input(perClient(), { pods, proxies: observed({ a: "1.20.8", b: "1.24.3" }) }),
  );
  assert.match(
    cond(old, "Ready").message,
    /2 selected proxies report an older one, which refuses the filter: a \(Istio 1\.20\.8, Envoy 1\.32 or older\), b \(Istio 1\.24\.3, Envoy 1\.32 or older\); upgrade their proxy/,
  );
});

Deno.test("a RateLimit without per-client buckets is applied whatever the proxies' Envoy", () => {
  const plan = reconcileRateLimit(
    input(rateLimit(), { pods, proxies: observed({ a: "1.22.0", b: "1.25.2" }) }),
  );
  assert.equal(brief(cond(plan, "Ready")), "True Applied");
  assert.equal(plan.apply.length, 1);
});

Deno.test("an edit adding per-client buckets keeps the last good generation on old proxies", () => {
  // Generation 1, one bucket for all, is applied and held by both proxies.
  let world: World = { rateLimit: rateLimit() };
  world = applyPlan(world, reconcileRateLimit(input(world.rateLimit, { pods })));
  const held: HeldLimits[] = [{
    shadow: false,
    buckets: [{ maxTokens: 10, tokensPerFill: 10, fillInterval: "30s" }],
  }];
  const proxies = observed({ a: "1.26.3", b: "1.25.2" }, held);
  const gen2 = {
    ...rateLimit({ generation: 2, buckets: PER_CLIENT }),
    status: world.rateLimit.status,
  };
  const plan = reconcileRateLimit(input(gen2, { pods, envoyFilter: world.envoyFilter, proxies }));
  assert.deepEqual(plan.apply, [], "generation 1's filter is not replaced");
  assert.deepEqual(plan.delete, [], "nor withdrawn");
  const status = plan.status as Status;
  assert.equal(status.enforcedGeneration, 1);
  assert.equal(brief(cond(plan, "Ready")), "False ProxyTooOld");
  assert.match(
    cond(plan, "Ready").message,
    /so generation 2 is not applied; generation 1 still enforced by EnvoyFilter demo\/httpbin$/,
  );
  // What works stays working, and is seen to: every proxy holds generation 1's limit.
  assert.equal(brief(cond(plan, "Enforced")), "True Enforced");
  assert.equal(brief(cond(plan, "Accepted")), "True Accepted");
  // The old proxy upgraded (a new Pod's sidecar is Istio 1.26): generation 2 goes out.
  const upgraded = reconcileRateLimit(
    input(gen2, {
      pods,
      envoyFilter: world.envoyFilter,
      proxies: observed({ a: "1.26.3", b: "1.26.3" }, held),
    }),
  );
  assert.equal(brief(cond(upgraded, "Ready")), "True Applied");
  assert.equal(filterLimits(upgraded.apply[0])?.perClient, true);
});

Deno.test("the generation in force stays; Accepted is False ProxyTooOld for an old proxy", () => {
  // Applied while every proxy was new; then a Pod with an Istio 1.25 sidecar comes.
  let world: World = { rateLimit: perClient() };
  world = applyPlan(
    world,
    reconcileRateLimit(input(world.rateLimit, { pods, proxies: observed({ a: "1.26.3" }) })),
  );
  assert.ok(world.envoyFilter);
  const plan = reconcileRateLimit(input(world.rateLimit, {
    pods,
    envoyFilter: world.envoyFilter,
    proxies: observed({ a: "1.26.3", b: "1.25.2" }),
  }));
  // Refusing it again would change nothing that is sent: the filter of generation 1 is in place.
  assert.equal(brief(cond(plan, "Ready")), "True Applied");
  const accepted = cond(plan, "Accepted");
  assert.equal(brief(accepted), "False ProxyTooOld");
  assert.match(
    accepted.message,
    /^1 of 2 proxies runs an Envoy that refuses the per-client buckets of the limit in force \(they need Envoy 1\.34 \(Istio 1\.26\) or later\): b \(Istio 1\.25\.2, Envoy 1\.33\); such a proxy rejects the config/,
  );
  assert.deepEqual(
    plan.events.filter((e) => e.reason === "ProxyTooOld").map((e) => e.type),
    ["Warning"],
  );
});

Deno.test("a proxy whose Envoy istiod does not give refuses nothing, and is said to be unknown", () => {
  // b not connected, a with no Istio version: nothing known against the spec, so it is applied.
  const plan = reconcileRateLimit(input(perClient(), { pods, proxies: observed({ a: "" }) }));
  assert.equal(brief(cond(plan, "Ready")), "True Applied");
  assert.equal(proxyStatusOf(proxyStatus("a", ""))!.envoy, undefined);
  const accepted = cond(plan, "Accepted");
  assert.equal(brief(accepted), "Unknown Pending");
  assert.match(
    accepted.message,
    /per-client buckets need Envoy 1\.34 \(Istio 1\.26\) or later, and istiod does not say which Envoy runs in a, b$/,
  );
  // Not asking istiod: applied, and Accepted says the Envoy is not known either.
  const notAsked = reconcileRateLimit(input(perClient(), { pods }));
  assert.equal(brief(cond(notAsked, "Ready")), "True Applied");
  assert.match(
    cond(notAsked, "Accepted").message,
    /nor which Envoy they run: its per-client buckets need Envoy 1\.34 \(Istio 1\.26\) or later$/,
  );
  // Without per-client buckets the version is not mentioned.
  assert.doesNotMatch(
    cond(reconcileRateLimit(input(rateLimit(), { pods })), "Accepted").message,
    /Envoy/,
  );
});

Deno.test("only proxies that take the filter count: an old Pod the selector does not select", () => {
  const other = withProxy(pod("c", { app: "other" }), "sidecar");
  const plan = reconcileRateLimit(input(perClient(), {
    pods: [...pods, other],
    proxies: observed({ a: "1.26.3", b: "1.26.3", c: "1.25.2" }),
  }));
  assert.equal(brief(cond(plan, "Ready")), "True Applied");
  const noProxy: KubeObject = pod("d", { app: "httpbin" });
  const plain = reconcileRateLimit(input(perClient(), {
    pods: [pods[0], noProxy],
    proxies: observed({ a: "1.26.3", d: "1.25.2" }),
  }));
  assert.equal(brief(cond(plain, "Ready")), "True Applied");
});
