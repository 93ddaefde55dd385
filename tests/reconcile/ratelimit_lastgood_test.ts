/**
 * Last known good: a refused update (invalid, or conflicting with an older RateLimit) keeps the
 * EnvoyFilter of the last valid generation, whose annotation is the record of what is enforced,
 * so a restarted operator (no status, no memory) decides the same. An invalid create applies
 * nothing; an older RateLimit's claim withdraws a kept filter; deletion removes it.
 */
import assert from "node:assert/strict";
import type { Condition } from "../../src/api/common.ts";
import type { Plan } from "../../src/reconcile/plan.ts";
import { reconcileRateLimit } from "../../src/reconcile/ratelimit/mod.ts";
import { GENERATION_ANNOTATION, renderedGeneration } from "../../src/reconcile/ratelimit/render.ts";
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

interface Status {
  state: string;
  description: string;
  observedGeneration?: number;
  enforcedGeneration?: number;
  podsSelected?: number;
  podsWithSidecar?: number;
  conditions: Condition[];
}

const statusOf = (p: Plan | World) => ("rateLimit" in p ? p.rateLimit.status : p.status) as Status;
const ready = (p: Plan | World) => statusOf(p).conditions.find((c) => c.type === "Ready")!;

const badRule = [{ path: "/headers", bucket: bucket(2, 2, "45s") }];
const RULE_MESSAGE =
  "spec.local.buckets[0].bucket.fillInterval 45s is not a multiple of the default bucket's fillInterval 30s";

/** The world after generation 1 (valid) was applied and its status written. */
function enforcedAt1(opts: Parameters<typeof rateLimit>[0] = {}): World {
  const start: World = { rateLimit: rateLimit({ generation: 1, ...opts }) };
  return applyPlan(start, reconcileWorld(start, input(start.rateLimit)));
}

/** The user's edit: generation bumped, status as it was. */
function edit(world: World, opts: Parameters<typeof rateLimit>[0]): World {
  const gen = world.rateLimit.metadata.generation! + 1;
  return {
    ...world,
    rateLimit: { ...rateLimit({ ...opts, generation: gen }), status: world.rateLimit.status },
  };
}

Deno.test("an invalid update keeps the filter of the last valid generation and says so", () => {
  const before = enforcedAt1();
  assert.equal(renderedGeneration(before.envoyFilter!), 1);
  assert.equal(before.envoyFilter!.metadata.annotations?.[GENERATION_ANNOTATION], "1");
  const world = edit(before, { buckets: badRule });
  const plan = reconcileWorld(world, input(world.rateLimit));
  assert.deepEqual([plan.apply, plan.delete], [[], []], "nothing enforced is touched");
  const s = statusOf(plan);
  assert.equal(s.state, "Error");
  assert.equal(ready(plan).reason, "InvalidSpec");
  assert.equal(
    ready(plan).message,
    `Invalid spec, generation 2 rejected: ${RULE_MESSAGE}; generation 1 still enforced by EnvoyFilter demo/httpbin`,
  );
  assert.equal(s.enforcedGeneration, 1);
  assert.equal(s.observedGeneration, 2);
  assert.deepEqual(plan.events.map((e) => `${e.type} ${e.reason}`), ["Warning InvalidSpec"]);
});

Deno.test("after a restart (no status, no memory) the filter on the cluster decides the same", () => {
  const before = enforcedAt1();
  const edited = edit(before, { buckets: badRule });
  const afterEdit = applyPlan(edited, reconcileWorld(edited, input(edited.rateLimit)));
  // A new operator: same cluster, and even a status lost or wiped.
  const { status: _lost, ...bare } = afterEdit.rateLimit;
  const fresh = reconcileWorld({ ...afterEdit, rateLimit: bare }, input(bare));
  assert.deepEqual([fresh.apply, fresh.delete], [[], []]);
  assert.equal(statusOf(fresh).enforcedGeneration, 1);
  assert.equal(ready(fresh).message, ready(afterEdit).message);
  // With the status it wrote before: not a single write.
  assert.deepEqual(writesOf(afterEdit, reconcileWorld(afterEdit, input(afterEdit.rateLimit))), []);
});

Deno.test("an invalid create applies nothing and enforces nothing", () => {
  const plan = reconcileRateLimit(input(rateLimit({ buckets: badRule })));
  assert.deepEqual([plan.apply, plan.delete], [[], []]);
  assert.equal(ready(plan).message, `Invalid spec, limit not applied: ${RULE_MESSAGE}`);
  assert.equal(statusOf(plan).enforcedGeneration, undefined);
  const enforced = statusOf(plan).conditions.find((c) => c.type === "Enforced")!;
  assert.deepEqual([enforced.status, enforced.reason], ["False", "NotApplied"]);
  assert.equal(statusOf(plan).podsSelected, undefined);
});

Deno.test("a refused update that moves the selector: the figures follow the filter in force", () => {
  const pods = [pod("old-1", { app: "httpbin" }), pod("new-1", { app: "next" })];
  const before = enforcedAt1();
  const world = edit(before, { selectorLabels: { app: "next" }, buckets: badRule });
  const plan = reconcileWorld(world, input(world.rateLimit, { pods }));
  assert.equal(statusOf(plan).podsSelected, 1);
  const enforced = statusOf(plan).conditions.find((c) => c.type === "Enforced")!;
  assert.match(enforced.message, /with app=httpbin .*: old-1;/);
});

Deno.test("a valid update that conflicts with an older RateLimit keeps the last good filter", () => {
  const older = rateLimit({
    name: "first",
    created: "2024-01-01T00:00:00Z",
    selectorLabels: { app: "web" },
  });
  const before = enforcedAt1();
  const world = edit(before, { selectorLabels: { app: "web" } });
  const plan = reconcileWorld(world, input(world.rateLimit, { peers: [older, world.rateLimit] }));
  assert.deepEqual([plan.apply, plan.delete], [[], []]);
  assert.equal(ready(plan).reason, "Conflict");
  assert.match(
    ready(plan).message,
    /^spec\.selectorLabels app=web selects the same pods as the older RateLimit demo\/first; .*, so generation 2 is not applied; generation 1 still enforced by EnvoyFilter demo\/httpbin$/,
  );
  assert.equal(statusOf(plan).enforcedGeneration, 1);
});

Deno.test("a kept filter is withdrawn once an older RateLimit claims its Pods", () => {
  const before = enforcedAt1();
  const world = edit(before, { buckets: badRule });
  // An older RateLimit now selects the Pods the kept filter holds.
  const older = rateLimit({ name: "first", created: "2024-01-01T00:00:00Z" });
  const plan = reconcileWorld(world, input(world.rateLimit, { peers: [older] }));
  assert.deepEqual(plan.delete.map((r) => `${r.kind} ${r.namespace}/${r.name}`), [
    "EnvoyFilter demo/httpbin",
  ]);
  assert.match(
    ready(plan).message,
    /generation 2 rejected: .*; the limit of an earlier generation was withdrawn because the older RateLimit demo\/first selects the same pods; limit not applied$/,
  );
  assert.equal(statusOf(plan).enforcedGeneration, undefined);
});

Deno.test("a newer RateLimit never touches the older one's filter", () => {
  const first = enforcedAt1({ name: "first", created: "2024-01-01T00:00:00Z" });
  const newer = rateLimit({ name: "second", created: "2024-02-01T00:00:00Z" });
  // The newer one sees the older one's filter in its namespace, never as its own.
  const plan = reconcileRateLimit(
    input(newer, {
      peers: [first.rateLimit, newer],
      peerFilters: new Map(first.envoyFilter ? [["demo/first", first.envoyFilter]] : []),
      envoyFilter: undefined,
    }),
  );
  assert.equal(ready(plan).reason, "Conflict");
  assert.deepEqual([plan.apply, plan.delete], [[], []]);
  // And the older one, reconciled with the newer one present, keeps its filter as it is.
  const again = reconcileWorld(first, input(first.rateLimit, { peers: [first.rateLimit, newer] }));
  assert.deepEqual(writesOf(first, again), []);
});

Deno.test("ApplyFailed on an update: the filter in place is reported as still enforced", () => {
  const before = enforcedAt1();
  const world = edit(before, { defaultBucket: bucket(5, 5, "30s") });
  const failed = {
    ok: false,
    generation: 2,
    error: "admission webhook denied the request.",
    failed: {
      apiVersion: "networking.istio.io/v1alpha3",
      kind: "EnvoyFilter",
      namespace: "demo",
      name: "httpbin",
    },
  };
  const plan = reconcileWorld(world, input(world.rateLimit, { lastOutcome: failed }));
  assert.equal(plan.apply.length, 1, "tries again");
  assert.equal(
    ready(plan).message,
    "Applying EnvoyFilter demo/httpbin failed: admission webhook denied the request; generation 1 still enforced by EnvoyFilter demo/httpbin",
  );
  assert.equal(statusOf(plan).enforcedGeneration, 1);
});

Deno.test("a filter without the generation annotation (an older operator's) is kept all the same", () => {
  const before = enforcedAt1();
  const legacy: KubeObject = structuredClone(before.envoyFilter!);
  delete legacy.metadata.annotations;
  const world = edit({ ...before, envoyFilter: legacy }, { buckets: badRule });
  const plan = reconcileWorld(world, input(world.rateLimit));
  assert.deepEqual(plan.delete, []);
  assert.match(ready(plan).message, /an earlier generation still enforced/);
  assert.equal(statusOf(plan).enforcedGeneration, undefined);
});

Deno.test("every refusal names the field and the rule", () => {
  const cases: [Parameters<typeof rateLimit>[0], RegExp][] = [
    [{ buckets: badRule }, /spec\.local\.buckets\[0\]\.bucket\.fillInterval 45s is not a multiple/],
    [
      { defaultBucket: { maxTokens: 0, tokensPerFill: 1, fillInterval: "30s" } },
      /spec\.local\.defaultBucket\.maxTokens/,
    ],
    [{ selectorLabels: {} }, /spec\.selectorLabels/],
    [
      { buckets: [{ bucket: bucket(1, 1, "30s") }] },
      /spec\.local\.buckets\[0\].*path, pathPrefix, methods, hosts, headers, queryParams or perClient/,
    ],
  ];
  for (const [opts, re] of cases) {
    const before = enforcedAt1();
    const world = edit(before, opts);
    const plan = reconcileWorld(world, input(world.rateLimit));
    assert.match(ready(plan).message, re);
    assert.match(ready(plan).message, /generation 1 still enforced/, JSON.stringify(opts));
    assert.deepEqual(plan.delete, []);
  }
});

Deno.test("a spec field this operator does not know (a CRD newer than it) is refused, never ignored: the last good filter stays", () => {
  const before = enforcedAt1();
  // A newer CRD's narrowing field on a rule: ignored, the rule would take every request.
  const world = edit(before, { buckets: [{ path: "/headers", bucket: bucket(1, 1, "30s") }] });
  const spec = world.rateLimit.spec as { local: { buckets: Record<string, unknown>[] } };
  spec.local.buckets[0].sourceCIDRs = ["10.0.0.0/8"];
  const plan = reconcileWorld(world, input(world.rateLimit));
  assert.deepEqual([plan.apply, plan.delete], [[], []], "nothing enforced is touched");
  assert.equal(ready(plan).reason, "InvalidSpec");
  assert.equal(
    ready(plan).message,
    "Invalid spec, generation 2 rejected: spec.local.buckets[0].sourceCIDRs: unknown field (this operator does not know it: is the CRD newer than the operator?); generation 1 still enforced by EnvoyFilter demo/httpbin",
  );
  // A metadata field it does not know is the API server's, not the spec's: it changes nothing.
  const extra = structuredClone(before.rateLimit);
  (extra.metadata as Record<string, unknown>).somethingNew = "x";
  const world2 = { ...before, rateLimit: extra };
  const again = reconcileWorld(world2, input(extra));
  assert.equal(ready(again).reason, ready(before).reason);
  const baseline = reconcileWorld(before, input(before.rateLimit));
  assert.deepEqual(writesOf(world2, again), writesOf(before, baseline));
  assert.deepEqual(again.apply, baseline.apply);
});
