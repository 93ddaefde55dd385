/**
 * A controller whose Plans settle in one pass does not run a key again for its own writes coming
 * back, but must for anything else the answer of such a write holds: a spec edit made on the
 * server just before the status write lands is in the write's answer, and the watch's event of
 * that edit, older than the answer, never reaches the cache.
 */
import assert from "node:assert/strict";
import { type Cluster, forwardingTo } from "../../src/runtime/cluster.ts";
import { emptyPlan, type Plan } from "../../src/reconcile/plan.ts";
import { MANAGED_BY, MANAGED_BY_LABEL } from "../../src/reconcile/labels.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { ControllerSpec } from "../../src/runtime/controller_spec.ts";
import { Manager } from "../../src/runtime/manager.ts";
import { TestCluster } from "./test_cluster.ts";
import { captureLogger, ManualClock, seededRandom } from "./helpers.ts";
import { CM, images, OWNER, RL, widget } from "./manager_fixtures.ts";

/** Widgets with a ConfigMap each holding the widget's value, and the value in the status. */
function spec(reconciles: string[]): ControllerSpec {
  return {
    name: "widgets",
    primary: RL,
    settlesInOnePass: true,
    watches: [{
      type: CM,
      labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}`,
      trigger: (o) =>
        o.metadata.labels?.[OWNER] ? [`${o.metadata.namespace}/${o.metadata.labels[OWNER]}`] : [],
    }],
    reconcile(key, cache): Plan | undefined {
      const [ns, name] = key.split("/");
      const rl = cache.get(RL, ns, name);
      if (!rl) return undefined;
      const value = String((rl.spec as { value: string }).value);
      reconciles.push(value);
      const child: KubeObject = {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
          name: `${name}-cfg`,
          namespace: ns,
          labels: { [MANAGED_BY_LABEL]: MANAGED_BY, [OWNER]: name },
        },
        data: { value },
      };
      return {
        ...emptyPlan(),
        apply: [child],
        status: { value, observedGeneration: rl.metadata.generation },
      };
    },
  };
}

/**
 * Runs widget `a` to value 2 while `edit` changes the server's copy of it just before the status
 * write of value 2 lands (or, with no edit, not at all); returns the child's value 5 minutes on and
 * the values reconciled.
 */
async function race(
  edit: ((cur: KubeObject) => KubeObject) | undefined,
  stall: boolean,
): Promise<{ child: string | undefined; reconciles: string[]; cluster: TestCluster }> {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  let armed = false;
  const cl: Cluster = {
    ...forwardingTo(cluster),
    applyStatus: (type, obj, opts) => {
      if (armed && edit && (obj.status as { value?: string })?.value === "2") {
        armed = false;
        if (stall) cluster.stallWatches();
        cluster.put(RL, edit(cluster.peek(RL, "demo", "a")!));
      }
      return cluster.applyStatus(type, obj, opts);
    },
  };
  cluster.put(RL, widget("a", "1"));
  const reconciles: string[] = [];
  const m = new Manager({
    cluster: cl,
    clock,
    random: seededRandom(7),
    log: captureLogger(clock).log,
    controllers: [spec(reconciles)],
    images,
    identity: "op-0",
    leaderElection: false,
  });
  const done = m.start();
  await clock.advance(1_000);
  assert.equal(
    (cluster.peek(CM, "demo", "a-cfg")?.data as { value?: string } | undefined)?.value,
    "1",
  );
  armed = true;
  cluster.put(RL, { ...cluster.peek(RL, "demo", "a")!, spec: { value: "2" } });
  // Less than the resync (10 minutes), more than the watchdog's restart of a stalled watch.
  await clock.advance(5 * 60_000);
  const child = (cluster.peek(CM, "demo", "a-cfg")?.data as { value?: string } | undefined)?.value;
  await m.stop();
  await done;
  return { child, reconciles, cluster };
}

for (const stall of [false, true]) {
  Deno.test(`settlesInOnePass: a spec edit folded into the status write's answer is reconciled${stall ? " (watches stalled)" : ""}`, async () => {
    const { child, reconciles, cluster } = await race(
      (cur) => ({ ...cur, spec: { value: "3" } }),
      stall,
    );
    assert.equal(child, "3", `reconciled: ${reconciles.join(", ")}`);
    const rl = cluster.peek(RL, "demo", "a")!;
    assert.deepEqual(rl.status, { value: "3", observedGeneration: rl.metadata.generation });
  });
}

Deno.test("settlesInOnePass: a label edit folded into the status write's answer is seen", async () => {
  // No spec change (the generation stays), and it must wake the key all the same: a reducer may
  // read labels.
  const { reconciles } = await race(
    (cur) => ({
      ...cur,
      metadata: { ...cur.metadata, labels: { ...cur.metadata.labels, edited: "yes" } },
    }),
    false,
  );
  // The label edit wakes the key once more: value 2 reconciled twice, then nothing.
  assert.deepEqual(reconciles, ["1", "2", "2"]);
});

Deno.test("settlesInOnePass: its own status write coming back does not run the key again", async () => {
  const { child, reconciles } = await race(undefined, false);
  assert.equal(child, "2");
  assert.deepEqual(reconciles, ["1", "2"]);
});
