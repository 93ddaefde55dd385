/**
 * The runtime and the Serverless controller together: deleting the module right after its Function
 * CRD became served, with a Function already created, must not delete the CRD (which would delete
 * the user's Functions) on the strength of a watch that has not listed Functions yet.
 */
import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { serverlessController } from "../../src/controllers/serverless.ts";
import { Manager } from "../../src/runtime/manager.ts";
import { preloadControllers } from "../../src/runtime/controller_spec.ts";
import { TestCluster } from "./test_cluster.ts";
import { images } from "./manager_fixtures.ts";
import { captureLogger, ManualClock, seededRandom } from "./helpers.ts";

const SL = RESOURCES.Serverless;
const FN = RESOURCES.Function;
const CRD = RESOURCES.CustomResourceDefinition;
const FN_CRD = "functions.serverless.platform-project.io";
const NS = "platform-system";

Deno.test("a Serverless deleted while its Function watch is not live yet keeps the Function CRD", async () => {
  await preloadControllers([serverlessController]); // before the manual clock runs
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  cluster.unserve(FN); // the Function CRD is not installed yet,
  cluster.notEstablished(FN); // and once the module creates it, it takes a while to be served
  cluster.put(SL, {
    apiVersion: "operator.platform-project.io/v1alpha1",
    kind: "Serverless",
    metadata: { name: "default", namespace: NS },
    spec: {},
  });
  const m = new Manager({
    cluster,
    clock,
    random: seededRandom(5),
    log: captureLogger(clock).log,
    controllers: [serverlessController],
    images,
    identity: "op-0",
    leaderElection: false,
  });
  const done = m.start();
  await clock.advance(60_000);
  assert.ok(cluster.peek(CRD, undefined, FN_CRD), "the module installed the Function CRD");
  // The CRD becomes Established and a user creates a Function at once; the Function watch is
  // still in its backoff from the 404s.
  cluster.establish(FN);
  cluster.put(FN, {
    apiVersion: "serverless.platform-project.io/v1alpha2",
    kind: "Function",
    metadata: { name: "mine", namespace: "users" },
  });
  assert.equal(m.cache.isLive?.(FN), false, "the Function watch is still in its backoff");
  await cluster.delete(SL, NS, "default");
  await clock.advance(120_000);
  assert.ok(cluster.peek(CRD, undefined, FN_CRD), "the Function CRD was not deleted");
  assert.ok(cluster.peek(FN, "users", "mine"));
  const status = cluster.peek(SL, NS, "default")?.status as { state?: string } | undefined;
  assert.equal(status?.state, "Error");
  assert.match(JSON.stringify(status), /1 Function \(\S+\) still exists/);
  // Once the user deletes the Function, the module goes away completely.
  cluster.remove(FN, "users", "mine");
  await clock.advance(120_000);
  assert.equal(cluster.peek(CRD, undefined, FN_CRD), undefined);
  assert.equal(cluster.peek(SL, NS, "default"), undefined);
  await m.stop();
  await done;
});
