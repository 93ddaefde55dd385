/**
 * Enforcement beside Ready: the Pods the limit in place selects, those with a mesh sidecar, the
 * Enforced condition with a reason for each way a limit can fail to bite, a Warning Event when it
 * drops, and no write while the figures stay the same.
 */
import assert from "node:assert/strict";
import type { Condition } from "../../src/api/common.ts";
import type { Plan } from "../../src/reconcile/plan.ts";
import { ENFORCED_ROWS, reconcileRateLimit } from "../../src/reconcile/ratelimit/mod.ts";
import { enforcement } from "../../src/reconcile/ratelimit/status.ts";
import { NAMED_PODS } from "../../src/reconcile/ratelimit/scope.ts";
import type { KubeObject } from "../../src/api/object.ts";
import {
  applyPlan,
  bucket,
  input,
  pod,
  rateLimit,
  reconcileWorld,
  type World,
  writesOf,
} from "./ratelimit_fixtures.ts";

type Status = { podsSelected?: number; podsWithSidecar?: number; conditions: Condition[] };

/** A Pod of `labels` with a sidecar made the given way, or none. */
function meshPod(
  name: string,
  how: "container" | "native" | "annotation" | "none" | "plain-init" | "router",
  labels: Record<string, string> = { app: "httpbin" },
  namespace = "demo",
): KubeObject {
  const p = pod(name, labels, namespace);
  const proxy = { name: "istio-proxy", image: "proxyv2" };
  const app = { name: "app", image: "app" };
  if (how === "container") p.spec = { containers: [app, proxy] };
  if (how === "native") {
    p.spec = { initContainers: [{ ...proxy, restartPolicy: "Always" }], containers: [app] };
  }
  if (how === "plain-init") p.spec = { initContainers: [proxy], containers: [app] };
  if (how === "annotation") {
    p.metadata.annotations = { "sidecar.istio.io/status": '{"containers":["istio-proxy"]}' };
    p.spec = { containers: [app] };
  }
  if (how === "none") p.spec = { containers: [app] };
  if (how === "router") p.spec = { containers: [{ ...proxy, args: ["proxy", "router"] }] };
  return p;
}

const enforcedOf = (p: Plan | World) =>
  (("rateLimit" in p ? p.rateLimit.status : p.status) as Status).conditions
    .find((c) => c.type === "Enforced")!;
const figures = (p: Plan) => {
  const s = p.status as Status;
  return [s.podsSelected, s.podsWithSidecar];
};

Deno.test("every Enforced reason is reached, with its status and words a user can act on", () => {
  const gateway = rateLimit({
    namespace: "mesh-system",
    selectorLabels: { app: "mesh-ingressgateway" },
  });
  const cases: Record<string, { plan: Plan; says: RegExp }> = {
    Enforced: {
      plan: reconcileRateLimit(input(rateLimit(), {
        pods: [meshPod("a", "container"), meshPod("b", "native"), meshPod("c", "annotation")],
      })),
      // None of them names Envoy's rate limit stats in its stats inclusion: the message hints so.
      says:
        /^Enforced on all 3 Pods with app=httpbin: each has a mesh sidecar; 3 of them \(a, b, c\) do not export Envoy's rate limit stats/,
    },
    SidecarMissing: {
      plan: reconcileRateLimit(input(rateLimit(), {
        pods: [meshPod("a", "container"), meshPod("b", "none"), meshPod("c", "plain-init")],
      })),
      says:
        /^2 of 3 Pods with app=httpbin have no mesh sidecar, so their requests are not limited: b, c; enable sidecar injection/,
    },
    NoPodSelected: {
      plan: reconcileRateLimit(input(rateLimit(), { pods: [meshPod("x", "container", {})] })),
      says:
        /^No Pod in namespace demo has app=httpbin, so the limit protects nothing yet; check spec\.selectorLabels/,
    },
    ProxyMismatch: {
      // A refused generation keeps the sidecar filter of the last good one, and the Pods now run
      // as gateways: a sidecar's patches do not reach a router.
      plan: reconcileRateLimit(
        input(rateLimit({ generation: 2, defaultBucket: bucket(0, 1, "1s") }), {
          envoyFilter: reconcileRateLimit(input(rateLimit())).apply[0],
          pods: [meshPod("a", "router"), meshPod("b", "router")],
        }),
      ),
      says:
        /^2 of 2 Pods with app=httpbin run a proxy that does not apply a sidecar's \(SIDECAR_INBOUND\) patches, so their requests are not limited: a, b$/,
    },
    NotApplied: {
      plan: reconcileRateLimit(input(rateLimit(), { meshInstalled: false })),
      says: /^No limit is in place/,
    },
  };
  for (const row of ENFORCED_ROWS) {
    const c = cases[row.reason];
    assert.ok(c, `no case for ${row.reason}`);
    const cond = enforcedOf(c.plan);
    assert.deepEqual([cond.status, cond.reason], [row.status, row.reason]);
    assert.match(cond.message, c.says);
    assert.ok((c.plan.status as { description: string }).description.includes(cond.message));
  }
  assert.deepEqual(figures(cases.Enforced.plan), [3, 3]);
  assert.deepEqual(figures(cases.SidecarMissing.plan), [3, 1]);
  assert.deepEqual(figures(cases.NoPodSelected.plan), [0, 0]);
  assert.deepEqual(figures(cases.NotApplied.plan), [undefined, undefined]);
  assert.deepEqual(figures(cases.ProxyMismatch.plan), [2, 0]);
  // The gateway case counts the gateway's Pods and says so.
  const gw = reconcileRateLimit(input(gateway, {
    pods: [meshPod("gw-1", "router", { app: "mesh-ingressgateway" }, "mesh-system")],
  }));
  assert.equal(
    enforcedOf(gw).message,
    "Enforced on the one ingress gateway Pod with app=mesh-ingressgateway, which runs the gateway's proxy; its proxy does not export Envoy's rate limit stats (http_local_rate_limiter) unless the mesh-wide proxyStatsMatcher names them: to see them, annotate the Pod template with sidecar.istio.io/statsInclusionPrefixes: http_local_rate_limiter",
  );
  assert.match(enforcedOf(reconcileRateLimit(input(gateway))).message, /^No ingress gateway Pod/);
});

Deno.test("Pods in Istio's ambient mode are named as such: ztunnel carries their traffic, which no EnvoyFilter reaches", () => {
  const ambient = (name: string, state = "enabled") => {
    const p = meshPod(name, "none");
    p.metadata.annotations = { "ambient.istio.io/redirection": state };
    return p;
  };
  const enforced = (pods: KubeObject[]) =>
    enforcedOf(reconcileRateLimit(input(rateLimit(), { pods })));
  // All of those without a sidecar are in ambient mode.
  const all = enforced([meshPod("a", "container"), ambient("b"), ambient("c")]);
  assert.equal(all.reason, "SidecarMissing");
  assert.equal(
    all.message,
    "2 of 3 Pods with app=httpbin have no mesh sidecar, so their requests are not limited: b, c; they are in Istio's ambient mode, whose ztunnel an EnvoyFilter does not reach; enable sidecar injection for them (e.g. namespace label istio-injection=enabled; a Pod with a sidecar leaves ambient mode) and restart them",
  );
  assert.match(
    enforced([ambient("b")]).message,
    /: b; it is in Istio's ambient mode, whose ztunnel an EnvoyFilter does not reach; enable sidecar injection for it/,
  );
  // Some of them; one only pending enrolment (not yet carried by ztunnel) is not named.
  assert.match(
    enforced([ambient("b"), meshPod("c", "none"), ambient("d", "pending")]).message,
    /: b, c, d; 1 of them \(b\) is in Istio's ambient mode, whose/,
  );
  // None: the message is as before.
  assert.doesNotMatch(enforced([meshPod("c", "none")]).message, /ambient/);
});

Deno.test("only live Pods of the namespace that the selector selects are counted", () => {
  const finished = meshPod("done", "none");
  finished.status = { phase: "Succeeded" };
  const leaving = meshPod("leaving", "none");
  leaving.metadata.deletionTimestamp = "2025-01-01T00:00:00Z";
  const plan = reconcileRateLimit(input(rateLimit(), {
    pods: [
      meshPod("a", "container"),
      meshPod("elsewhere", "none", { app: "httpbin" }, "other"),
      meshPod("web", "none", { app: "web" }),
      finished,
      leaving,
    ],
  }));
  assert.deepEqual(figures(plan), [1, 1]);
  assert.equal(enforcedOf(plan).reason, "Enforced");
});

Deno.test(`a message names at most ${NAMED_PODS} Pods, sorted, and counts the rest`, () => {
  const pods = ["e", "b", "d", "a", "c"].map((n) => meshPod(n, "none"));
  const e = enforcement({
    namespace: "demo",
    selector: { app: "httpbin" },
    contexts: ["SIDECAR_INBOUND"],
    meshWide: false,
  }, pods);
  assert.match(e.condition.message, /: a, b, c and 2 more;/);
  const one = enforcement({
    namespace: "demo",
    selector: { app: "httpbin" },
    contexts: ["SIDECAR_INBOUND"],
    meshWide: false,
  }, [
    meshPod("a", "none"),
  ]);
  assert.match(
    one.condition.message,
    /^1 of 1 Pod with app=httpbin has no mesh sidecar, so its requests are not limited: a; enable sidecar injection for it .* and restart it$/,
  );
});

Deno.test("a Warning Event when enforcement drops; none while the figures stay", () => {
  const rl = rateLimit();
  const step = (world: World, pods: KubeObject[]) => {
    const plan = reconcileWorld(world, input(world.rateLimit, { pods }));
    return { plan, world: applyPlan(world, plan) };
  };
  let s = step({ rateLimit: rl }, [meshPod("a", "container"), meshPod("b", "container")]);
  assert.deepEqual(s.plan.events.map((e) => `${e.type} ${e.reason}`), [
    "Normal Applied",
    "Normal Enforced",
  ]);
  // At rest: the same Pods again, later: nothing written, no Event.
  const rest = reconcileWorld(
    s.world,
    input(s.world.rateLimit, {
      pods: [meshPod("a", "container"), meshPod("b", "container")],
      now: 1_800_000_000_000,
    }),
  );
  assert.deepEqual(writesOf(s.world, rest), []);
  // One more Pod with its sidecar: a figure changes (one status write), the condition does not.
  s = step(s.world, [
    meshPod("a", "container"),
    meshPod("b", "container"),
    meshPod("c", "container"),
  ]);
  assert.deepEqual(s.plan.events, []);
  assert.deepEqual(figures(s.plan), [3, 3]);
  // A Pod without a sidecar arrives: enforcement drops.
  s = step(s.world, [meshPod("a", "container"), meshPod("b", "container"), meshPod("c", "none")]);
  assert.deepEqual(s.plan.events.map((e) => `${e.type} ${e.reason}`), ["Warning SidecarMissing"]);
  assert.match(s.plan.events[0].message, /1 of 3 Pods .*: c;/);
  // It drops further: another Warning naming both.
  s = step(s.world, [meshPod("a", "container"), meshPod("b", "none"), meshPod("c", "none")]);
  assert.deepEqual(s.plan.events.map((e) => `${e.type} ${e.reason}`), ["Warning SidecarMissing"]);
  // All Pods gone.
  s = step(s.world, []);
  assert.deepEqual(s.plan.events.map((e) => `${e.type} ${e.reason}`), ["Warning NoPodSelected"]);
  // Back: a Normal Event, and lastTransitionTime moves only with the status.
  const before = enforcedOf(s.world).lastTransitionTime;
  s = step(s.world, [meshPod("a", "container")]);
  assert.deepEqual(s.plan.events.map((e) => `${e.type} ${e.reason}`), ["Normal Enforced"]);
  assert.equal(enforcedOf(s.world).lastTransitionTime, before, "same `now`, status changed");
});

Deno.test("Ready is about the filter, Enforced about the Pods: a bad spec does not hide them", () => {
  const pods = [meshPod("a", "container")];
  const start: World = { rateLimit: rateLimit() };
  const world = applyPlan(start, reconcileWorld(start, input(start.rateLimit, { pods })));
  const edited = {
    ...world,
    rateLimit: {
      ...rateLimit({ generation: 2, buckets: [{ path: "/x", bucket: bucket(1, 1, "45s") }] }),
      status: world.rateLimit.status,
    },
  };
  const plan = reconcileWorld(edited, input(edited.rateLimit, { pods }));
  assert.equal((plan.status as { state: string }).state, "Error");
  assert.equal(enforcedOf(plan).reason, "Enforced", "generation 1 still bites on its Pod");
  assert.deepEqual(figures(plan), [1, 1]);
});
