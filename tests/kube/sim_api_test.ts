/**
 * SimApi answers the live client's verbs from the simulator's store: what run_test's operator may
 * send beyond startup (apply, status apply, JSON Patch, delete, selected lists, watches) round-trips.
 */
import assert from "node:assert/strict";
import { ApiError, type WatchEvent } from "../../src/runtime/cluster.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { RateLimit, withCluster } from "./helpers.ts";
import { SimApi } from "./sim_api.ts";

const NS = "default";

function rateLimit(name: string, labels: Record<string, string>): KubeObject {
  return {
    apiVersion: "gateway.platform-project.io/v1alpha1",
    kind: "RateLimit",
    metadata: { name, namespace: NS, labels },
    spec: {
      selectorLabels: { app: name },
      local: { defaultBucket: { maxTokens: 10, tokensPerFill: 10, fillInterval: "30s" } },
    },
  };
}

Deno.test("writes over HTTP land in the simulator's store; lists select; a watch sees them", async () => {
  const api = new SimApi();
  try {
    await withCluster(api.handle, async (cluster) => {
      const start = await cluster.list(RateLimit, { namespace: NS });
      const stop = new AbortController();
      const seen: WatchEvent[] = [];
      const watching = (async () => {
        const opts = { namespace: NS, resourceVersion: start.resourceVersion };
        for await (const e of cluster.watch(RateLimit, opts, stop.signal)) seen.push(e);
      })();
      try {
        const a = await cluster.apply(RateLimit, rateLimit("a", { tier: "x" }), {
          fieldManager: "t",
        });
        await cluster.apply(RateLimit, rateLimit("b", { tier: "y" }), { fieldManager: "t" });
        assert.equal(api.sim.store.get(RateLimit, NS, "a")?.metadata.uid, a.metadata.uid);
        const selected = await cluster.list(RateLimit, { namespace: NS, labelSelector: "tier=y" });
        assert.deepEqual(selected.items.map((o) => o.metadata.name), ["b"]);

        await cluster.applyStatus(
          RateLimit,
          { ...rateLimit("a", {}), status: { observedGeneration: 1 } },
          {
            fieldManager: "t",
          },
        );
        assert.deepEqual(api.sim.store.get(RateLimit, NS, "a")?.status, { observedGeneration: 1 });
        const patched = await cluster.patch(RateLimit, NS, "a", [
          { op: "add", path: "/metadata/finalizers", value: ["t/f"] },
        ]);
        assert.deepEqual(patched.metadata.finalizers, ["t/f"]);
        await assert.rejects(
          cluster.patch(RateLimit, NS, "a", [{ op: "test", path: "/metadata/name", value: "z" }]),
          (e) => e instanceof ApiError && e.code !== 0 && e.code >= 400,
        );
        assert.equal(await cluster.delete(RateLimit, NS, "b"), true);
        assert.equal(await cluster.delete(RateLimit, NS, "b"), false);
        assert.equal(await cluster.get(RateLimit, NS, "b"), undefined);
        assert.equal(api.sim.store.get(RateLimit, NS, "b"), undefined);
        for (let i = 0; i < 100 && seen.length < 5; i++) {
          await new Promise((r) => setTimeout(r, 10));
        }
      } finally {
        stop.abort();
        await watching;
      }
      assert.deepEqual(
        seen.map((e) => `${e.type} ${e.object.metadata.name}`),
        ["ADDED a", "ADDED b", "MODIFIED a", "MODIFIED a", "DELETED b"],
      );
    });
  } finally {
    api.close();
  }
});

Deno.test("a type whose CRD is uninstalled is 404 for lists and watches until installed", async () => {
  const api = new SimApi();
  api.uninstall(RateLimit);
  try {
    await withCluster(api.handle, async (cluster) => {
      const is404 = (e: unknown) => e instanceof ApiError && e.code === 404;
      await assert.rejects(cluster.list(RateLimit), is404);
      const watch = cluster.watch(RateLimit, { resourceVersion: "" }, new AbortController().signal);
      await assert.rejects(watch[Symbol.asyncIterator]().next(), is404);
      api.install(RateLimit);
      assert.deepEqual((await cluster.list(RateLimit)).items, []);
    });
  } finally {
    api.close();
  }
});
