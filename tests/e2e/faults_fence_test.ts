/**
 * Issue #45 point 1, the fence: deploy/base/fence.yaml (src/deploy/fence_objects.ts) makes the
 * API server refuse a write by the operator's ServiceAccount from a Pod that does not hold the
 * leader election Lease, so a write the old leader had in flight when it was partitioned cannot
 * land after the new leader's (tests/e2e/faults_partition_test.ts sees it refused on the real
 * node). Here on the control plane alone, each case deterministic: tokens bound to two Pods of
 * the operator's ServiceAccount (as the kubelet mounts them: the Pod's name in the user's extra)
 * and one bound to no Pod (the operator run outside a cluster), the Lease held by one Pod, then
 * taken over, released and deleted; the audit log records the refused write.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { rateLimitObject, workloadName } from "../../bench/fixtures.ts";
import {
  OPERATOR_NAMESPACE,
  OPERATOR_SERVICE_ACCOUNT,
} from "../../tools/cluster/operator_identity.ts";
import { DEFAULT_LEASE_NAME } from "../../src/runtime/manager_options.ts";
import { REPO_ROOT } from "../../tools/cluster/paths.ts";
import { apiRequest, figure, operatorToken, operatorWrites, requestAs } from "./faults_deployed.ts";
import { type E2E, e2eSuite, waitFor } from "./harness.ts";

const NS = "fence";
const LEASE_PATH =
  `/apis/coordination.k8s.io/v1/namespaces/${OPERATOR_NAMESPACE}/leases/${DEFAULT_LEASE_NAME}`;
const STATUS_PATH = `/apis/gateway.platform-project.io/v1alpha1/namespaces/${NS}/ratelimits/${
  workloadName(0)
}/status`;

/** A merge patch of the RateLimit's status with `token`. */
const patchStatusAs = (env: E2E, token: string, generation: number) =>
  requestAs(env, token, "PATCH", STATUS_PATH, { status: { observedGeneration: generation } });

function pod(name: string): object {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: OPERATOR_NAMESPACE },
    spec: {
      serviceAccountName: OPERATOR_SERVICE_ACCOUNT,
      containers: [{ name: "operator", image: "platform-operator" }],
    },
  };
}

const setHolder = (env: E2E, holder: string) =>
  apiRequest(env, "PATCH", LEASE_PATH, { spec: { holderIdentity: holder } });

e2eSuite("faults-fence", async (env, t) => {
  let a = "", b = "", unbound = "";

  await env.step(
    t,
    "deploy/base/fence.yaml, two operator Pods, the Lease held by one",
    async () => {
      await env.installCrds();
      await env.kube.must(["apply", "-f", join(REPO_ROOT, "deploy", "base", "fence.yaml")]);
      await env.kube.must(["create", "namespace", NS]);
      await env.kube.apply([pod("operator-a"), pod("operator-b")]);
      await env.kube.apply([rateLimitObject({ i: 0, rules: 1, namespace: NS })]);
      await env.kube.apply([{
        apiVersion: "coordination.k8s.io/v1",
        kind: "Lease",
        metadata: { name: DEFAULT_LEASE_NAME, namespace: OPERATOR_NAMESPACE },
        spec: { holderIdentity: "operator-a", leaseDurationSeconds: 10 },
      }]);
      [a, b, unbound] = await Promise.all([
        operatorToken(env, "operator-a"),
        operatorToken(env, "operator-b"),
        operatorToken(env),
      ]);
      // The policy is in force once the API server has loaded it and the Lease: until then b writes.
      await waitFor(
        "the fence in force",
        async () => (await patchStatusAs(env, b, 1)).status === 403,
        {
          timeoutMs: 30_000,
          intervalMs: 200,
        },
      );
    },
  );

  await env.step(
    t,
    "only the Lease's holder writes; a token bound to no Pod is not fenced",
    async () => {
      const t0 = Date.now();
      const byA = await patchStatusAs(env, a, 2);
      const byB = await patchStatusAs(env, b, 3);
      const byUnbound = await patchStatusAs(env, unbound, 4);
      assert.equal(byA.status, 200, `the holder writes: ${byA.text}`);
      assert.equal(byB.status, 403, `the other Pod is refused: ${byB.text}`);
      assert.match(byB.text, /only the leader writes: Pod operator-b does not hold Lease/);
      assert.equal(byUnbound.status, 200, `no Pod, no fence (deno task dev): ${byUnbound.text}`);
      // The audit log records the refused write with the Pod that sent it.
      const writes = await waitFor("the writes in the audit log", async () => {
        const w = (await operatorWrites(env, t0)).filter((x) => x.resource === "ratelimits");
        return w.length >= 3 ? w : undefined;
      }, { timeoutMs: 10_000 });
      assert.deepEqual(
        writes.map((w) => `${w.pod || "(no Pod)"} ${w.code}`),
        ["operator-a 200", "operator-b 403", "(no Pod) 200"],
      );
    },
  );

  await env.step(t, "a takeover moves the fence; a released or deleted Lease", async () => {
    // b takes the Lease: the fence follows the Lease as the API server's cache of it does.
    const t0 = Date.now();
    await setHolder(env, "operator-b");
    const lag = await waitFor("b's write let through", async () => {
      const r = await patchStatusAs(env, b, 5);
      return r.status === 200 ? Date.now() - t0 : undefined;
    }, { timeoutMs: 10_000, intervalMs: 20 });
    const late = await patchStatusAs(env, a, 6);
    figure(`fence: the new holder's write let through ${lag} ms after the takeover`);
    assert.equal(late.status, 403, `the old holder is refused after the takeover: ${late.text}`);
    // Released (no holder): no Pod writes.
    await setHolder(env, "");
    await waitFor("b refused once the Lease is released", async () => {
      return (await patchStatusAs(env, b, 7)).status === 403;
    }, { timeoutMs: 10_000, intervalMs: 50 });
    // No Lease (leader election off): nothing is fenced.
    await apiRequest(env, "DELETE", LEASE_PATH);
    await waitFor("a and b let through with no Lease", async () => {
      const [ra, rb] = [await patchStatusAs(env, a, 8), await patchStatusAs(env, b, 9)];
      return ra.status === 200 && rb.status === 200;
    }, { timeoutMs: 10_000, intervalMs: 50 });
  });
});
