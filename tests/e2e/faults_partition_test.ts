/**
 * Issue #45 point 1, a partitioned leader: the leader Pod's packets to and from the API server
 * are dropped by rules in its own network namespace (tools/cluster/faults.ts) while the operator,
 * deployed from deploy/ as two Pods on the real node, holds its load of RateLimits and is busy
 * with edits. The old leader must stop writing before its Lease can be taken (its renew deadline
 * of 7 s ends its term before the 10 s lease expires), the standby takes over and converges, the
 * audit log (each write told apart by the Pod name its bound token carries) shows what the old
 * leader wrote after the new leader's first write, none of it a deletion (a write in flight at the
 * cut lands when the path heals: reported, see docs/faults.md), and once healed the old leader
 * rejoins as the standby without a restart.
 */
import assert from "node:assert/strict";
import { workloadName } from "../../bench/fixtures.ts";
import { netnsRules, partitionPod, podNetns, WatchStallProxy } from "../../tools/cluster/faults.ts";
import { REAL_NODE_SKIP } from "../../tools/cluster/real_node_fixtures.ts";
import { isReady, operatorPods, type PodView, twoReady } from "./deployed.ts";
import {
  assertAtRest,
  COUNT,
  deployedWithLoad,
  duplicateWrites,
  editRateLimit,
  figure,
  LEASE,
  lease,
  LeaseSampler,
  line,
  logLines,
  NOT_STATE,
  NS,
  operatorToken,
  operatorWrites,
  problems,
  requestAs,
  waitConverged,
  waitReconciled,
} from "./faults_deployed.ts";
import { type E2E, e2eSuite, waitFor } from "./harness.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A merge patch of RateLimit `i`'s EnvoyFilter (a label) as Pod `pod` of the operator would
 * send it: with a token of the operator's ServiceAccount bound to that Pod.
 */
async function writeAsPod(env: E2E, pod: string, i: number) {
  const path = `/apis/networking.istio.io/v1alpha3/namespaces/${NS}/envoyfilters/${
    workloadName(i)
  }`;
  return await requestAs(env, await operatorToken(env, pod), "PATCH", path, {
    metadata: { labels: { "faults.platform-project.io/late": "1" } },
  });
}

/** The Pod's /readyz answer, asked from the host on the Pod's address. */
async function readyz(pod: PodView): Promise<string> {
  const res = await fetch(`http://${pod.status.podIP}:8081/readyz`, {
    signal: AbortSignal.timeout(5_000),
  });
  return `${res.status} ${(await res.text()).trim()}`;
}

e2eSuite("faults-partition", async (env, t) => {
  const node = env.cluster.realNode;
  assert.ok(node, "the suite runs with the real node");
  let pods: PodView[] = [];
  /** The Pod partitioned in the first fault, and when (epoch ms). */
  const cutOff = { pod: "", from: 0, to: 0 };

  pods = await deployedWithLoad(env, t);

  await env.step(
    t,
    "a partitioned leader stops writing before its Lease can be taken; the standby takes over; healed, it rejoins as standby",
    async () => {
      const holder = (await lease(env))?.holder ?? "";
      const old = pods.find((p) => p.metadata.name === holder);
      const next = pods.find((p) => p.metadata.name !== holder);
      assert.ok(old && next, `leader ${holder} among ${pods.map((p) => p.metadata.name)}`);
      const restarts = old.status.containerStatuses?.[0].restartCount ?? 0;
      const netns = await podNetns(node.network.bridge, old.status.podIP!);
      // The leader is busy when the cut comes: 20 edits, then 10 more during the partition.
      const generations = new Map<string, number>();
      const edit = async (i: number) => {
        const g = await editRateLimit(env, i, 500 + i);
        generations.set(workloadName(i), 1);
        return g;
      };
      await Promise.all(Array.from({ length: 20 }, (_, k) => edit(10 + k)));
      const cut = await partitionPod(netns);
      const t0 = cut.since;
      let healedAt = 0;
      try {
        const during = await Promise.all(Array.from({ length: 10 }, (_, k) => edit(40 + k)));
        const takeover = await waitFor("the standby to take the Lease", async () => {
          const l = await lease(env);
          return l?.holder === next.metadata.name ? Date.now() - t0 : undefined;
        }, { timeoutMs: 30_000, intervalMs: 100 });
        // Edits made while the old leader was cut off are done by the new one.
        await Promise.all(during.map((g, k) => waitReconciled(env, 40 + k, g)));
        const reconciled = Date.now() - t0;
        await waitConverged(env, "after the takeover");
        const converged = Date.now() - t0;
        const stopped = (await logLines(env, holder, /stopped leading/)).filter((l) => l.at >= t0);
        const became = (await logLines(env, next.metadata.name, /became leader/))
          .filter((l) => l.at >= t0);
        assert.equal(stopped.length, 1, `the old leader's log: ${stopped.map((l) => l.line)}`);
        assert.equal(became.length, 1, `the new leader's log: ${became.map((l) => l.line)}`);
        const stoppedAfter = stopped[0].at - t0;
        const becameAfter = became[0].at - t0;
        figure(
          `partition: old leader stopped leading ${stoppedAfter} ms after the cut (${
            stopped[0].line
          }); the standby became leader after ${becameAfter} ms; the Lease showed it after ${takeover} ms; ` +
            `edits made during the partition Ready after ${reconciled} ms; all ${COUNT} converged after ${converged} ms`,
        );
        assert.ok(stoppedAfter <= LEASE.renewDeadlineMs + 1_000, `stopped after ${stoppedAfter}`);
        assert.ok(stopped[0].at < became[0].at, "it stopped before the standby led");
        assert.ok(takeover < LEASE.durationMs + 2 * LEASE.retryMs + 2_000, `took ${takeover} ms`);
        // The partition lasts well beyond the takeover: what the old leader queued stays queued.
        await sleep(Math.max(0, 25_000 - (Date.now() - t0)));
      } finally {
        await cut.heal();
        healedAt = Date.now();
        Object.assign(cutOff, { pod: holder, from: t0, to: healedAt });
      }
      assert.deepEqual(await netnsRules(netns), [], "healing left no rule");
      const back = await waitFor("the old leader Ready again, as the standby", async () => {
        const p = (await operatorPods(env)).find((x) => x.metadata.name === holder);
        if (!p || !isReady(p)) return undefined;
        const r = await readyz(p);
        return /standby/.test(r) ? { p, r } : undefined;
      }, { timeoutMs: 60_000, intervalMs: 250 });
      const rejoin = Date.now() - healedAt;
      assert.equal(back.p.status.containerStatuses?.[0].restartCount, restarts, "not restarted");
      assert.equal((await lease(env))?.holder, next.metadata.name, "the new leader still leads");
      // Anything the old leader's kernel still held goes out once the path is back; wait for it.
      await sleep(20_000);
      const writes = await operatorWrites(env, t0 - 2_000);
      const first = writes.find((w) => w.pod === next.metadata.name && w.at >= t0);
      assert.ok(first, "the new leader wrote");
      const late = writes.filter((w) => w.pod === holder && w.at >= first.at);
      const byOld = writes.filter((w) => w.pod === holder && w.at >= t0);
      figure(
        `partition healed: the old leader Ready as standby after ${rejoin} ms (${back.r}), ` +
          `restarts ${restarts} -> ${back.p.status.containerStatuses?.[0].restartCount}; ` +
          `writes by the old leader after the cut: ${byOld.length}, after the new leader's first: ${late.length}`,
      );
      // The issue's target: none applied. The operator stops sending at its renew deadline, but a
      // write already in its kernel's send buffer when the packets began to be dropped is
      // retransmitted when the path heals; the API server's fence (deploy/base/fence.yaml: only the
      // Lease's holder writes) refuses it then (403), and the audit log shows it refused.
      if (late.length > 0) {
        figure(
          `late writes of the old leader (in flight at the cut):\n${late.map(line).join("\n")}`,
        );
      }
      assert.deepEqual(
        late.filter((w) => w.code >= 200 && w.code < 300).map(line),
        [],
        "no write of the old leader applied after the new one's first",
      );
      // The same, made certain: a write as the old leader's Pod now (a token bound to it, as its
      // own) is refused.
      const replay = await writeAsPod(env, holder, 10);
      assert.equal(replay.status, 403, `a write as the old leader: ${replay.text}`);
      const refusedNew = writes.filter((w) => w.pod === next.metadata.name && w.code === 403);
      figure(
        `fence: ${late.length} late write(s) of the old leader refused; a write as it now: ` +
          `${replay.status}; writes of the new leader refused (its Lease not yet seen): ${refusedNew.length}`,
      );
      // The late writes, reported above, repeat what the new leader wrote: not counted again.
      const onTime = writes.filter((w) => w.at >= t0 && !late.includes(w));
      const dup = duplicateWrites(onTime, generations);
      assert.deepEqual(dup, [], "no duplicate write");
      const unedited = onTime.filter((w) => !NOT_STATE.has(w.resource) && !generations.has(w.name));
      assert.deepEqual(unedited.map(line), [], "nothing rewritten that had not changed");
      assert.deepEqual(await problems(env), [], "nothing lost");
      await assertAtRest(env);
      pods = await twoReady(env);
    },
  );

  await env.step(
    t,
    "a partition of the watch streams only: the leader keeps its Lease; healed, its watches recover",
    async () => {
      const holder = (await lease(env))?.holder ?? "";
      const leader = pods.find((p) => p.metadata.name === holder);
      assert.ok(leader, `leader ${holder}`);
      const netns = await podNetns(node.network.bridge, leader.status.podIP!);
      const proxy = await WatchStallProxy.start(env.cluster.dir, node.network.hostIp);
      const sampler = new LeaseSampler(env);
      try {
        await proxy.route(netns);
        await waitFor(
          "the leader's watches and renewals through the proxy",
          () => Promise.resolve(proxy.counts.watches >= 3 && proxy.counts.requests >= 10),
          {
            timeoutMs: 60_000,
          },
        );
        // Passing through, it reconciles as before.
        const g0 = await editRateLimit(env, 60, 7_000);
        figure(`through the proxy, an edit Ready after ${await waitReconciled(env, 60, g0)} ms`);
        const t0 = Date.now();
        proxy.stall();
        const g = await editRateLimit(env, 61, 7_001);
        const stallMs = 40_000;
        let during = 0;
        await waitReconciled(env, 61, g, stallMs).then((ms) => during = ms, () => {});
        await sleep(Math.max(0, stallMs - (Date.now() - t0)));
        const stillHolder = (await lease(env))?.holder;
        proxy.heal();
        const after = during ? 0 : await waitReconciled(env, 61, g, 150_000);
        figure(
          `watch-only partition of ${stallMs} ms (${proxy.counts.stalledWatches} watch streams lost, ` +
            `${proxy.counts.requests} requests passed): the leader ${
              stillHolder === holder ? "kept" : "lost"
            } its Lease; the edit made during it ${
              during ? `was Ready after ${during} ms` : `was Ready ${after} ms after the heal`
            }`,
        );
        assert.equal(stillHolder, holder, "short requests passed: the Lease stayed");
        // A lost stream is noticed by the watchdog (25 s without data, src/cli/run.ts LIVE_WATCH):
        // the issue's target is 30 s after the fault's end.
        assert.ok(during || after <= 30_000, `recovered ${after} ms after the heal`);
        // Alive, a 20 s watch is never silent that long (the API server's bookmark before its
        // timeout): no watch of either replica was restarted as silent before the stall.
        const silent = (await Promise.all(pods.map(async (p) =>
          (await logLines(env, p.metadata.name, /watch silent for too long/)).filter((l) =>
            // The old leader's own partition (the step before) cut its watches: not counted.
            l.at < t0 && !(p.metadata.name === cutOff.pod && l.at >= cutOff.from &&
              l.at <= cutOff.to + 30_000)
          )
        ))).flat();
        assert.deepEqual(
          silent.map((l) =>
            l.line
          ),
          [],
          "no live watch taken for a lost one",
        );
      } finally {
        await sampler.stop();
        await proxy.close();
      }
      assert.deepEqual(sampler.holders, [holder], "one leader throughout");
      await waitConverged(env, "after the watch-only partition");
      await assertAtRest(env);
      const restarts = (await operatorPods(env)).map((p) =>
        p.status.containerStatuses?.[0].restartCount
      );
      assert.deepEqual(restarts, [0, 0], "no restart");
    },
  );
}, { realNode: true, skip: REAL_NODE_SKIP });
