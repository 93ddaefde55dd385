/**
 * A create answered 409 AlreadyExists: the object is read back, so a cache that was behind sees it
 * at the next pass; one outside what the operator watches (another's object of that name) is never
 * seen, and the key backs off instead of creating again every few hundred milliseconds.
 */
import assert from "node:assert/strict";
import { emptyPlan, type Plan } from "../../src/reconcile/plan.ts";
import { MANAGED_BY, MANAGED_BY_LABEL } from "../../src/reconcile/labels.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { ControllerSpec } from "../../src/runtime/controller_spec.ts";
import { Manager } from "../../src/runtime/manager.ts";
import { TestCluster } from "./test_cluster.ts";
import { captureLogger, ManualClock, seededRandom } from "./helpers.ts";
import { CM, images, RL, widget } from "./manager_fixtures.ts";

const managed = { [MANAGED_BY_LABEL]: MANAGED_BY };

/** Widgets that each need the ConfigMap `claim` (with the operator's labels) in their namespace. */
const claims: ControllerSpec = {
  name: "widgets",
  primary: RL,
  watches: [{ type: CM, labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}`, trigger: () => [] }],
  reconcile(key, cache): Plan | undefined {
    const [ns, name] = key.split("/");
    if (!cache.get(RL, ns, name)) return undefined;
    if (cache.get(CM, ns, "claim")) return emptyPlan();
    const claim: KubeObject = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "claim", namespace: ns, labels: managed },
    };
    return { ...emptyPlan(), create: [claim] };
  },
};

/** Creates of ConfigMap `claim` in the first minute, with `existing` there before the start. */
async function createsInAMinute(existing: KubeObject): Promise<{ creates: number; log: string }> {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  cluster.put(CM, existing);
  cluster.put(RL, widget("a", "1"));
  const logs = captureLogger(clock);
  const m = new Manager({
    cluster,
    clock,
    random: seededRandom(7),
    log: logs.log,
    controllers: [claims],
    images,
    identity: "op-0",
    leaderElection: false,
  });
  const done = m.start();
  await clock.advance(60_000);
  await m.stop();
  await done;
  const creates = cluster.calls.filter((c) => c.verb === "create" && c.kind === "ConfigMap");
  return { creates: creates.length, log: logs.lines.map((l) => String(l.msg)).join("\n") };
}

Deno.test("a create of another's object of that name backs off, and says whose it may be", async () => {
  const { creates, log } = await createsInAMinute({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "claim", namespace: "demo" },
  });
  // Backing off from 5 ms, doubling: 14 tries reach a minute. Retried soon, it was 192.
  assert.ok(creates >= 2 && creates <= 16, `${creates} creates in a minute`);
  assert.match(log, /it is not the operator's to change/);
});
