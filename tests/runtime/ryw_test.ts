/**
 * Read-your-writes through the manager: a deletion that starts while the watch of the children is
 * behind must not take children this replica just created for absent.
 */
import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { MANAGED_BY, MANAGED_BY_LABEL } from "../../src/reconcile/labels.ts";
import { emptyPlan, type Plan } from "../../src/reconcile/plan.ts";
import { type Cluster, forwardingTo, type WatchEvent } from "../../src/runtime/cluster.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { ControllerSpec } from "../../src/runtime/controller_spec.ts";
import { Manager } from "../../src/runtime/manager.ts";
import { TestCluster, WIDGET } from "./test_cluster.ts";
import { images } from "./manager_fixtures.ts";
import { captureLogger, ManualClock, seededRandom } from "./helpers.ts";

const RL = WIDGET;
const CM = RESOURCES.ConfigMap;
const FINALIZER = "test.platform-project.io/cleanup";
const managed = { [MANAGED_BY_LABEL]: MANAGED_BY };

/** Each Widget owns one ConfigMap; on deletion the ConfigMap goes first, the finalizer last. */
const owner: ControllerSpec = {
  name: "owner",
  primary: RL,
  watches: [{
    type: CM,
    labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}`,
    trigger: (obj) => [`${obj.metadata.namespace}/${obj.metadata.name.replace(/-cfg$/, "")}`],
  }],
  reconcile(key, cache): Plan | undefined {
    const [ns, name] = key.split("/");
    const rl = cache.get(RL, ns, name);
    if (!rl) return undefined;
    const child = cache.get(CM, ns, `${name}-cfg`);
    if (rl.metadata.deletionTimestamp) {
      return child
        ? {
          ...emptyPlan(),
          delete: [{ apiVersion: "v1", kind: "ConfigMap", namespace: ns, name: `${name}-cfg` }],
        }
        : { ...emptyPlan(), finalizer: { remove: FINALIZER } };
    }
    const cfg: KubeObject = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: `${name}-cfg`, namespace: ns, labels: managed },
      data: { v: "1" },
    };
    return { ...emptyPlan(), finalizer: { add: FINALIZER }, apply: [cfg] };
  },
};

/** The cluster, with the ConfigMap watch holding its events back until `release()`. */
function laggingConfigMaps(cluster: TestCluster): { cluster: Cluster; release: () => void } {
  let open!: () => void;
  const gate = new Promise<void>((r) => open = r);
  const lagging: Cluster = {
    ...forwardingTo(cluster),
    async *watch(type, opts, signal): AsyncIterable<WatchEvent> {
      for await (const ev of cluster.watch(type, opts, signal)) {
        if (type.kind === "ConfigMap") await gate;
        yield ev;
      }
    },
  };
  return { cluster: lagging, release: () => open() };
}

Deno.test("a deletion right after install deletes the child it created before removing the finalizer", async () => {
  const clock = new ManualClock();
  const sim = new TestCluster(clock);
  const { cluster, release } = laggingConfigMaps(sim);
  const m = new Manager({
    cluster,
    clock,
    random: seededRandom(1),
    log: captureLogger(clock).log,
    controllers: [owner],
    images,
    identity: "op-0",
    leaderElection: false,
    watchIdleMs: 3_600_000,
  });
  const done = m.start();
  await clock.advance(100); // synced; the ConfigMap watch is open but lags from here on
  sim.put(RL, {
    apiVersion: "test.platform-project.io/v1",
    kind: "Widget",
    metadata: { name: "a", namespace: "demo" },
  });
  await clock.advance(100);
  assert.ok(sim.peek(CM, "demo", "a-cfg"), "the child was created");
  const applies = sim.writes().filter((w) => w.verb === "apply").length;
  await sim.delete(RL, "demo", "a");
  await clock.advance(1_000);
  assert.equal(sim.peek(CM, "demo", "a-cfg"), undefined, "the child was deleted, not leaked");
  assert.equal(applies, 1, "the child was applied once");
  release();
  await clock.advance(1_000);
  assert.equal(sim.peek(RL, "demo", "a"), undefined, "then the finalizer came off");
  await m.stop();
  await done;
});
