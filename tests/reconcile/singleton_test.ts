/** Served and duplicate module objects, takeover, and reading peers of any shape. */
import assert from "node:assert/strict";
import fc from "fast-check";
import {
  asPeer,
  classifyModuleObject,
  decideServed,
  type Peer,
  servedPeer,
} from "../../src/reconcile/module/singleton.ts";
import { reconcileServerless } from "../../src/reconcile/serverless/mod.ts";
import { conditionOf, converge, inputOf, serverless, statusOf } from "./serverless_fixtures.ts";
import { carryOut } from "./plans_on_sim_store.ts";
import { deleting, heldClaim, isClaimingPlan, type World } from "./module_fixtures.ts";

const peer = (name: string, created: string, served?: string, namespace = "ns"): Peer => ({
  metadata: { name, namespace, creationTimestamp: created },
  ...(served ? { status: { served } } : {}),
});

const NO_CLAIM = { namespace: "platform-system", module: "serverless" } as const;

Deno.test("the oldest object is served; ties go to namespace/name", () => {
  const a = peer("a", "2026-01-02T00:00:00Z");
  const b = peer("b", "2026-01-01T00:00:00Z");
  const c = peer("c", "2026-01-01T00:00:00Z");
  assert.equal(servedPeer([a, b, c]), b);
  assert.equal(servedPeer([a, c, b]), b);
  assert.equal(servedPeer([]), undefined);
});

Deno.test("an object already served stays served even when an older one appears", () => {
  const younger = peer("young", "2026-01-05T00:00:00Z", "True");
  const older = peer("old", "2026-01-01T00:00:00Z", "False");
  assert.equal(servedPeer([older, younger]), younger);
  assert.deepEqual(decideServed(older, [older, younger]), { served: false, servedKey: "ns/young" });
  assert.deepEqual(decideServed(younger, [older]), { served: true });
});

Deno.test("every peer computes the same served object (property)", () => {
  const arbPeer = fc.record({
    name: fc.constantFrom("a", "b", "c", "d"),
    namespace: fc.constantFrom("x", "y"),
    created: fc.constantFrom("2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"),
    served: fc.constantFrom(undefined, "True", "False"),
  });
  fc.assert(
    fc.property(
      fc.uniqueArray(arbPeer, { selector: (p) => `${p.namespace}/${p.name}`, minLength: 1 }),
      (ps) => {
        const peers = ps.map((p) => peer(p.name, p.created, p.served, p.namespace));
        const served = peers.filter((p) => decideServed(p, peers).served);
        assert.equal(served.length, 1, "exactly one object is served");
        for (const p of peers) {
          const d = decideServed(p, [...peers].reverse());
          assert.equal(d.served, p === served[0], "order of peers does not matter");
        }
      },
    ),
    { seed: 42, numRuns: 300 },
  );
});

Deno.test("asPeer reads any shape without throwing", () => {
  for (
    const raw of [null, 1, "x", [], {}, { metadata: null }, { metadata: { name: 3 } }, {
      metadata: { name: "" },
    }]
  ) {
    assert.equal(asPeer(raw), undefined);
  }
  assert.deepEqual(asPeer({ metadata: { name: "n", namespace: 5 }, status: { served: "True" } }), {
    metadata: { name: "n" },
    status: { served: "True" },
  });
});

Deno.test("classifyModuleObject names what is wrong with unreadable metadata", () => {
  const r = classifyModuleObject(
    "Serverless",
    { metadata: { name: "x", generation: "one" } },
    [],
    NO_CLAIM,
  );
  assert.equal(r.kind, "malformed");
  assert.match(
    (r as { message: string }).message,
    /^The Serverless object is invalid: metadata\.generation: /,
  );
  const none = classifyModuleObject("Scaler", 42, [], NO_CLAIM);
  assert.match(
    (none as { message: string }).message,
    /^The Scaler object is invalid: metadata: is required/,
  );
});

Deno.test("takeover: when the served Serverless is deleted, the duplicate takes over and installs", () => {
  const first =
    converge({ object: serverless({}, { name: "first" }), others: [], installed: [] }).world;
  const second = serverless({}, {
    name: "second",
    namespace: "other",
    creationTimestamp: "2025-12-05T00:00:00Z",
  });
  // The second one, seen while the first is served: a duplicate.
  let w2: World = { object: second, others: [first.object!], installed: first.installed };
  const plan = reconcileServerless(inputOf(w2));
  assert.equal(statusOf(plan).served, "False");
  assert.equal(conditionOf(plan, "Configured")?.reason, "ServerlessDuplicated");
  w2 = carryOut(w2, plan);
  // The first is deleted: it removes its objects and its finalizer.
  let w1: World = {
    ...first,
    object: {
      ...first.object!,
      metadata: { ...first.object!.metadata, deletionTimestamp: "2026-01-01T00:00:00Z" },
    },
  };
  for (let i = 0; i < 3 && w1.object; i++) w1 = carryOut(w1, reconcileServerless(inputOf(w1)));
  assert.equal(w1.object, undefined, "the first is gone");
  assert.deepEqual(w1.installed, []);
  // The second takes over without user action and installs into its own namespace.
  const done = converge({ object: w2.object, others: [], installed: w1.installed }).world;
  const status = done.object?.status as { served: string; state: string };
  assert.equal(status.served, "True");
  assert.equal(status.state, "Ready");
  assert.ok(done.installed.length > 0);
  assert.ok(done.installed.every((o) => !o.metadata.namespace || o.metadata.namespace === "other"));
});

Deno.test("a duplicate that still carries the finalizer (two claims raced) gives it up", () => {
  const older = { ...serverless({}, { name: "a" }), status: { served: "True" } };
  const younger = {
    ...serverless({}, {
      name: "b",
      creationTimestamp: "2025-12-09T00:00:00Z",
      finalizers: ["serverless-manager.platform-project.io/deletion-hook"],
    }),
    status: { served: "True" },
  };
  const plan = reconcileServerless(inputOf({ object: younger, others: [older], installed: [] }));
  assert.equal(statusOf(plan).served, "False");
  assert.deepEqual(plan.finalizer, {
    remove: "serverless-manager.platform-project.io/deletion-hook",
  });
  assert.deepEqual([plan.apply, plan.delete], [[], []]);
});

Deno.test("claim: of two objects that each look oldest to their own reconcile, the claim decides", () => {
  // Seed 100159: `second` was reconciled alone and claimed; `third`, created in the same second,
  // wins the creationTimestamp tie by key but sees `second` without its served status yet.
  const second = serverless({}, { name: "second", namespace: "platform-system" });
  const third = serverless({}, { name: "third", namespace: "default" });
  const alone = reconcileServerless(
    inputOf({ object: second, others: [], installed: [], claim: null }),
  );
  assert.ok(isClaimingPlan(alone), "claims before writing anything else");
  assert.equal(alone.create?.[0].metadata.name, "serverless-served");
  assert.equal(
    (alone.create?.[0].spec as { holderIdentity: string }).holderIdentity,
    second.metadata.uid,
  );
  const afterClaim = carryOut({ object: second, others: [], installed: [], claim: null }, alone);
  // Without the claim, `third` would take it (the tie is broken by key: default/ < platform-system/).
  const blind = reconcileServerless(
    inputOf({ object: third, others: [second], installed: [], claim: null }),
  );
  assert.ok(isClaimingPlan(blind), "it would try to claim, and the API server would refuse it");
  const seen = reconcileServerless(
    inputOf({ object: third, others: [second], installed: [], claim: afterClaim.claim }),
  );
  assert.equal(statusOf(seen).served, "False");
  assert.match(
    conditionOf(seen, "Configured")!.message,
    /platform-system\/second is the one in use/,
  );
  // And `second`, holding the claim, is served even though `third` wins the tie.
  const served = reconcileServerless(
    inputOf({ object: second, others: [third], installed: [], claim: afterClaim.claim }),
  );
  assert.equal(statusOf(served).served, "True");
});

Deno.test("claim: a claim whose holder is gone is deleted, then taken", () => {
  const gone = serverless({}, { name: "gone" });
  const next = serverless({}, { name: "next", namespace: "other" });
  const stale = heldClaim("serverless", gone);
  const w: World = { object: next, others: [], installed: [], claim: stale };
  const plan = reconcileServerless(inputOf(w));
  assert.ok(isClaimingPlan(plan));
  assert.deepEqual(plan.delete, [{
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    namespace: "platform-system",
    name: "serverless-served",
  }]);
  const done = converge(carryOut(w, plan)).world;
  assert.equal((done.claim?.spec as { holderIdentity: string }).holderIdentity, next.metadata.uid);
  assert.equal((done.object?.status as { state: string }).state, "Ready");
});

Deno.test("claim: an object being deleted never claims", () => {
  const w = deleting({ object: serverless(), others: [], installed: [], claim: null });
  const plan = reconcileServerless(inputOf(w));
  assert.deepEqual(plan.create ?? [], []);
  assert.equal(statusOf(plan).state, "Deleting");
});
