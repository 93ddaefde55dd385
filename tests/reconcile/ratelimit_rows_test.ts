/** Every row of RATELIMIT_STATES is reached by some input, with the row's condition and a message. */
import assert from "node:assert/strict";
import { rowOfStatus } from "../../src/reconcile/conditions.ts";
import type { Plan } from "../../src/reconcile/plan.ts";
import {
  RATELIMIT_STATES,
  type RateLimitInput,
  reconcileRateLimit,
} from "../../src/reconcile/ratelimit/mod.ts";
import { renderEnvoyFilter } from "../../src/reconcile/ratelimit/render.ts";
import { parseRateLimit } from "../../src/api/ratelimit.ts";
import type { Condition } from "../../src/api/common.ts";
import type { KubeObject } from "../../src/api/object.ts";
import {
  bucket,
  input,
  pod,
  proxyStatus,
  rateLimit,
  withImage,
  withProxy,
} from "./ratelimit_fixtures.ts";
import { proxyStatusOf } from "../../src/api/istiod.ts";

function ourFilter(rl: KubeObject): KubeObject {
  const parsed = parseRateLimit(rl);
  assert.ok(parsed.ok);
  return renderEnvoyFilter(parsed.value);
}

const invalid = rateLimit({ buckets: [{ path: "/headers", bucket: bucket(2, 2, "45s") }] });
const older = rateLimit({ name: "first", created: "2024-06-01T00:00:00Z" });

/** For each reason: an input that leads to it, and words its message must contain. */
const CASES: Record<string, { input: RateLimitInput; says: RegExp[] }> = {
  Applied: {
    input: input(rateLimit()),
    says: [
      /Limits of generation 1 applied to Pods with app=httpbin by EnvoyFilter demo\/httpbin/,
      /default bucket 10 tokens, 10 added every 30s/,
    ],
  },
  InvalidSpec: {
    input: input(invalid),
    says: [
      /limit not applied/,
      /spec\.local\.buckets\[0\]\.bucket\.fillInterval 45s is not a multiple of the default bucket's fillInterval 30s/,
    ],
  },
  Conflict: {
    input: input(rateLimit(), { peers: [older, rateLimit()], envoyFilter: ourFilter(rateLimit()) }),
    says: [/older RateLimit demo\/first/, /not applied/],
  },
  MeshMissing: {
    input: input(rateLimit(), { meshInstalled: false }),
    says: [/envoyfilters\.networking\.istio\.io/, /not applied/],
  },
  MeshWide: {
    // In Istio's root namespace, a selector that takes a workload's Pod in another namespace.
    input: input(rateLimit({ namespace: "istio-system" }), {
      pods: [withProxy(pod("app-0", { app: "httpbin" }, "demo"), "sidecar")],
    }),
    says: [
      /selects Pods that are not ingress gateways \(demo\/app-0\)/,
      /in istio-system, the mesh's root namespace, an EnvoyFilter applies to every namespace/,
      /this one is not applied/,
    ],
  },
  ProxyTooOld: {
    // Per-client buckets, and istiod says the selected Pod's proxy is Istio 1.25 (Envoy 1.33).
    input: input(
      rateLimit({ buckets: [{ perClient: { header: "X-Api-Key" }, bucket: bucket(2, 1, "1m") }] }),
      {
        pods: [withProxy(pod("app-0", { app: "httpbin" }), "sidecar")],
        proxies: {
          istiod: { reachable: true, proxies: 1 },
          byPod: new Map([["demo/app-0", proxyStatusOf(proxyStatus("app-0", "1.25.2"))!]]),
        },
      },
    ),
    says: [
      /spec\.local\.buckets\[0\]\.perClient: per-client buckets need Envoy 1\.34 \(Istio 1\.26\) or later/,
      /1 selected proxy reports an older one, which refuses the filter: app-0 \(Istio 1\.25\.2, Envoy 1\.33\)/,
      /this one is not applied/,
    ],
  },
  ProxyVersionUnknown: {
    // Per-client buckets; istiod answered but does not list the selected Pod's proxy, whose image
    // tag is no Istio version.
    input: input(
      rateLimit({ buckets: [{ perClient: { header: "X-Api-Key" }, bucket: bucket(2, 1, "1m") }] }),
      {
        pods: [
          withImage(withProxy(pod("app-0", { app: "httpbin" }), "sidecar"), "istio/proxyv2:latest"),
        ],
        proxies: { istiod: { reachable: true, proxies: 0 }, byPod: new Map() },
      },
    ),
    says: [
      /spec\.local\.buckets\[0\]\.perClient: per-client buckets need Envoy 1\.34 \(Istio 1\.26\) or later/,
      /which Envoy 1 selected proxy runs is not known: istiod does not list it \(not connected\) and its image tag gives no Istio version: app-0/,
      /this one is not applied/,
    ],
  },
  EngineNotInstalled: {
    // Global limits only, and the operator runs no engine (the default of the input).
    input: input(
      rateLimit({
        local: false,
        global: { default: { limit: { requests: 100, unit: "Minute" } } },
      }),
    ),
    says: [
      /spec\.global: the operator does not run the rate limit engine \(--global-redis-secret\), and without spec\.local there is nothing else to apply/,
      /this one is not applied/,
    ],
  },
  ApplyFailed: {
    input: input(rateLimit(), {
      lastOutcome: {
        ok: false,
        generation: 1,
        error: "admission webhook denied the request",
        failed: {
          apiVersion: "networking.istio.io/v1alpha3",
          kind: "EnvoyFilter",
          namespace: "demo",
          name: "httpbin",
        },
      },
    }),
    says: [/Applying EnvoyFilter demo\/httpbin failed: admission webhook denied the request/],
  },
};

function statusOf(plan: Plan) {
  return plan.status as {
    state: string;
    description: string;
    observedGeneration?: number;
    enforcedGeneration?: number;
    podsSelected?: number;
    podsWithSidecar?: number;
    conditions: Condition[];
  };
}

/** The Ready condition of a plan's status. */
function ready(plan: Plan): Condition {
  return statusOf(plan).conditions.find((c) => c.type === "Ready")!;
}

for (const row of RATELIMIT_STATES) {
  Deno.test(`RateLimit row ${row.no}: ${row.state} / ${row.type} ${row.status} ${row.reason}`, () => {
    const c = CASES[row.reason];
    assert.ok(c, `no case for reason ${row.reason}`);
    const plan = reconcileRateLimit(c.input);
    const status = statusOf(plan);
    assert.equal(rowOfStatus(RATELIMIT_STATES, status), row);
    assert.equal(status.state, row.state);
    const global = row.reason === "EngineNotInstalled";
    assert.deepEqual(status.conditions.map((x) => x.type), [
      "Ready",
      "Enforced",
      "Accepted",
      ...(global ? ["GlobalEnforced"] : []),
    ]);
    const cond = status.conditions[0];
    assert.deepEqual([cond.type, cond.status, cond.reason], [row.type, row.status, row.reason]);
    assert.equal(cond.observedGeneration, 1);
    assert.equal(status.observedGeneration, 1);
    assert.ok(status.description.startsWith(cond.message), status.description);
    for (const re of c.says) assert.match(cond.message, re);
    // No Pod in these inputs: Ready's Event, and for a limit in place the Enforced one (Normal:
    // a first look that finds no Pod is news, not a drop in enforcement).
    const inPlace = row.reason === "Applied";
    assert.deepEqual(
      plan.events.map((e) => `${e.type} ${e.reason}`),
      [
        `${row.state === "Ready" ? "Normal" : "Warning"} ${row.reason}`,
        ...(inPlace ? ["Normal NoPodSelected"] : []),
        ...(global ? ["Warning EngineNotInstalled"] : []),
      ],
    );
  });
}

Deno.test("Ready applies the EnvoyFilter; ApplyFailed retries it; a conflict withdraws ours", () => {
  for (const row of RATELIMIT_STATES) {
    const c = CASES[row.reason];
    const plan = reconcileRateLimit(c.input);
    const applies = row.reason === "Applied" || row.reason === "ApplyFailed";
    assert.equal(plan.apply.length, applies ? 1 : 0, row.reason);
    if (applies) assert.equal(plan.apply[0].kind, "EnvoyFilter");
    // Conflict's input holds our filter, and an older RateLimit claims its Pods.
    assert.equal(plan.delete.length, row.reason === "Conflict" ? 1 : 0, row.reason);
  }
});

Deno.test("an ApplyFailed outcome of an older generation is ignored", () => {
  const c = CASES.ApplyFailed;
  const plan = reconcileRateLimit({
    ...c.input,
    lastOutcome: { ...c.input.lastOutcome!, generation: 0 },
  });
  assert.equal(ready(plan).reason, "Applied");
});

Deno.test("a filter of the same name that is not ours is neither overwritten nor deleted", () => {
  const foreign: KubeObject = {
    apiVersion: "networking.istio.io/v1alpha3",
    kind: "EnvoyFilter",
    metadata: { name: "httpbin", namespace: "demo" },
    spec: {},
  };
  for (const rl of [rateLimit(), invalid]) {
    const plan = reconcileRateLimit(input(rl, { envoyFilter: foreign }));
    assert.deepEqual(plan.apply, []);
    assert.deepEqual(plan.delete, []);
    assert.equal(statusOf(plan).state, "Error");
  }
  const plan = reconcileRateLimit(input(rateLimit(), { envoyFilter: foreign }));
  assert.match(
    statusOf(plan).description,
    /EnvoyFilter demo\/httpbin exists and was not created for this RateLimit/,
  );
});

Deno.test("a filter owned by an earlier RateLimit of the same name (other uid) is not ours", () => {
  const old = ourFilter(rateLimit({ uid: "old-uid" }));
  const plan = reconcileRateLimit(input(rateLimit(), { envoyFilter: old }));
  assert.equal(ready(plan).reason, "Conflict");
});

Deno.test("lastTransitionTime moves only when the condition's status changes", () => {
  const first = reconcileRateLimit(input(rateLimit(), { now: Date.UTC(2025, 0, 1) }));
  const t0 = statusOf(first).conditions[0].lastTransitionTime;
  const withStatus = rateLimit({ status: first.status });
  // Same status, later: time kept, no event.
  const again = reconcileRateLimit(input(withStatus, { now: Date.UTC(2025, 0, 2) }));
  assert.equal(statusOf(again).conditions[0].lastTransitionTime, t0);
  assert.deepEqual(again.events, []);
  // MeshMissing (False) then Conflict (also False): the time changes once.
  const down = reconcileRateLimit(
    input(withStatus, { now: Date.UTC(2025, 0, 3), meshInstalled: false }),
  );
  const t1 = statusOf(down).conditions[0].lastTransitionTime;
  assert.notEqual(t1, t0);
  const conflict = reconcileRateLimit(
    input(rateLimit({ status: down.status }), { now: Date.UTC(2025, 0, 4), peers: [older] }),
  );
  assert.equal(statusOf(conflict).conditions[0].lastTransitionTime, t1);
  assert.equal(conflict.events.length, 1, "a new reason is announced");
});

Deno.test("a RateLimit being deleted writes no status and removes only its own filter", () => {
  const deleting = rateLimit();
  deleting.metadata.deletionTimestamp = "2025-01-02T00:00:00Z";
  const plan = reconcileRateLimit(input(deleting, { envoyFilter: ourFilter(rateLimit()) }));
  assert.equal(plan.status, undefined);
  assert.deepEqual(plan.apply, []);
  assert.deepEqual(plan.delete.map((r) => `${r.kind} ${r.namespace}/${r.name}`), [
    "EnvoyFilter demo/httpbin",
  ]);
});

Deno.test("a pod that matches two partly overlapping selectors makes them conflict", () => {
  const a = rateLimit({ name: "a", created: "2024-01-01T00:00:00Z", selectorLabels: { app: "x" } });
  const b = rateLimit({
    name: "b",
    created: "2024-01-02T00:00:00Z",
    selectorLabels: { tier: "web" },
  });
  const apart = reconcileRateLimit(input(b, { peers: [a, b], pods: [pod("p1", { app: "x" })] }));
  assert.equal(statusOf(apart).state, "Ready");
  const both = reconcileRateLimit(
    input(b, {
      peers: [a, b],
      pods: [pod("p1", { app: "x" }), pod("p2", { app: "x", tier: "web" })],
    }),
  );
  assert.equal(statusOf(both).conditions[0].reason, "Conflict");
  // The older one stays Ready either way.
  const first = reconcileRateLimit(
    input(a, { peers: [a, b], pods: [pod("p2", { app: "x", tier: "web" })] }),
  );
  assert.equal(statusOf(first).state, "Ready");
});
