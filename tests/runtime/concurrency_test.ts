/**
 * A controller's own `concurrency` bounds its reconciles in flight (a Plan's writes included), else
 * the manager's (`--concurrency`), else DEFAULT_CONCURRENCY. The module controllers use 1, because
 * whether one module object is served depends on the others' claims, which a reconcile must see
 * written before the next one decides.
 */
import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { scalerController } from "../../src/controllers/scaler.ts";
import { serverlessController } from "../../src/controllers/serverless.ts";
import { MANAGED_BY, MANAGED_BY_LABEL } from "../../src/reconcile/labels.ts";
import { emptyPlan } from "../../src/reconcile/plan.ts";
import type { Cluster } from "../../src/runtime/cluster.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { ControllerSpec } from "../../src/runtime/controller_spec.ts";
import { Manager } from "../../src/runtime/manager.ts";
import { DEFAULT_CONCURRENCY } from "../../src/runtime/controller_spec.ts";
import { TestCluster, WIDGET } from "./test_cluster.ts";
import { images } from "./manager_fixtures.ts";
import { captureLogger, ManualClock, seededRandom } from "./helpers.ts";

const RL = WIDGET;
const CM = RESOURCES.ConfigMap;

/** Each Widget gets a ConfigMap; nothing else. */
function children(concurrency?: number): ControllerSpec {
  return {
    name: "children",
    primary: RL,
    watches: [{ type: CM, labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}` }],
    ...(concurrency ? { concurrency } : {}),
    reconcile(key, cache) {
      const [namespace, name] = key.split("/");
      if (!cache.get(RL, namespace, name)) return undefined;
      const cm: KubeObject = {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name, namespace, labels: { [MANAGED_BY_LABEL]: MANAGED_BY } },
        data: { a: "b" },
      };
      return { ...emptyPlan(), apply: [cm] };
    },
  };
}

/** Widgets put before the manager starts: more than any bound the tests below expect. */
const WIDGETS = ["a", "b", "c", "d", "e", "f", "g", "h"];

/**
 * The most ConfigMap applies in flight at once, each taking 50 ms of the manual clock, with the
 * manager's `concurrency` when given.
 */
async function mostInFlight(spec: ControllerSpec, concurrency?: number): Promise<number> {
  const clock = new ManualClock();
  const sim = new TestCluster(clock);
  for (const name of WIDGETS) {
    sim.put(RL, {
      apiVersion: "test.platform-project.io/v1",
      kind: "Widget",
      metadata: { name, namespace: "demo" },
      spec: {},
    });
  }
  let now = 0;
  let most = 0;
  const cluster: Cluster = {
    list: sim.list.bind(sim),
    watch: sim.watch.bind(sim),
    get: sim.get.bind(sim),
    create: sim.create.bind(sim),
    update: sim.update.bind(sim),
    applyStatus: sim.applyStatus.bind(sim),
    patch: sim.patch.bind(sim),
    delete: sim.delete.bind(sim),
    async apply(type, obj, opts) {
      most = Math.max(most, ++now);
      try {
        await clock.sleep(50);
        return await sim.apply(type, obj, opts);
      } finally {
        now--;
      }
    },
  };
  const m = new Manager({
    cluster,
    clock,
    random: seededRandom(3),
    log: captureLogger(clock).log,
    controllers: [spec],
    images,
    identity: "op-0",
    leaderElection: false,
    ...(concurrency ? { concurrency } : {}),
  });
  const done = m.start();
  await clock.advance(2_000);
  assert.ok(sim.peek(CM, "demo", WIDGETS.at(-1)!), "every object was reconciled");
  await m.stop();
  await done;
  return most;
}

Deno.test("a controller's concurrency bounds its reconciles in flight, else the manager's, else the default", async () => {
  assert.equal(await mostInFlight(children(1)), 1);
  assert.equal(await mostInFlight(children(1), 3), 1, "the controller's own wins");
  assert.equal(await mostInFlight(children(), 3), 3, "the manager's (--concurrency)");
  assert.equal(await mostInFlight(children()), DEFAULT_CONCURRENCY, "the default");
  assert.ok(DEFAULT_CONCURRENCY < WIDGETS.length);
});

Deno.test("the module controllers reconcile one object at a time", () => {
  assert.equal(serverlessController.concurrency, 1);
  assert.equal(scalerController.concurrency, 1);
});
