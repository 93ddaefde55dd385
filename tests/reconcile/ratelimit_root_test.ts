/**
 * The mesh's root namespace: its EnvoyFilters reach every namespace, so a RateLimit there may limit
 * only the ingress gateway. One that would reach any other Pod is refused with nothing applied; an
 * allowed one counts its Pods and checks its conflicts in every namespace; and a refused one never
 * blocks a team's own limit.
 */
import assert from "node:assert/strict";
import type { Condition } from "../../src/api/common.ts";
import type { Plan } from "../../src/reconcile/plan.ts";
import { reconcileRateLimit } from "../../src/reconcile/ratelimit/mod.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { bucket, input, pod, rateLimit, withProxy } from "./ratelimit_fixtures.ts";

type Status = {
  state: string;
  podsSelected?: number;
  podsWithSidecar?: number;
  enforcedGeneration?: number;
  conditions: Condition[];
};
const statusOf = (p: Plan) => p.status as Status;
const cond = (p: Plan, type: string) => statusOf(p).conditions.find((c) => c.type === type)!;
const contexts = (ef: KubeObject) =>
  (ef.spec as { configPatches: { match: { context: string } }[] }).configPatches
    .map((p) => p.match.context);

const TLS = { "security.istio.io/tlsMode": "istio" };
/** Injected workloads in two namespaces, and gateways in the root namespace and in `ingress`. */
const pods = [
  withProxy(pod("httpbin-0", { app: "httpbin", ...TLS }, "demo"), "sidecar"),
  withProxy(pod("web-0", { app: "web", ...TLS }, "shop"), "sidecar"),
  withProxy(pod("gw-0", { istio: "ingressgateway", ...TLS }, "istio-system"), "router"),
  withProxy(pod("gw-1", { istio: "ingressgateway", ...TLS }, "ingress"), "router"),
];
const GATEWAY = { istio: "ingressgateway" };

Deno.test("root namespace: a selector reaching workloads of other namespaces is refused, nothing applied", () => {
  const rl = rateLimit({ name: "everyone", namespace: "istio-system", selectorLabels: TLS });
  const plan = reconcileRateLimit(input(rl, { pods }));
  assert.deepEqual(plan.apply, []);
  assert.equal(statusOf(plan).state, "Error");
  const ready = cond(plan, "Ready");
  assert.deepEqual([ready.status, ready.reason], ["False", "MeshWide"]);
  assert.match(
    ready.message,
    /^spec\.selectorLabels security\.istio\.io\/tlsMode=istio selects Pods that are not ingress gateways \(demo\/httpbin-0, shop\/web-0\); in istio-system, the mesh's root namespace, an EnvoyFilter applies to every namespace/,
  );
  assert.equal(cond(plan, "Enforced").reason, "NotApplied");
  // A Pod without any proxy is not a gateway either.
  const bare = pod("job-0", { app: "job", ...TLS }, "batch");
  const plain = reconcileRateLimit(input(rl, { pods: [pods[2], bare] }));
  assert.match(cond(plain, "Ready").message, /\(batch\/job-0\)/);
});

Deno.test("root namespace: a gateway limit counts the gateway's Pods in every namespace, as GATEWAY", () => {
  const rl = rateLimit({ name: "gateway", namespace: "istio-system", selectorLabels: GATEWAY });
  const plan = reconcileRateLimit(input(rl, { pods }));
  assert.equal(statusOf(plan).state, "Ready");
  assert.deepEqual(contexts(plan.apply[0]), ["GATEWAY", "GATEWAY"]);
  assert.deepEqual([statusOf(plan).podsSelected, statusOf(plan).podsWithSidecar], [2, 2]);
  assert.match(
    cond(plan, "Ready").message,
    /applied to ingress gateway Pods with istio=ingressgateway in every namespace/,
  );
  assert.match(cond(plan, "Enforced").message, /^Enforced on all 2 ingress gateway Pods/);
  // Before any gateway Pod exists it applies, for gateways: nothing to refuse, nothing reached.
  const early = reconcileRateLimit(input(rl));
  assert.deepEqual(contexts(early.apply[0]), ["GATEWAY", "GATEWAY"]);
  assert.equal(cond(early, "Enforced").reason, "NoPodSelected");
  assert.match(cond(early, "Enforced").message, /in any namespace/);
});

Deno.test("root namespace: a gateway shared with a namespace's own RateLimit is a Conflict, oldest wins", () => {
  const root = rateLimit({
    name: "gateway",
    namespace: "istio-system",
    selectorLabels: GATEWAY,
    created: "2024-01-01T00:00:00Z",
  });
  const team = rateLimit({
    name: "edge",
    namespace: "ingress",
    selectorLabels: GATEWAY,
    created: "2024-06-01T00:00:00Z",
  });
  const teamPods = pods.filter((p) => p.metadata.namespace === "ingress");
  const newer = reconcileRateLimit(input(team, { peers: [root], pods: teamPods }));
  assert.equal(cond(newer, "Ready").reason, "Conflict");
  assert.match(cond(newer, "Ready").message, /older RateLimit istio-system\/gateway/);
  assert.deepEqual(newer.apply, []);
  const older = reconcileRateLimit(input(root, { peers: [team], pods }));
  assert.equal(cond(older, "Ready").reason, "Applied", "the older root limit stays");
  // The other way round: the team's limit came first.
  const first = {
    ...team,
    metadata: { ...team.metadata, creationTimestamp: "2023-01-01T00:00:00Z" },
  };
  const late = reconcileRateLimit(input(root, { peers: [first], pods }));
  assert.equal(cond(late, "Ready").reason, "Conflict");
  assert.match(cond(late, "Ready").message, /older RateLimit ingress\/edge/);
});

Deno.test("root namespace: a refused root RateLimit never blocks a team's limit on its own Pods", () => {
  const root = rateLimit({
    name: "everyone",
    namespace: "istio-system",
    selectorLabels: TLS,
    created: "2020-01-01T00:00:00Z",
  });
  const team = rateLimit({ namespace: "demo", selectorLabels: { app: "httpbin" } });
  const demoPods = pods.filter((p) => p.metadata.namespace === "demo");
  const plan = reconcileRateLimit(input(team, { peers: [root], pods: demoPods }));
  assert.equal(cond(plan, "Ready").reason, "Applied");
  // Nor does a RateLimit of another ordinary namespace.
  const other = rateLimit({ name: "x", namespace: "shop", created: "2020-01-01T00:00:00Z" });
  const again = reconcileRateLimit(input(team, { peers: [other], pods: demoPods }));
  assert.equal(cond(again, "Ready").reason, "Applied");
});

Deno.test("root namespace: a bad update keeps the gateway limit; a workload Pod joining it withdraws it", () => {
  const good = rateLimit({ name: "gateway", namespace: "istio-system", selectorLabels: GATEWAY });
  const applied = reconcileRateLimit(input(good, { pods })).apply[0];
  const widened = rateLimit({
    name: "gateway",
    namespace: "istio-system",
    selectorLabels: TLS,
    generation: 2,
  });
  const kept = reconcileRateLimit(input(widened, { pods, envoyFilter: applied }));
  assert.equal(cond(kept, "Ready").reason, "MeshWide");
  assert.deepEqual([kept.apply, kept.delete], [[], []]);
  assert.equal(statusOf(kept).enforcedGeneration, 1);
  assert.match(cond(kept, "Ready").message, /generation 1 still enforced by EnvoyFilter/);
  // A workload Pod labelled like the gateway: the filter in place would reach it.
  const impostor = withProxy(pod("app-0", { ...GATEWAY }, "demo"), "sidecar");
  const gone = reconcileRateLimit(
    input(widened, { pods: [...pods, impostor], envoyFilter: applied }),
  );
  assert.deepEqual(gone.delete.map((r) => `${r.namespace}/${r.name}`), ["istio-system/gateway"]);
  assert.match(
    cond(gone, "Ready").message,
    /withdrawn because it reaches Pods that are not ingress gateways/,
  );
  assert.equal(cond(gone, "Enforced").reason, "NotApplied");
});

Deno.test("the root namespace is a setting: mesh-system in this project's mesh", () => {
  const rl = rateLimit({ namespace: "mesh-system", selectorLabels: { app: "httpbin" } });
  const workload = [withProxy(pod("httpbin-0", { app: "httpbin" }, "demo"), "sidecar")];
  const asIstio = reconcileRateLimit(input(rl, { pods: workload }));
  assert.equal(
    cond(asIstio, "Ready").reason,
    "Applied",
    "an ordinary namespace for Istio's default",
  );
  assert.equal(statusOf(asIstio).podsSelected, 0, "it reaches no Pod of demo");
  const asRoot = reconcileRateLimit(
    input(rl, { pods: workload, meshRootNamespace: "mesh-system" }),
  );
  assert.equal(cond(asRoot, "Ready").reason, "MeshWide");
});

Deno.test("a gateway is known by its Pods: istio=ingressgateway in istio-system is patched as GATEWAY", () => {
  // Istio's and Kyma's convention, outside this project's mesh-system: a router Pod decides.
  const rl = rateLimit({ namespace: "edge", selectorLabels: { tier: "front" } });
  const front = (name: string, kind: "sidecar" | "router") =>
    withProxy(pod(name, { tier: "front" }, "edge"), kind);
  const gw = reconcileRateLimit(input(rl, { pods: [front("gw-0", "router")] }));
  assert.deepEqual(contexts(gw.apply[0]), ["GATEWAY", "GATEWAY"]);
  assert.equal(cond(gw, "Enforced").reason, "Enforced");
  const side = reconcileRateLimit(input(rl, { pods: [front("app-0", "sidecar")] }));
  assert.deepEqual(contexts(side.apply[0]), ["SIDECAR_INBOUND", "SIDECAR_INBOUND"]);
  const both = reconcileRateLimit(
    input(rl, { pods: [front("gw-0", "router"), front("app-0", "sidecar")] }),
  );
  assert.deepEqual(contexts(both.apply[0]), [
    "SIDECAR_INBOUND",
    "SIDECAR_INBOUND",
    "GATEWAY",
    "GATEWAY",
  ]);
  assert.deepEqual([statusOf(both).podsSelected, statusOf(both).podsWithSidecar], [2, 2]);
  // Scaled to zero: the filter in place keeps its context, so nothing is rewritten.
  const none = reconcileRateLimit(input(rl, { envoyFilter: gw.apply[0] }));
  assert.deepEqual(contexts(none.apply[0]), ["GATEWAY", "GATEWAY"]);
  void bucket;
});
