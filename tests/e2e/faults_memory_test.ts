/**
 * Issue #45 point 4, memory: the operator deployed from deploy/ (two Pods on the real node) holds
 * its load of RateLimits and a burst of as many edits at once within deploy/'s memory limit, its
 * peak measured where the kernel counts it (the container's memory cgroup); with a limit below
 * what it needs it is OOM-killed, restarted by the kubelet, the kill is shown on the Pod
 * (OOMKilled, restarts, a BackOff Event), and nothing it made is deleted; resized in place to a
 * limit it starts with, the replica says the kill itself (a Warning Event OOMKilled on its Pod and
 * its gauge platform_operator_last_oom_kill_timestamp_seconds, which deploy/monitoring alerts on);
 * the limit restored, it converges again.
 */
import assert from "node:assert/strict";
import { cgroupMemory } from "../../tools/cluster/faults.ts";
import { REAL_NODE_SKIP } from "../../tools/cluster/real_node_fixtures.ts";
import { containerProcesses, DEPLOYED, operatorPods, type PodView, twoReady } from "./deployed.ts";
import {
  assertAtRest,
  COUNT,
  createLoad,
  deployOperator,
  editRateLimit,
  figure,
  lease,
  operatorWrites,
  problems,
  REAL_PODS,
  waitConverged,
} from "./faults_deployed.ts";
import { type E2E, e2eSuite, waitFor } from "./harness.ts";

const MiB = 1024 * 1024;
const mib = (n: number) => `${(n / MiB).toFixed(1)} MiB`;

/** Each Pod's cgroup memory, the leader first. */
async function memory(env: E2E, pods: PodView[]) {
  const holder = (await lease(env))?.holder;
  const sorted = [
    ...pods.filter((p) => p.metadata.name === holder),
    ...pods.filter((p) => p.metadata.name !== holder),
  ];
  const procs = await containerProcesses(env.cluster.dir, sorted);
  return await Promise.all(procs.map(async (p, k) => ({
    pod: sorted[k].metadata.name,
    leader: sorted[k].metadata.name === holder,
    ...await cgroupMemory(p.pid),
  })));
}

/**
 * Patches the operator's memory limit (its request too, which may not be higher; deploy/'s is
 * `request`), and its update strategy.
 */
async function setMemoryLimit(
  env: E2E,
  limit: string,
  request: string,
  strategy?: unknown,
): Promise<void> {
  const resources = { limits: { memory: limit }, requests: { memory: request } };
  const template = { spec: { containers: [{ name: "operator", resources }] } };
  await env.kube.must([
    "patch",
    "deployment",
    "-n",
    DEPLOYED.namespace,
    DEPLOYED.name,
    "-p",
    JSON.stringify({ spec: { template, ...(strategy ? { strategy } : {}) } }),
  ]);
}

e2eSuite("faults-memory", async (env, t) => {
  assert.ok(env.cluster.realNode, "the suite runs with the real node");
  let pods: PodView[] = [];
  let peak = 0;

  await env.step(
    t,
    `deploy/'s memory limit holds ${COUNT} RateLimits and a burst of ${COUNT} edits at once`,
    async () => {
      pods = await deployOperator(env);
      await createLoad(env);
      const settled = await memory(env, pods);
      const t0 = Date.now();
      // Every RateLimit edited at once: 16 requests in flight at a time.
      let next = 0;
      await Promise.all(Array.from({ length: 16 }, async () => {
        while (next < COUNT) {
          const i = next++;
          await editRateLimit(env, i, 3_000 + i);
        }
      }));
      await waitConverged(env, "after the burst", COUNT, 180_000);
      const burst = Date.now() - t0;
      const after = await memory(env, pods);
      peak = Math.max(...after.map((m) => m.peak));
      for (const m of after) {
        const s = settled.find((x) => x.pod === m.pod)!;
        figure(
          `memory ${m.leader ? "leader" : "standby"} ${m.pod}: ${mib(s.usage)} with ${COUNT} ` +
            `RateLimits settled; after ${COUNT} edits at once (converged in ${burst} ms): ` +
            `usage ${mib(m.usage)}, peak ${mib(m.peak)}, limit ${mib(m.limit)}`,
        );
        assert.equal(m.limit, 512 * MiB, "deploy/'s limit");
        assert.ok(m.peak < m.limit, `peak ${mib(m.peak)}`);
      }
      for (const p of await operatorPods(env)) {
        assert.equal(p.status.containerStatuses?.[0].restartCount, 0, p.metadata.name);
      }
      await assertAtRest(env);
    },
  );

  await env.step(
    t,
    "a limit below the need: OOM-killed, restarted, shown on the Pod; nothing deleted",
    async () => {
      // Below the peak measured above, and below what start-up takes with this many objects.
      const low = Math.max(16, Math.floor(peak / MiB / 2));
      const t0 = Date.now();
      // Both replicas at once: the rolling update would keep the old ones (maxUnavailable 0).
      await setMemoryLimit(env, `${low}Mi`, `${low}Mi`, {
        type: "Recreate",
        rollingUpdate: null,
      });
      const killed = await waitFor("an operator Pod OOM-killed and restarted", async () => {
        const ps = await operatorPods(env);
        return ps.find((p) => {
          const c = p.status.containerStatuses?.[0];
          const last = (c as { lastState?: { terminated?: { reason?: string } } } | undefined)
            ?.lastState?.terminated?.reason;
          return (c?.restartCount ?? 0) > 0 && last === "OOMKilled";
        });
      }, { timeoutMs: 180_000, intervalMs: 1_000 });
      const oomAfter = Date.now() - t0;
      const events = await env.kube.must([
        "get",
        "events",
        "-n",
        DEPLOYED.namespace,
        "--field-selector",
        `involvedObject.name=${killed.metadata.name}`,
        "-o",
        'jsonpath={range .items[*]}{.reason}{"\\n"}{end}',
      ]);
      figure(
        `memory limit ${low} MiB: ${killed.metadata.name} OOMKilled and restarted ` +
          `${killed.status.containerStatuses?.[0].restartCount} time(s) within ${oomAfter} ms; ` +
          `its Events: ${[...new Set(events.split("\n").filter(Boolean))].join(", ")}`,
      );
      // Let it crash-loop a while: whatever it manages between kills must not delete anything.
      await new Promise((r) => setTimeout(r, 30_000));
      const deletes = (await operatorWrites(env, t0)).filter((w) => w.verb === "delete");
      assert.deepEqual(deletes.map((w) => `${w.resource} ${w.namespace}/${w.name}`), []);
      const lost = (await problems(env)).filter((p) => /EnvoyFilter|RateLimits,/.test(p));
      assert.deepEqual(lost, [], "no EnvoyFilter or RateLimit lost");
      // The kill said by the operator itself (src/cli/oom_restart.ts) once a replica runs again:
      // the killed Pod resized in place to a limit it starts with (the same Pod, so its status
      // keeps lastState OOMKilled; Guaranteed as before, requests = limits), then its own Warning
      // Event and its gauge.
      const resized = { requests: { memory: "256Mi" }, limits: { memory: "256Mi" } };
      await env.kube.must([
        "patch",
        "pod",
        killed.metadata.name,
        "-n",
        DEPLOYED.namespace,
        "--subresource=resize",
        // Strategic: merged into the container by name (its CPU kept).
        "--type=strategic",
        "-p",
        JSON.stringify({ spec: { containers: [{ name: "operator", resources: resized }] } }),
      ]);
      const said = await waitFor("the operator's own OOMKilled Event", async () => {
        const text = await env.kube.must([
          "get",
          "events",
          "-n",
          DEPLOYED.namespace,
          "--field-selector",
          `involvedObject.name=${killed.metadata.name},reason=OOMKilled`,
          "-o",
          "json",
        ]);
        const items = (JSON.parse(text) as {
          items: { type: string; message: string; reportingComponent?: string }[];
        }).items.filter((e) => e.reportingComponent === "platform-operator");
        return items[0];
      }, { timeoutMs: 240_000, intervalMs: 2_000 });
      assert.equal(said.type, "Warning");
      // It names the limit in force when it read its Pod: the resized one, or the low one when a
      // replica got that far between kills (start-up takes less since it loads code on demand).
      assert.match(
        said.message,
        new RegExp(`was OOM-killed at .* its memory limit is (${low}Mi|256Mi)`),
      );
      // The replica that said it may have been one between kills at the low limit: killed again,
      // its container waits out the kubelet's back-off before it runs at the resized limit. So the
      // gauge is read from whichever run of the container serves it, as a scraper would.
      let lastScrape = "";
      const gauge = await waitFor("the gauge served by the resized Pod", async () => {
        const running = (await operatorPods(env)).find((p) =>
          p.metadata.name === killed.metadata.name
        );
        if (!running?.status.podIP) return undefined;
        const scraped = await new Deno.Command("curl", {
          args: [
            "-sk",
            "--max-time",
            "10",
            "-H",
            `Authorization: Bearer ${env.cluster.tokens.admin}`,
            `https://${running.status.podIP}:8080/metrics`,
          ],
        }).output();
        lastScrape = `curl exit ${scraped.code}: ` +
          new TextDecoder().decode(scraped.stderr).slice(0, 200);
        return new TextDecoder().decode(scraped.stdout).match(
          /^platform_operator_last_oom_kill_timestamp_seconds (\S+)$/m,
        ) ?? undefined;
      }, {
        timeoutMs: 240_000,
        intervalMs: 2_000,
        describe: () => Promise.resolve(lastScrape),
      });
      const killedAt = Number(gauge[1]) * 1000;
      assert.ok(killedAt >= t0 && killedAt <= Date.now(), `killed at ${new Date(killedAt)}`);
      figure(
        `OOM kill said by the operator: Event ${said.type} OOMKilled "${said.message}" ` +
          `${Date.now() - t0} ms after the low limit; gauge ${gauge[1]}`,
      );
      // Restored: deploy/'s limit again.
      const t1 = Date.now();
      await setMemoryLimit(env, "512Mi", "128Mi");
      pods = await twoReady(env);
      await editRateLimit(env, REAL_PODS, 9_999);
      await waitConverged(env, "with the limit restored");
      figure(`memory limit restored: two Pods Ready and all converged after ${Date.now() - t1} ms`);
      await assertAtRest(env);
    },
  );
}, { realNode: true, skip: REAL_NODE_SKIP });
