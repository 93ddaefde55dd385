/**
 * The Accepted condition: what istiod says of the proxies of the selected Pods, never assumed.
 * Every row is reached; True only when every proxy that takes the filter acknowledged a push
 * that istiod's dump shows holding exactly the limit in force, confirmed; a rejection names the
 * proxy and its error; an Event only when it becomes True or False.
 */
import assert from "node:assert/strict";
import type { Condition } from "../../src/api/common.ts";
import type { HeldLimits, IstiodStatusFields, ProxyStatusFields } from "../../src/api/istiod.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { Plan } from "../../src/reconcile/plan.ts";
import { ACCEPTED_ROWS, reconcileRateLimit } from "../../src/reconcile/ratelimit/mod.ts";
import type { ProxyObservation } from "../../src/reconcile/ratelimit/input.ts";
import {
  applyPlan,
  heldOf,
  input,
  pod,
  rateLimit,
  withProxy,
  type World,
} from "./ratelimit_fixtures.ts";

type Status = { proxies?: Record<string, number>; conditions: Condition[] };

/** What the default sample limit (10 per 30s, enforcing) is as a proxy holds it. */
const HELD: HeldLimits = heldOf(rateLimit());

const ACKED: ProxyStatusFields = {
  proxyType: "sidecar",
  istioVersion: "1.31.0",
  verdict: { state: "Acked" },
  held: { limits: [HELD], unreadable: 0, confirmed: true },
};

const REACHABLE: IstiodStatusFields = { reachable: true, proxies: 3 };

const pods = [
  withProxy(pod("a", { app: "httpbin" }), "sidecar"),
  withProxy(pod("b", { app: "httpbin" }), "sidecar"),
];

function observed(
  by: Record<string, ProxyStatusFields>,
  istiod: IstiodStatusFields | undefined = REACHABLE,
): ProxyObservation {
  return { istiod, byPod: new Map(Object.entries(by).map(([n, s]) => [`demo/${n}`, s])) };
}

function reconcile(proxies: ProxyObservation | undefined, more: { pods?: KubeObject[] } = {}) {
  return reconcileRateLimit(input(rateLimit(), { pods: more.pods ?? pods, proxies }));
}

const acceptedOf = (p: Plan) => (p.status as Status).conditions.find((c) => c.type === "Accepted")!;

Deno.test("Accepted: True only when every proxy acknowledged a confirmed push holding the limit", () => {
  const plan = reconcile(observed({ a: ACKED, b: ACKED }));
  const c = acceptedOf(plan);
  assert.deepEqual([c.status, c.reason], ["True", "Accepted"]);
  assert.match(c.message, /All 2 proxies acknowledged/);
  assert.deepEqual((plan.status as Status).proxies, {
    accepted: 2,
    rejected: 0,
    pending: 0,
    notConnected: 0,
  });
});

Deno.test("Accepted: a push under way does not change what a proxy holds", () => {
  // Someone else's change is being pushed to a: it still holds, confirmed, the limit in force.
  const mid: ProxyStatusFields = { ...ACKED, verdict: { state: "Pending" } };
  const c = acceptedOf(reconcile(observed({ a: mid, b: ACKED })));
  assert.equal(c.status, "True");
  // What it holds under way is another limit (ours is being pushed): Pending, not "another limit".
  const older: ProxyStatusFields = {
    ...mid,
    held: { limits: [{ ...HELD, shadow: true }], unreadable: 0, confirmed: true },
  };
  const p = acceptedOf(reconcile(observed({ a: older, b: ACKED })));
  assert.equal(p.reason, "Pending");
  assert.match(p.message, /not yet acknowledged: a/);
  // Under way with a refused reading: Pending too.
  const refused: ProxyStatusFields = { ...mid, held: { error: "NotFound", message: "404" } };
  assert.match(
    acceptedOf(reconcile(observed({ a: refused, b: ACKED }))).message,
    /not yet acknowledged: a/,
  );
});

Deno.test("Accepted: every row is reached, with its status", () => {
  const reached = new Map<string, string>();
  const note = (p: Plan) => {
    const c = acceptedOf(p);
    reached.set(c.reason, c.status);
    return c;
  };
  // Not asked, no answer yet, istiod refusing.
  note(reconcile(undefined));
  note(reconcile(observed({}, undefined)));
  const refused = note(reconcile(observed({}, {
    reachable: false,
    reason: "Forbidden",
    message: "GET …: 403",
  })));
  assert.match(refused.message, /Forbidden.*403/);
  // No limit in place: an invalid first generation.
  note(
    reconcileRateLimit(
      input(rateLimit({ defaultBucket: { maxTokens: 0, tokensPerFill: 1, fillInterval: "1s" } }), {
        pods,
        proxies: observed({}),
      }),
    ),
  );
  // No selected Pod with a proxy.
  note(reconcile(observed({}), { pods: [pod("plain", { app: "httpbin" })] }));
  // A rejection names the proxy and istiod's error, and wins over the rest.
  const rejected = note(reconcile(observed({
    a: {
      ...ACKED,
      verdict: {
        state: "Rejected",
        type: "listeners",
        error: "Proto constraint validation failed",
      },
    },
  })));
  assert.match(
    rejected.message,
    /1 of 2 proxies rejected.*a rejected the listeners istiod sent it: Proto constraint validation failed/,
  );
  // The dump refused: not verifiable.
  const unverifiable = note(reconcile(observed({
    a: { ...ACKED, held: { error: "NotFound", message: "404, Proxy not connected" } },
    b: ACKED,
  })));
  assert.match(unverifiable.message, /root namespace/);
  // Not connected, pending, unconfirmed, another limit: Pending, each named.
  const underWay: ProxyStatusFields = { ...ACKED, verdict: { state: "Pending" }, held: undefined };
  const pending = note(reconcile(observed({ a: underWay })));
  assert.match(pending.message, /not connected to istiod: b/);
  assert.match(pending.message, /not yet acknowledged: a/);
  for (
    const held of [
      { limits: [HELD], unreadable: 0, confirmed: false },
      { limits: [{ ...HELD, shadow: true }], unreadable: 0, confirmed: true },
      { limits: [HELD, HELD], unreadable: 0, confirmed: true },
      { limits: [], unreadable: 0, confirmed: true },
    ]
  ) {
    const c = note(reconcile(observed({ a: { ...ACKED, held }, b: ACKED })));
    assert.equal(c.reason, "Pending", JSON.stringify(held));
  }
  const other = note(reconcile(observed({
    a: {
      ...ACKED,
      held: {
        limits: [{ ...HELD, buckets: [{ ...HELD.buckets[0], maxTokens: 11 }] }],
        unreadable: 0,
        confirmed: true,
      },
    },
    b: ACKED,
  })));
  assert.match(other.message, /holding another limit than the one in force: a/);
  note(reconcile(observed({ a: ACKED, b: ACKED })));
  // Per-client buckets in force (generation 1, applied while no proxy was known) and a proxy of
  // Istio 1.25 (Envoy 1.33): too old for them.
  const perClient = rateLimit({
    buckets: [{
      perClient: { clientIP: true },
      bucket: { maxTokens: 2, tokensPerFill: 1, fillInterval: "1m" },
    }],
  });
  const inForce = reconcileRateLimit(input(perClient, { pods })).apply[0];
  const tooOld = note(reconcileRateLimit(input(perClient, {
    pods,
    envoyFilter: inForce,
    proxies: observed({
      a: { ...ACKED, envoy: { istio: "1.25.2", minor: 33, bound: "exact" } },
      b: ACKED,
    }),
  })));
  assert.match(tooOld.message, /a \(Istio 1\.25\.2, Envoy 1\.33\)/);
  assert.deepEqual(
    [...reached].sort(),
    ACCEPTED_ROWS.map((r) => [r.reason, r.status]).sort(),
  );
});

Deno.test("Accepted: an Event when it becomes True or False, none for Unknown", () => {
  let world: World = { rateLimit: rateLimit() };
  const step = (proxies: ProxyObservation | undefined) => {
    const plan = reconcileRateLimit(input(world.rateLimit, {
      pods,
      proxies,
      envoyFilter: world.envoyFilter,
    }));
    world = applyPlan(world, plan);
    return plan.events.filter((e) =>
      ["Accepted", "ProxyRejected", "Pending", "IstiodNotAsked"].includes(e.reason)
    )
      .map((e) => `${e.type} ${e.reason}`);
  };
  assert.deepEqual(step(undefined), []);
  assert.deepEqual(step(observed({ a: { ...ACKED, verdict: { state: "Pending" } } })), []);
  assert.deepEqual(step(observed({ a: ACKED, b: ACKED })), ["Normal Accepted"]);
  assert.deepEqual(step(observed({ a: ACKED, b: ACKED })), []);
  const nack = {
    ...ACKED,
    verdict: { state: "Rejected" as const, type: "routes" as const, error: "bad" },
  };
  assert.deepEqual(step(observed({ a: nack, b: ACKED })), ["Warning ProxyRejected"]);
});

Deno.test("Accepted is about the limit in force: a refused generation keeps its filter's", () => {
  // Generation 1 applied; generation 2 invalid: the filter of generation 1 stays in force, and the
  // proxies holding generation 1's limit accept it.
  let world: World = { rateLimit: rateLimit() };
  world = applyPlan(world, reconcileRateLimit(input(world.rateLimit, { pods })));
  const bad = rateLimit({
    generation: 2,
    defaultBucket: { maxTokens: 0, tokensPerFill: 1, fillInterval: "1s" },
  });
  const plan = reconcileRateLimit(input({ ...bad, status: world.rateLimit.status }, {
    pods,
    envoyFilter: world.envoyFilter,
    proxies: observed({ a: ACKED, b: ACKED }),
  }));
  const ready = (plan.status as Status).conditions.find((c) => c.type === "Ready")!;
  assert.equal(ready.status, "False");
  assert.equal(acceptedOf(plan).status, "True");
});

Deno.test("Accepted: the route digest decides, not the buckets alone", () => {
  assert.equal(typeof HELD.digest, "string");
  assert.deepEqual(HELD.buckets, [{ maxTokens: 10, tokensPerFill: 10, fillInterval: "30s" }]);
  const holding = (held: HeldLimits): ProxyStatusFields => ({
    ...ACKED,
    held: { limits: [held], unreadable: 0, confirmed: true },
  });
  // Generation 2 keeps the buckets and changes the route config (response headers): the proxies
  // still hold generation 1's, whose buckets are the same.
  const edited = rateLimit({ generation: 2, enableResponseHeaders: true });
  const run = (held: HeldLimits) =>
    acceptedOf(reconcileRateLimit(input(edited, {
      pods,
      proxies: observed({ a: holding(held), b: holding(held) }),
    })));
  const old = run(HELD);
  assert.deepEqual([old.status, old.reason], ["Unknown", "Pending"]);
  assert.match(old.message, /holding another limit than the one in force: a, b/);
  assert.equal(run(heldOf(edited)).status, "True");
  // Only the generation changes (a new selector label's value is the same): a new digest too.
  const relabelled = heldOf(rateLimit({ generation: 3, enableResponseHeaders: true }));
  assert.notEqual(relabelled.digest, heldOf(edited).digest);
  assert.equal(run(relabelled).status, "Unknown");
  // A dump without a digest (an older operator's filter) does not hold a filter that has one.
  const { digest: _, ...bare } = heldOf(edited);
  assert.equal(run(bare).status, "Unknown");
});

Deno.test("Accepted: a filter in force without a digest (an older operator's) is compared by buckets", () => {
  let world: World = { rateLimit: rateLimit() };
  world = applyPlan(world, reconcileRateLimit(input(world.rateLimit, { pods })));
  // The filter as an operator before the digest wrote it: no route metadata.
  const spec = world.envoyFilter!.spec as { configPatches: { patch: { value: object } }[] };
  const configPatches = spec.configPatches.map((p) => {
    const { metadata: _, ...value } = p.patch.value as { metadata?: unknown };
    return { ...p, patch: { ...p.patch, value } };
  });
  const older = { ...world.envoyFilter!, spec: { ...spec, configPatches } };
  // Generation 2 is refused, so the older filter stays in force.
  const bad = rateLimit({
    generation: 2,
    defaultBucket: { maxTokens: 0, tokensPerFill: 1, fillInterval: "1s" },
  });
  const { digest: _, ...bare } = HELD;
  const run = (held: HeldLimits) =>
    acceptedOf(reconcileRateLimit(input({ ...bad, status: world.rateLimit.status }, {
      pods,
      envoyFilter: older,
      proxies: observed({
        a: { ...ACKED, held: { limits: [held], unreadable: 0, confirmed: true } },
        b: { ...ACKED, held: { limits: [held], unreadable: 0, confirmed: true } },
      }),
    })));
  assert.equal(run(bare).status, "True");
  assert.equal(run({ ...bare, shadow: true }).status, "Unknown");
});
