/**
 * Issue #45 point 3, the node's own parts, under the operator deployed from deploy/ (two Pods on
 * the real node) while RateLimits are being edited: kubelet restarted, containerd restarted (the
 * operator's containers go on running under both), and a node "reboot" (every container killed
 * at once, kubelet and containerd stopped and started again: tools/cluster/node_faults.ts). After
 * each, both operator Pods are Ready and one leads, everything converges with no write by a
 * replica that did not lead and no duplicate, and the audit log shows no EnvoyFilter deleted by
 * anyone (the garbage collector included) while no operator ran.
 */
import assert from "node:assert/strict";
import { readAuditEvents } from "../../tools/cluster/audit.ts";
import { type NodePart, restartNodeParts } from "../../tools/cluster/node_faults.ts";
import { REAL_NODE_SKIP } from "../../tools/cluster/real_node_fixtures.ts";
import { operatorPods, type PodView, twoReady } from "./deployed.ts";
import { assertAtRest, deployedWithLoad, figure, lease, underLoad } from "./faults_deployed.ts";
import { type E2E, e2eSuite, waitFor } from "./harness.ts";

/** Each operator container's id and restart count, by Pod. */
async function containers(env: E2E): Promise<Map<string, string>> {
  const pods = await operatorPods(env);
  return new Map(pods.map((p: PodView) => {
    const c = p.status.containerStatuses?.[0] as
      | { containerID?: string; restartCount?: number }
      | undefined;
    return [p.metadata.name, `${c?.containerID ?? ""} restarts ${c?.restartCount ?? 0}`];
  }));
}

/** EnvoyFilter deletions by anyone since `sinceMs`, from the audit log. */
async function filterDeletions(env: E2E, sinceMs: number): Promise<string[]> {
  return (await readAuditEvents(env.cluster.auditLog)).filter((e) =>
    e.verb === "delete" && e.objectRef?.resource === "envoyfilters" &&
    Date.parse(e.requestReceivedTimestamp) >= sinceMs
  ).map((e) =>
    `${e.requestReceivedTimestamp} ${e.user.username} ${e.objectRef?.namespace}/${e.objectRef?.name}`
  );
}

/**
 * `parts` stopped and started (with `reboot`, every container killed first) under an edit load;
 * then both operator Pods Ready and a leader renewing. Checks and reports what the test header
 * says; resolves with whether the operator's containers are the same as before.
 */
async function nodeFault(
  env: E2E,
  what: string,
  parts: readonly NodePart[],
  reboot = false,
): Promise<boolean> {
  const before = await containers(env);
  const t0 = Date.now();
  let restart = { killed: 0, ms: 0 };
  let back = 0;
  let leading = 0;
  await underLoad(env, what, async () => {
    restart = await restartNodeParts(env.cluster.dir, parts, { reboot, downMs: 2_000 });
    const up = Date.now();
    // Right after the restart the API still shows the Pods as the kubelet last reported them:
    // after a reboot, wait for their new containers to be Ready.
    await waitFor("the operator Pods Ready in new containers", async () => {
      const now = await containers(env);
      const ready = await twoReady(env);
      return ready.length === 2 &&
        (!reboot || [...before.keys()].every((pod) => now.get(pod) !== before.get(pod)));
    }, { timeoutMs: 180_000, intervalMs: 200 });
    back = Date.now() - up;
    // A leader renewing after the node is back (a renewal made after it came up).
    await waitFor("a leader renewing", async () => {
      const l = await lease(env);
      return l?.holder && Date.parse(l.renewTime) >= up;
    }, { timeoutMs: 60_000, intervalMs: 200 });
    leading = Date.now() - up;
  });
  const after = await containers(env);
  const same = [...before].every(([pod, c]) => after.get(pod) === c);
  const deleted = await filterDeletions(env, t0);
  figure(
    `${what}: stopped and started in ${restart.ms} ms (${restart.killed} containers killed); ` +
      `two operator Pods Ready ${back} ms after, a leader renewing ${leading} ms after; ` +
      `operator containers ${same ? "kept (same ids, no restart)" : "replaced"}: ` +
      `${
        [...after].map(([p, c]) => `${p} ${c}`).join("; ")
      }; EnvoyFilters deleted: ${deleted.length}`,
  );
  assert.deepEqual(deleted, [], "no EnvoyFilter deleted");
  await assertAtRest(env);
  return same;
}

e2eSuite("faults-node", async (env, t) => {
  assert.ok(env.cluster.realNode, "the suite runs with the real node");

  await deployedWithLoad(env, t);

  await env.step(t, "kubelet restarted: the operator's containers run on", async () => {
    assert.ok(await nodeFault(env, "kubelet restarted", ["kubelet"]), "containers kept");
  });

  await env.step(t, "containerd restarted: the operator's containers run on", async () => {
    assert.ok(await nodeFault(env, "containerd restarted", ["containerd"]), "containers kept");
  });

  await env.step(
    t,
    "node reboot: every container killed, kubelet and containerd stopped and started",
    async () => {
      const same = await nodeFault(env, "node rebooted", ["kubelet", "containerd"], true);
      assert.ok(!same, "the operator's containers were killed and started again");
    },
  );
}, { realNode: true, skip: REAL_NODE_SKIP });
