/**
 * Issue #45 point 5, voluntary disruption of the operator deployed from deploy/ (two Pods on the
 * real node, its PodDisruptionBudget of minAvailable 1, its RollingUpdate with maxUnavailable 0):
 * a drain of the node evicts one replica and is refused the second, and a rollout to another image
 * tag keeps a leader reconciling throughout, with no gap in the Lease's renewals longer than the
 * Lease itself. Edits go on all the while; each is timed to Ready.
 */
import assert from "node:assert/strict";
import { workloadName } from "../../bench/fixtures.ts";
import { REAL_NODE_SKIP } from "../../tools/cluster/real_node_fixtures.ts";
import { DEPLOYED, isReady, operatorPods, twoReady } from "./deployed.ts";
import {
  assertAtRest,
  deployedWithLoad,
  duplicateWrites,
  editRateLimit,
  figure,
  IMAGE,
  LEASE,
  LeaseSampler,
  line,
  nextEdit,
  nonLeaderWrites,
  operatorWrites,
  waitConverged,
  waitReconciled,
} from "./faults_deployed.ts";
import { type E2E, e2eSuite } from "./harness.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Edits one RateLimit after another and times each to Ready, until stopped; also samples how many
 * operator Pods are Ready: the leader reconciling throughout, as a user sees it.
 */
class Reconciling {
  readonly latencies: number[] = [];
  readonly edits = new Map<string, number>();
  minReady = Infinity;
  #stop = false;
  #done: Promise<void>;

  constructor(env: E2E) {
    this.#done = (async () => {
      while (!this.#stop) {
        const { i, maxTokens } = nextEdit();
        const g = await editRateLimit(env, i, maxTokens);
        const name = workloadName(i);
        this.edits.set(name, (this.edits.get(name) ?? 0) + 1);
        this.latencies.push(await waitReconciled(env, i, g, 60_000));
        const ready = (await operatorPods(env)).filter(isReady).length;
        this.minReady = Math.min(this.minReady, ready);
        await sleep(250);
      }
    })();
  }

  async stop(): Promise<void> {
    this.#stop = true;
    await this.#done;
  }

  get max(): number {
    return Math.max(0, ...this.latencies);
  }
}

e2eSuite("faults-disruption", async (env, t) => {
  const node = env.cluster.realNode;
  assert.ok(node, "the suite runs with the real node");

  await deployedWithLoad(env, t);

  await env.step(t, "a drain of the node respects the PodDisruptionBudget", async () => {
    const before = (await operatorPods(env)).map((p) => p.metadata.name);
    const sampler = new LeaseSampler(env);
    const load = new Reconciling(env);
    const t0 = Date.now();
    const drain = await env.kube.run([
      "drain",
      node.name,
      `--pod-selector=app.kubernetes.io/name=${DEPLOYED.name}`,
      "--delete-emptydir-data",
      "--timeout=40s",
    ], { timeoutMs: 90_000 });
    const drained = Date.now() - t0;
    const pods = await operatorPods(env);
    const left = pods.filter((p) => before.includes(p.metadata.name));
    const refusals = (drain.stderr.match(/disruption budget/g) ?? []).length;
    figure(
      `drain: exit ${drain.code} after ${drained} ms, ${before.length - left.length} of 2 ` +
        `replicas evicted, ${refusals} evictions refused by the PodDisruptionBudget; ` +
        `replacement ${
          pods.filter((p) => !before.includes(p.metadata.name)).map((p) => p.status.phase)
        }`,
    );
    assert.notEqual(drain.code, 0, "the drain cannot finish: the budget keeps one replica");
    assert.ok(refusals > 0, drain.stderr.slice(-2000));
    assert.equal(left.length, 1, "exactly one replica was evicted");
    assert.ok(isReady(left[0]), "the one left is Ready");
    await env.kube.must(["uncordon", node.name]);
    await twoReady(env);
    await load.stop();
    await sampler.stop();
    const writes = await operatorWrites(env, t0);
    figure(
      `drain, then uncordon: ${load.latencies.length} edits, each Ready within ${load.max} ms; ` +
        `fewest Ready replicas seen ${load.minReady}; holders ${sampler.holders.join(" -> ")}; ` +
        `longest Lease gap ${sampler.longestGapMs} ms`,
    );
    assert.ok(load.max < LEASE.durationMs, `an edit waited ${load.max} ms`);
    assert.ok(sampler.longestGapMs < LEASE.durationMs, `gap ${sampler.longestGapMs} ms`);
    assert.deepEqual(nonLeaderWrites(writes, sampler).map(line), []);
    assert.deepEqual(duplicateWrites(writes, load.edits), []);
    await waitConverged(env, "after the drain");
    await assertAtRest(env);
  });

  await env.step(
    t,
    "a rollout to another image tag keeps a leader reconciling, no gap longer than the Lease",
    async () => {
      const tag = "localhost/platform-operator:rebuilt";
      await node.tagImage(IMAGE, tag);
      const before = (await operatorPods(env)).map((p) => p.metadata.name);
      const sampler = new LeaseSampler(env);
      const load = new Reconciling(env);
      await sleep(2_000);
      const t0 = Date.now();
      await env.kube.must([
        "set",
        "image",
        "-n",
        DEPLOYED.namespace,
        `deployment/${DEPLOYED.name}`,
        `operator=${tag}`,
      ]);
      await env.kube.must([
        "rollout",
        "status",
        "-n",
        DEPLOYED.namespace,
        `deployment/${DEPLOYED.name}`,
        "--timeout=240s",
      ], { timeoutMs: 260_000 });
      const rolled = Date.now() - t0;
      const pods = await twoReady(env);
      await sleep(3_000);
      await load.stop();
      await sampler.stop();
      const writes = await operatorWrites(env, t0);
      figure(
        `rollout to ${tag}: done in ${rolled} ms; ${load.latencies.length} edits, each Ready within ` +
          `${load.max} ms; fewest Ready replicas seen ${load.minReady}; holders ` +
          `${sampler.holders.join(" -> ")}; longest Lease gap ${sampler.longestGapMs} ms`,
      );
      assert.deepEqual(pods.map((p) => p.spec.containers[0].image), [tag, tag]);
      assert.ok(pods.every((p) => !before.includes(p.metadata.name)), "both replaced");
      assert.ok(load.minReady >= 2, `maxUnavailable 0: ${load.minReady} Ready at one point`);
      assert.ok(load.max < LEASE.durationMs, `an edit waited ${load.max} ms`);
      assert.ok(sampler.longestGapMs < LEASE.durationMs, `gap ${sampler.longestGapMs} ms`);
      assert.deepEqual(nonLeaderWrites(writes, sampler).map(line), []);
      assert.deepEqual(duplicateWrites(writes, load.edits), []);
      await waitConverged(env, "after the rollout");
      await assertAtRest(env);
    },
  );
}, { realNode: true, skip: REAL_NODE_SKIP });
