/**
 * Each proxy's Envoy (issue 42 point 6): per-client buckets (dynamic descriptors, Envoy 1.34 and
 * later, Istio 1.26 and later) are never sent to a proxy istiod says runs an older one. A new
 * generation with them is refused (Ready False ProxyTooOld, naming the Pods and their versions)
 * and the last good filter stays; the generation already in force stays, and Accepted is False
 * ProxyTooOld for those proxies. The Pod's proxy image tag says the version too, without istiod
 * (istiod's wins when both say): a known-old proxy missing from syncz is still refused. A proxy
 * neither istiod lists nor its image dates makes a new per-client generation wait
 * (ProxyVersionUnknown); one istiod lists without a readable version is said to be unknown.
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
  DIGEST_ONLY,
  heldOf,
  input,
  pod,
  proxyStatus,
  rateLimit,
  withImage,
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
  const held: HeldLimits[] = [heldOf(rateLimit())];
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
  // Applied while the one Pod's proxy was new; then a Pod with an Istio 1.25 sidecar comes.
  let world: World = { rateLimit: perClient() };
  world = applyPlan(
    world,
    reconcileRateLimit(
      input(world.rateLimit, { pods: [pods[0]], proxies: observed({ a: "1.26.3" }) }),
    ),
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

Deno.test("a proxy istiod lists without a readable version refuses nothing, and is said unknown", () => {
  // a with no Istio version in syncz and no tag on its image: listed (connected), so nothing
  // more will be known; istiod reads such a version as the newest. Applied, and said.
  const digest = [withImage(pods[0], DIGEST_ONLY), pods[1]];
  const plan = reconcileRateLimit(
    input(perClient(), { pods: digest, proxies: observed({ a: "", b: "1.26.3" }) }),
  );
  assert.equal(brief(cond(plan, "Ready")), "True Applied");
  assert.equal(proxyStatusOf(proxyStatus("a", ""))!.envoy, undefined);
  const accepted = cond(plan, "Accepted");
  assert.equal(brief(accepted), "Unknown Pending");
  assert.match(
    accepted.message,
    /per-client buckets need Envoy 1\.34 \(Istio 1\.26\) or later, and neither istiod nor the proxy image says which Envoy runs in a$/,
  );
  // Not asking istiod: nothing will be listed, nothing is waited for; Accepted says it.
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

// The e2e bug: the known-old proxy is briefly missing from syncz (reconnecting, istiod
// restarting, a rollout whose new Pod has not connected yet) and an edit adding per-client
// buckets comes meanwhile. Read as "unknown", it was applied; the old proxy then came back,
// rejected the listener, and every later push to it failed.

/** Pod a's proxy image tagged Istio 1.26.3, b's 1.25.2 (a distroless variant). */
const imaged = [
  withImage(pods[0], "docker.io/istio/proxyv2:1.26.3"),
  withImage(pods[1], "gcr.io/istio-release/proxyv2:1.25.2-distroless"),
];

Deno.test("the old proxy missing from syncz is still known old by its image: refused", () => {
  // Generation 1, no per-client bucket, in force and held by both.
  let world: World = { rateLimit: rateLimit() };
  world = applyPlan(world, reconcileRateLimit(input(world.rateLimit, { pods: imaged })));
  const gen2 = {
    ...rateLimit({ generation: 2, buckets: PER_CLIENT }),
    status: world.rateLimit.status,
  };
  // istiod lists a only: b is reconnecting.
  const plan = reconcileRateLimit(
    input(gen2, {
      pods: imaged,
      envoyFilter: world.envoyFilter,
      proxies: observed({ a: "1.26.3" }),
    }),
  );
  assert.deepEqual(plan.apply, [], "generation 1's filter is not replaced");
  assert.deepEqual(plan.delete, []);
  assert.equal((plan.status as Status).enforcedGeneration, 1);
  const ready = cond(plan, "Ready");
  assert.equal(brief(ready), "False ProxyTooOld");
  assert.match(
    ready.message,
    /1 selected proxy reports an older one, which refuses the filter: b \(Istio 1\.25\.2, Envoy 1\.33, by its image\); upgrade its proxy/,
  );
  // istiod not answering at all (restarting, nothing listed): the same.
  const restarting = reconcileRateLimit(input(gen2, {
    pods: imaged,
    envoyFilter: world.envoyFilter,
    proxies: { istiod: { reachable: true, proxies: 0 }, byPod: new Map() },
  }));
  assert.equal(brief(cond(restarting, "Ready")), "False ProxyTooOld");
  // The image needs no istiod: refused when the operator does not ask it either.
  const notAsked = reconcileRateLimit(
    input(gen2, { pods: imaged, envoyFilter: world.envoyFilter }),
  );
  assert.equal(brief(cond(notAsked, "Ready")), "False ProxyTooOld");
  assert.deepEqual(notAsked.apply, []);
});

Deno.test("the generation in force: an old proxy away from istiod is named too old by its image", () => {
  let world: World = { rateLimit: perClient() };
  world = applyPlan(
    world,
    reconcileRateLimit(
      input(world.rateLimit, { pods: [imaged[0]], proxies: observed({ a: "1.26.3" }) }),
    ),
  );
  assert.ok(world.envoyFilter);
  // b (image 1.25.2) selected now, not connected yet: it will reject the listener once it is.
  const plan = reconcileRateLimit(input(world.rateLimit, {
    pods: imaged,
    envoyFilter: world.envoyFilter,
    proxies: observed({ a: "1.26.3" }),
  }));
  assert.equal(brief(cond(plan, "Ready")), "True Applied");
  const accepted = cond(plan, "Accepted");
  assert.equal(brief(accepted), "False ProxyTooOld");
  assert.match(accepted.message, /: b \(Istio 1\.25\.2, Envoy 1\.33, by its image\); such a proxy/);
  assert.equal((plan.status as Status).proxies?.notConnected, 1);
});

Deno.test("istiod's version wins over the image's, and a disagreement is said", () => {
  // a's image says 1.25.2 but its running agent says 1.26.3 (restarted with a newer one): taken.
  const swapped = [
    withImage(pods[0], "docker.io/istio/proxyv2:1.25.2"),
    withImage(pods[1], "docker.io/istio/proxyv2:1.26.1"),
  ];
  const applied = reconcileRateLimit(
    input(perClient(), { pods: [swapped[0]], proxies: observed({ a: "1.26.3" }) }),
  );
  assert.equal(brief(cond(applied, "Ready")), "True Applied");
  // b's image says 1.26.1 but its agent says 1.25.2: refused, and the image is named.
  const refused = reconcileRateLimit(
    input(perClient(), { pods: swapped, proxies: observed({ a: "1.26.3", b: "1.25.2" }) }),
  );
  assert.match(
    cond(refused, "Ready").message,
    /refuses the filter: b \(Istio 1\.25\.2, Envoy 1\.33; its image says Istio 1\.26\.1\); upgrade/,
  );
  // Agreeing sources say nothing more.
  const agreeing = reconcileRateLimit(
    input(perClient(), { pods: imaged, proxies: observed({ a: "1.26.3", b: "1.25.2" }) }),
  );
  assert.match(cond(agreeing, "Ready").message, /: b \(Istio 1\.25\.2, Envoy 1\.33\); upgrade/);
});

Deno.test("a proxy neither istiod lists nor its image dates: a new per-client generation waits", () => {
  let world: World = { rateLimit: rateLimit() };
  const digest = [pods[0], withImage(pods[1], DIGEST_ONLY)];
  world = applyPlan(world, reconcileRateLimit(input(world.rateLimit, { pods: digest })));
  const gen2 = {
    ...rateLimit({ generation: 2, buckets: PER_CLIENT }),
    status: world.rateLimit.status,
  };
  const at = (proxies: ProxyObservation) =>
    reconcileRateLimit(input(gen2, { pods: digest, envoyFilter: world.envoyFilter, proxies }));
  // b is not listed (it may be the old proxy, away a moment): generation 2 is not sent.
  const away = at(observed({ a: "1.26.3" }));
  assert.deepEqual(away.apply, []);
  assert.equal((away.status as Status).enforcedGeneration, 1);
  const ready = cond(away, "Ready");
  assert.equal(brief(ready), "False ProxyVersionUnknown");
  assert.equal(
    ready.message,
    "spec.local.buckets[0].perClient: per-client buckets need Envoy 1.34 (Istio 1.26) or later, and which Envoy 1 selected proxy runs is not known: istiod does not list it (not connected) and its image tag gives no Istio version: b; it is applied once istiod lists it with an Envoy that takes them, so generation 2 is not applied; generation 1 still enforced by EnvoyFilter demo/httpbin",
  );
  assert.equal(brief(cond(away, "Enforced")), "True Enforced");
  assert.deepEqual(away.events.map((e) => `${e.type} ${e.reason}`), [
    "Warning ProxyVersionUnknown",
  ]);
  // No answer from istiod yet: the same, and said.
  const noAnswer = at({ istiod: undefined, byPod: new Map() });
  assert.equal(brief(cond(noAnswer, "Ready")), "False ProxyVersionUnknown");
  assert.match(cond(noAnswer, "Ready").message, /\(not connected, or istiod not answering\)/);
  // b back, as Istio 1.26: applied. As 1.25: refused as too old, what the wait was for.
  const back = at(observed({ a: "1.26.3", b: "1.26.3" }));
  assert.equal(brief(cond(back, "Ready")), "True Applied");
  assert.equal(filterLimits(back.apply[0])?.perClient, true);
  assert.equal(
    brief(cond(at(observed({ a: "1.26.3", b: "1.25.2" })), "Ready")),
    "False ProxyTooOld",
  );
  // A tagged image needs no waiting: a's tag says 1.26.3 though istiod does not list it.
  const tagged = [withImage(pods[0], "docker.io/istio/proxyv2:1.26.3"), pods[1]];
  const plan = reconcileRateLimit(input(gen2, {
    pods: tagged,
    envoyFilter: world.envoyFilter,
    proxies: observed({ b: "1.26.3" }),
  }));
  assert.equal(brief(cond(plan, "Ready")), "True Applied");
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
