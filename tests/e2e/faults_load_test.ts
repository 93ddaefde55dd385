/**
 * Issue #45 point 6, load during faults: the operator deployed from deploy/ (two Pods on the real
 * node) takes at least {@link EDITS} RateLimit edits while its leader is partitioned from the API
 * server (point 1), kube-apiserver is restarted ten times in a row, etcd is stopped and started,
 * and etcd is compacted under the open watches (point 2). After convergence (nothing lost, no
 * write applied by a non-leader, no EnvoyFilter written twice for one change: faults_deployed.ts
 * `underLoad`), the simulator runs the same sequence (the same Pods and RateLimits, each edit at
 * the time it was sent, the simulator's own equivalent of each fault: tests/e2e/faults_load.ts)
 * and every RateLimit's final status must equal the simulator's, as the differential test
 * compares them.
 *
 * `FAULTS_EDITS` sets the edits (default 1,000); `FAULTS_RATELIMITS` the RateLimits (default 200).
 */
import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import { join } from "node:path";
import { rateLimitObject } from "../../bench/fixtures.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { runScenario } from "../../sim/scenario/run.ts";
import { compactEtcd, partitionPod, podNetns } from "../../tools/cluster/faults.ts";
import { restartComponent } from "../../tools/cluster/lifecycle.ts";
import { REAL_NODE_SKIP } from "../../tools/cluster/real_node_fixtures.ts";
import { twoReady } from "./deployed.ts";
import {
  apiGet,
  assertAtRest,
  COUNT,
  deployedWithLoad,
  EditLoad,
  figure,
  lease,
  logLines,
  NS,
  rateLimitsNow,
  underLoad,
  waitConverged,
} from "./faults_deployed.ts";
import {
  type LoadRecord,
  loadScenario,
  maxTokensOf,
  podAsCreated,
  rateLimitFinals,
  resolveEdits,
  type RunFault,
} from "./faults_load.ts";
import { finalsDiff, realFinals, simFinals } from "./finals.ts";
import { e2eSuite } from "./harness.ts";
import { REPO_ROOT } from "./operator.ts";

/** Edits accepted at least (`FAULTS_EDITS`, default 1,000); the load goes on through every fault. */
const EDITS = Number(Deno.env.get("FAULTS_EDITS") ?? 1_000);
/** The load's pause between two edits (one in flight at a time). */
const EDIT_EVERY_MS = 50;
/** How long the leader is partitioned (longer than its Lease: the standby takes over). */
const PARTITION_MS = 25_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

e2eSuite("faults-load", async (env, t) => {
  const node = env.cluster.realNode;
  assert.ok(node, "the suite runs with the real node");
  const pods = await deployedWithLoad(env, t);
  /** The load and the faults, as the first step made them (its checks may fail after). */
  let run: { load: EditLoad; faults: RunFault[]; t0: number } | undefined;

  await env.step(
    t,
    `${EDITS} edits while the leader is partitioned and the control plane restarts`,
    async () => {
      const faults: RunFault[] = [];
      const load = new EditLoad(env, EDIT_EVERY_MS);
      const t0 = Date.now();
      run = { load, faults, t0 };
      const timed = async (kind: RunFault["kind"], fn: () => Promise<unknown>) => {
        const s = Date.now();
        await fn();
        faults.push({ kind, at: s - t0, forMs: Date.now() - s });
      };
      let faultsEnded = 0;
      let loadEnded = 0;
      const recover = await underLoad(
        env,
        `${EDITS} edits under faults`,
        async () => {
          await sleep(5_000);
          const holder = (await lease(env))?.holder;
          const leader = pods.find((p) => p.metadata.name === holder);
          assert.ok(leader, `leader ${holder} among ${pods.map((p) => p.metadata.name)}`);
          const netns = await podNetns(node.network.bridge, leader.status.podIP!);
          await timed("partition", async () => {
            const cut = await partitionPod(netns);
            try {
              await sleep(PARTITION_MS);
            } finally {
              await cut.heal();
            }
          });
          // The standby leads; the old leader rejoins as standby before the control plane goes.
          await sleep(10_000);
          for (let k = 0; k < 10; k++) {
            await timed("apiServerRestart", env.cluster.restartApiserver);
          }
          await sleep(3_000);
          await timed("etcdRestart", () => restartComponent(env.cluster.dir, "etcd"));
          await sleep(3_000);
          // Compacted to its head under the open watches; the restart cuts them, and they resume
          // from a compacted version (410 Gone) and list again.
          await timed("compaction", () => compactEtcd(env.cluster.dir));
          await sleep(1_000);
          await timed("apiServerRestart", env.cluster.restartApiserver);
          faultsEnded = Date.now();
          while (load.total < EDITS) await sleep(100);
          await load.stop();
          loadEnded = Date.now();
        },
        load,
      );
      const converged = loadEnded + recover;
      let gone = 0;
      for (const p of pods) {
        gone += (await logLines(env, p.metadata.name, /410 Gone/)).filter((l) => l.at >= t0).length;
      }
      figure(
        `load during faults: ${load.total} edits accepted, ${load.failed} refused or unanswered, ` +
          `over ${loadEnded - t0} ms (faults from ${faults[0].at} to ${faultsEnded - t0} ms: ` +
          `${faults.map((f) => `${f.kind} at ${f.at} for ${f.forMs}`).join(", ")}); ` +
          `converged ${converged - faultsEnded} ms after the last fault, ${recover} ms after the ` +
          `last edit; ${gone} watches resumed with 410 Gone`,
      );
      await assertAtRest(env);
      await twoReady(env); // the old leader back as standby
    },
  );

  await env.step(
    t,
    "every RateLimit's final status equals the simulator's for the same sequence",
    async () => {
      assert.ok(run, "the load ran");
      const { load, faults, t0 } = run;
      await waitConverged(env, "before the comparison");
      const rls = await rateLimitsNow(env);
      const livePods = (await apiGet<{ items: KubeObject[] }>(env, `/api/v1/namespaces/${NS}/pods`))
        ?.items ?? [];
      const record: LoadRecord = {
        namespace: NS,
        pods: livePods.map(podAsCreated),
        rateLimits: Array.from(
          { length: COUNT },
          (_, i) => rateLimitObject({ i, rules: 4, namespace: NS }),
        ),
        edits: load.sent.map((e) => ({ ...e, at: e.at - t0 })),
        faults,
        finalMaxTokens: Object.fromEntries(
          rls.map((o) => [o.metadata.name, maxTokensOf(o) ?? 0]),
        ),
      };
      const dir = join(REPO_ROOT, ".cache", "faults-load");
      await Deno.mkdir(dir, { recursive: true });
      const file = join(dir, `record-${Deno.pid}.json`);
      await Deno.writeTextFile(file, JSON.stringify(record));
      figure(`the run's record (objects, edits, faults, final specs): ${file}`);
      const { edits, landedUnanswered } = resolveEdits(record);
      const sc = loadScenario(record);
      const s0 = Date.now();
      const sim = await runScenario(sc, { file: "faults_load_test (built from the real run)" });
      const simMs = Date.now() - s0;
      assert.ok(sim.ok, `the simulator fails the run's sequence itself: ${sim.failure}`);
      const want = rateLimitFinals(simFinals(sim.timeline));
      const got = rateLimitFinals(await realFinals(env, Object.keys(want)));
      const diff = finalsDiff(want, got);
      const faultSteps = sc.steps.flatMap((s) => s.fault ?? []).length;
      figure(
        `simulator: ${edits.length} edits (${landedUnanswered} unanswered that landed), ` +
          `${faultSteps} fault steps, ${sim.steps} events, virtual ${
            Math.round(sim.virtualMs / 1000)
          } s, ` +
          `${simMs} ms of wall time; ${Object.keys(want).length} final statuses, ` +
          `${diff ? "DIFFERENT" : "equal"}`,
      );
      assert.equal(Object.keys(got).length, COUNT, "every RateLimit has a final status");
      assert.ok(isDeepStrictEqual(want, got), `final statuses differ:\n${diff}`);
    },
  );
}, { realNode: true, skip: REAL_NODE_SKIP });
