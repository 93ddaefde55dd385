/**
 * Issue #45 point 2, every control-plane part restarted under the operator deployed from deploy/
 * (two Pods on the real node) while RateLimits are being edited: kube-apiserver ten times in a
 * row, etcd stopped and started, etcd compacted while the operator's watches are open (they
 * resume with 410 Gone and list again), kube-controller-manager and kube-scheduler. After each
 * the operator converges (every RateLimit Ready at its generation, one EnvoyFilter each, owned by
 * it), no write repeats one already made, and no replica writes while another leads (the
 * audit log's writes by Pod against the Lease as sampled).
 */
import assert from "node:assert/strict";
import { compactEtcd } from "../../tools/cluster/faults.ts";
import { restartComponent } from "../../tools/cluster/lifecycle.ts";
import { REAL_NODE_SKIP } from "../../tools/cluster/real_node_fixtures.ts";
import { DEPLOYED, operatorPods, twoReady } from "./deployed.ts";
import {
  assertAtRest,
  COUNT,
  deployedWithLoad,
  figure,
  lease,
  logLines,
  underLoad,
  waitConverged,
} from "./faults_deployed.ts";
import { e2eSuite } from "./harness.ts";

e2eSuite("faults-control-plane", async (env, t) => {
  assert.ok(env.cluster.realNode, "the suite runs with the real node");

  await deployedWithLoad(env, t);

  await env.step(t, "kube-apiserver restarted ten times in a row under load", async () => {
    const took: number[] = [];
    await underLoad(env, "kube-apiserver restarted 10 times", async () => {
      for (let k = 0; k < 10; k++) {
        const s = Date.now();
        await env.cluster.restartApiserver();
        took.push(Date.now() - s);
      }
    });
    figure(`kube-apiserver restarts took ${took.join(", ")} ms (stop to /readyz)`);
    await assertAtRest(env);
  });

  await env.step(t, "etcd stopped and started under load", async () => {
    await underLoad(env, "etcd stopped and started", async () => {
      await restartComponent(env.cluster.dir, "etcd");
    });
    await assertAtRest(env);
  });

  await env.step(
    t,
    "etcd compacted while the watches are open: they resume with 410 Gone and list again",
    async () => {
      const pods = (await operatorPods(env)).map((p) => p.metadata.name);
      const t0 = Date.now();
      let revision = 0;
      await underLoad(env, "etcd compacted, then the watches cut", async () => {
        // The edits move etcd on; compacting to its head leaves every resourceVersion the
        // operator's watches hold behind the history; the API server's restart cuts the watches,
        // which must then resume from a compacted version.
        await new Promise((r) => setTimeout(r, 3_000));
        revision = await compactEtcd(env.cluster.dir);
        await new Promise((r) => setTimeout(r, 1_000));
        await env.cluster.restartApiserver();
      });
      let gone = 0;
      for (const p of pods) {
        gone += (await logLines(env, p, /410 Gone/)).filter((l) => l.at >= t0).length;
      }
      figure(`etcd compacted at revision ${revision}: ${gone} watches resumed with 410 Gone`);
      assert.ok(gone > 0, "some watch met 410 Gone and listed again");
      await assertAtRest(env);
    },
  );

  await env.step(
    t,
    "kube-controller-manager and kube-scheduler restarted; a replacement Pod is scheduled by the new one",
    async () => {
      await underLoad(env, "kube-controller-manager and kube-scheduler restarted", async () => {
        await restartComponent(env.cluster.dir, "kube-controller-manager");
        await restartComponent(env.cluster.dir, "kube-scheduler");
      });
      // The garbage collector rebuilt its graph: nothing it owns may go.
      await new Promise((r) => setTimeout(r, 15_000));
      await waitConverged(env, "after the garbage collector's resync", COUNT, 10_000);
      const holder = (await lease(env))?.holder;
      const standby = (await operatorPods(env)).find((p) => p.metadata.name !== holder);
      assert.ok(standby, "a standby");
      const t0 = Date.now();
      await env.kube.must([
        "delete",
        "pod",
        "-n",
        DEPLOYED.namespace,
        standby.metadata.name,
        "--wait=false",
      ]);
      await twoReady(env);
      figure(`a deleted standby replaced and Ready in ${Date.now() - t0} ms`);
      await assertAtRest(env);
    },
  );
}, { realNode: true, skip: REAL_NODE_SKIP });
