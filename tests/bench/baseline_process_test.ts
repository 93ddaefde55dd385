/**
 * The convergence bench's baseline client runs as a process of its own (issue #46 point 1): on its
 * own connection, as the user its kubeconfig names, it writes each RateLimit's EnvoyFilter and
 * status (2 writes an object) once the object appears, and says how many writes it made.
 */
import assert from "node:assert/strict";
import { BaselineProcess } from "../../bench/cluster/baseline_process.ts";
import { rateLimitObject } from "../../bench/fixtures.ts";
import { RESOURCES } from "../../src/api/resources.ts";
import { startServer } from "../kube/fake_server.ts";
import { kubeconfigFor } from "../kube/helpers.ts";
import { SimApi } from "../kube/sim_api.ts";

Deno.test("the baseline process writes each RateLimit's EnvoyFilter and status, 2 writes an object", async () => {
  const api = new SimApi();
  const server = await startServer(api.handle);
  const NS = "bench-base";
  const N = 6;
  try {
    await api.sim.client("admin").create(RESOURCES.Namespace, {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: NS },
    });
    const baseline = await BaselineProcess.start({
      kubeconfig: await kubeconfigFor(server.url),
      namespaces: [[NS, N]],
      rules: 2,
      width: 2,
      allowInsecureHttp: true,
    });
    const before = server.seen.length;
    // Created only now: the process sees them through its own watch.
    const user = api.sim.client("user", { manager: "kubectl" });
    for (let i = 0; i < N; i++) {
      await user.create(RESOURCES.RateLimit, rateLimitObject({ i, rules: 2, namespace: NS }));
    }
    assert.equal(await baseline.done(), 2 * N);
    const filters = api.sim.store.objects(RESOURCES.EnvoyFilter);
    assert.equal(filters.length, N);
    const states = api.sim.store.objects(RESOURCES.RateLimit)
      .map((o) => (o.status as { state?: string } | undefined)?.state);
    assert.deepEqual(states, Array(N).fill("Ready"));
    const writes = server.seen.slice(before).filter((r) => r.method === "PATCH");
    assert.equal(writes.length, 2 * N, "its writes came over HTTP, from the process");
  } finally {
    api.close();
    await server.close();
  }
});
