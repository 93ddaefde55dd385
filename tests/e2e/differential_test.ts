/**
 * The differential test: every simulator scenario that needs no data plane and no simulator-only
 * fault runs on the simulator and on the real control plane, and the final statuses (state, served,
 * each condition's type/status/reason, or deleted) must be equal. It keeps the simulator honest.
 */
import assert from "node:assert/strict";
import { isDeepStrictEqual } from "node:util";
import { join } from "node:path";
import { parseScenario, type Scenario } from "../../sim/scenario/format.ts";
import { runScenario } from "../../sim/scenario/run.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { e2eSuite, waitFor } from "./harness.ts";
import { REPO_ROOT } from "./operator.ts";
import {
  asKedaUnreachable,
  cleanup,
  type Finals,
  finalsDiff,
  realFinals,
  simFinals,
  STATUS_RESOURCES,
  withoutAccepted,
} from "./finals.ts";
import { StatusRecorder } from "./recorder.ts";
import { realBlocker, type RealRun, runReal } from "./scenario_real.ts";

const DIR = join(REPO_ROOT, "sim", "scenarios");

async function loadScenarios(): Promise<{ file: string; sc: Scenario }[]> {
  const files: string[] = [];
  for await (const e of Deno.readDir(DIR)) {
    if (e.isFile && e.name.endsWith(".yaml")) files.push(e.name);
  }
  files.sort();
  return await Promise.all(files.map(async (f) => {
    const file = `sim/scenarios/${f}`;
    return { file, sc: parseScenario(await Deno.readTextFile(join(DIR, f)), file) };
  }));
}

const all = await loadScenarios();
const runnable = all.filter(({ sc }) => realBlocker(sc) === undefined);

e2eSuite("differential", async (env, t) => {
  const skipped = all.filter(({ sc }) => realBlocker(sc) !== undefined);
  console.error(
    `differential: ${runnable.length} of ${all.length} scenarios run on the real cluster; simulator only:\n` +
      skipped.map(({ file, sc }) => `  ${file}: ${realBlocker(sc)}`).join("\n"),
  );
  assert.ok(runnable.length > 0, "no scenario of sim/scenarios can run on a real cluster");
  await env.installCrds();
  const recorder = new StatusRecorder(env.cluster, Object.values(STATUS_RESOURCES));
  recorder.start();
  try {
    for (const { file, sc } of runnable) {
      await env.step(t, `${file}: final statuses equal the simulator's`, async () => {
        const sim = await runScenario(sc, { file });
        assert.ok(sim.ok, `the simulator fails ${file} itself: ${sim.failure}`);
        // kwok's KEDA Pods never serve: the aggregator says so, the simulator's Pods do serve.
        const want = asKedaUnreachable(withoutAccepted(simFinals(sim.timeline), false));
        const applied = sc.steps.flatMap((s) => (s.apply ?? []) as KubeObject[]);
        let replicas = 0;
        const run: RealRun = {
          env,
          recorder,
          mark: recorder.mark(),
          startReplica: async () => {
            // The simulator names its replicas platform-operator-0, -1, ... and elects on one Lease.
            run.current = await env.startOperator({
              identity: `platform-operator-${replicas++}`,
              leaderElect: true,
              leaseNamespace: "platform-system",
            });
            return run.current;
          },
        };
        await (await run.startReplica()).waitServing();
        let failure: unknown;
        try {
          await runReal(sc, run);
          for (const [ref, missed] of run.unseen ?? []) {
            console.error(`${file}: transient, not seen on the real cluster: ${ref}: ${missed}`);
          }
          let got: Finals = {};
          await waitFor("the real final statuses to equal the simulator's", async () => {
            got = withoutAccepted(await realFinals(env, Object.keys(want)), true);
            return isDeepStrictEqual(got, want);
          }, { timeoutMs: 120_000, describe: () => Promise.resolve(`\n${finalsDiff(want, got)}`) });
        } catch (e) {
          failure = e;
        }
        if (env.running.length === 0) await run.startReplica(); // cleanup needs an operator
        const problems = await cleanup(env, applied);
        if (failure) throw failure;
        assert.deepEqual(problems, [], `cleanup after ${file} found operator leftovers`);
      });
    }
  } finally {
    await recorder.stop();
  }
});
