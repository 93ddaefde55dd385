/**
 * E2E of issue 26's RateLimit features on one real control plane: shadow mode (the filter the API
 * server stores enforces 0% and marks what it would reject; `status.mode` and `-o wide` say
 * Shadow), a bad `spec.enforce` refused by the API server naming it with the filter untouched, the
 * switch to enforcing as a one-field edit, the gRPC status in the stored filter, the workload's
 * rate following a scale-up with no operator write once it is written; and per-client buckets: a
 * rule without a key or a bound over the CRD's refused by the API server naming the field, a valid
 * one stored with its wildcard descriptor and bound.
 */
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { type E2E, e2eSuite, waitFor } from "./harness.ts";
import { bucket, GATEWAY_API, meshDeployment, namespace } from "./fixtures.ts";
import { describe, statusOf } from "./status.ts";
import { assertNoWritesAtRest } from "./at_rest.ts";

const NS = "e2e-rl-features";

function deployment(replicas: number): KubeObject {
  return meshDeployment(NS, "orders", { app: "orders" }, replicas, true);
}

/** The RateLimit `orders`: `spec` and `local` beside its selector and default bucket. */
function orders(spec: Record<string, unknown>, local: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: GATEWAY_API,
    kind: "RateLimit",
    metadata: { name: "orders", namespace: NS },
    spec: {
      selectorLabels: { app: "orders" },
      ...spec,
      local: { defaultBucket: bucket(10, 5, "10s"), ...local },
    },
  };
}

function limit(enforce: unknown): KubeObject {
  return orders({ enforce });
}

interface Shown {
  state?: string;
  mode?: string;
  enforcedGeneration?: number;
  rates?: { bucket: string; perPod: string; workload: string }[];
}

/** Waits until the RateLimit's status has `want` (rates compared whole). */
function waitShown(env: E2E, want: Shown): Promise<KubeObject> {
  let last: KubeObject | undefined;
  return waitFor(`ratelimit ${NS}/orders: ${JSON.stringify(want)}`, async () => {
    last = await env.kube.get("ratelimit", "orders", NS);
    const s = statusOf(last) as Shown;
    const ok = Object.entries(want).every(([k, v]) =>
      JSON.stringify(s[k as keyof Shown]) === JSON.stringify(v)
    );
    return ok ? last : undefined;
  }, {
    timeoutMs: 120_000,
    describe: () => Promise.resolve(`${describe(last)} ${JSON.stringify(statusOf(last))}`),
  });
}

/** The per-route LocalRateLimit config of the stored EnvoyFilter. */
async function routeConfig(env: E2E): Promise<{ rv: string; cfg: Record<string, unknown> }> {
  const ef = await env.kube.get("envoyfilter", "orders", NS);
  const patches = (ef?.spec as { configPatches: { applyTo: string; patch: unknown }[] })
    .configPatches;
  const route = patches.find((p) => p.applyTo === "HTTP_ROUTE")!.patch as {
    value: { typed_per_filter_config: Record<string, Record<string, unknown>> };
  };
  return {
    rv: ef!.metadata.resourceVersion!,
    cfg: route.value.typed_per_filter_config["envoy.filters.http.local_ratelimit"],
  };
}

/** The limit with one per-client rule (`perClient` as written) and `maxClients`. */
function perClientLimit(perClient: unknown, maxClients: number): KubeObject {
  return orders({}, { maxClients, buckets: [{ perClient, bucket: bucket(2, 1, "10s") }] });
}

const enforcedShare = (cfg: Record<string, unknown>) =>
  (cfg.filter_enforced as { default_value: { numerator: number } }).default_value.numerator;

e2eSuite("ratelimit-features", async (env, t) => {
  const ready = await env.step(t, "CRDs and the operator", async () => {
    await env.installCrds();
    await env.startServing({ identity: "rl-f" });
    await env.kube.apply([namespace(NS)]);
  });
  if (!ready) return;

  await env.step(
    t,
    "shadow mode: stored as Envoy takes it; status and -o wide say so",
    async () => {
      await env.kube.apply([deployment(2), limit(false)]);
      await waitShown(env, {
        state: "Ready",
        mode: "Shadow",
        enforcedGeneration: 1,
        rates: [{ bucket: "default", perPod: "5/10s", workload: "10/10s" }],
      });
      const { cfg } = await routeConfig(env);
      assert.equal(enforcedShare(cfg), 0);
      assert.deepEqual(cfg.request_headers_to_add_when_not_enforced, [{
        header: { key: "x-ratelimit-would-reject", value: "true" },
        append_action: "OVERWRITE_IF_EXISTS_OR_ADD",
      }]);
      assert.equal(cfg.rate_limited_as_resource_exhausted, true);
      const wide = await env.kube.must(["get", "ratelimits", "-n", NS, "-o", "wide"]);
      const [header, row] = wide.trimEnd().split("\n").map((l) => l.trim().split(/\s+/));
      const col = (name: string) => row[header.indexOf(name)];
      assert.deepEqual([col("MODE"), col("WORKLOAD-RATE")], ["Shadow", "10/10s"], wide);
    },
  );

  await env.step(
    t,
    "enforce as a string is refused naming spec.enforce; nothing changes",
    async () => {
      const before = await routeConfig(env);
      const r = await env.kube.tryApply([limit("false")]);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /spec\.enforce/, r.stderr);
      assert.equal((await routeConfig(env)).rv, before.rv);
      assert.equal(
        (statusOf(await env.kube.get("ratelimit", "orders", NS)) as Shown).mode,
        "Shadow",
      );
    },
  );

  await env.step(t, "enforcing is an edit of one field", async () => {
    await env.kube.apply([limit(true)]);
    await waitShown(env, { state: "Ready", mode: "Enforcing", enforcedGeneration: 2 });
    const { cfg } = await routeConfig(env);
    assert.equal(enforcedShare(cfg), 100);
    assert.equal(cfg.request_headers_to_add_when_not_enforced, undefined);
  });

  await env.step(t, "the workload's rate follows a scale-up, then no write at rest", async () => {
    await env.kube.apply([deployment(3)]);
    await waitShown(env, { rates: [{ bucket: "default", perPod: "5/10s", workload: "15/10s" }] });
    await assertNoWritesAtRest(env, 15_000, NS);
  });

  await env.step(
    t,
    "per-client: no key, or too many clients, refused naming the field",
    async () => {
      const before = await routeConfig(env);
      const noKey = await env.kube.tryApply([perClientLimit({}, 50)]);
      assert.notEqual(noKey.code, 0);
      assert.match(noKey.stderr, /spec\.local\.buckets\[0\]\.perClient/, noKey.stderr);
      assert.match(noKey.stderr, /perClient needs one key/, noKey.stderr);
      const tooMany = await env.kube.tryApply([perClientLimit({ header: "X-Api-Key" }, 100001)]);
      assert.notEqual(tooMany.code, 0);
      assert.match(tooMany.stderr, /spec\.local\.maxClients/, tooMany.stderr);
      assert.equal((await routeConfig(env)).rv, before.rv);
    },
  );

  await env.step(t, "per-client by header: a wildcard descriptor and its bound", async () => {
    await env.kube.apply([perClientLimit({ header: "X-Api-Key" }, 50)]);
    await waitShown(env, { state: "Ready", enforcedGeneration: 3 });
    const { cfg } = await routeConfig(env);
    assert.equal(cfg.max_dynamic_descriptors, 50);
    const entries = (cfg.descriptors as { entries: unknown[] }[])[0].entries;
    assert.deepEqual(entries.at(-1), { key: "client", value: "" });
  });
});
