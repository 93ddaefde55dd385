/** The Runner under test on the test cluster, and the objects and Plans its tests use. */
import { RESOURCES } from "../../src/api/resources.ts";
import { MANAGED_BY, MANAGED_BY_LABEL, SERVERLESS_FINALIZER } from "../../src/reconcile/labels.ts";
import { emptyPlan, type Plan } from "../../src/reconcile/plan.ts";
import { Cache } from "../../src/runtime/cache/mod.ts";
import type { KubeObject, Projection, ResourceType } from "../../src/api/object.ts";

import { Metrics } from "../../src/runtime/metrics.ts";
import { Runner, type RunnerOptions } from "../../src/runtime/runner.ts";
import { TestCluster } from "./test_cluster.ts";
import { captureLogger, ManualClock, seededRandom } from "./helpers.ts";

/** The primary type of the runner under test. */
export const SL = RESOURCES.Serverless;
/** The type of the objects it installs. */
export const CM = RESOURCES.ConfigMap;
/** Where everything lives. */
export const NS = "platform-system";
/** The labels of what the operator installs. */
export const managed = { [MANAGED_BY_LABEL]: MANAGED_BY };

/**
 * A Runner of controller `serverless` on the test cluster, its cache refreshed on demand from the
 * `watched` types (each with the projection its store keeps, if any).
 */
export function setup(
  watched: readonly (readonly [ResourceType, Projection?])[] = [[SL], [CM], [RESOURCES.Event]],
  options: (cluster: TestCluster) => Partial<RunnerOptions> = () => ({}),
) {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  const cache = new Cache();
  const { log, lines } = captureLogger(clock);
  const metrics = new Metrics();
  const runner = new Runner({
    cluster,
    cache,
    clock,
    random: seededRandom(),
    log,
    metrics,
    controller: "serverless",
    identity: "op-0",
    ...options(cluster),
  });
  /** Lists every cached type again, as the watches would have delivered by now. */
  const refresh = async () => {
    for (const [type, projection] of watched) {
      const store = cache.store(type, undefined, projection);
      store.handle({ type: "init" });
      for (const object of (await cluster.list(type)).items) {
        store.handle({ type: "init-apply", object });
      }
      store.handle({ type: "init-done" });
    }
    cluster.calls.length = 0;
  };
  const primary = () => cache.get(SL, NS, "default")!;
  const signal = new AbortController().signal;
  return { clock, cluster, cache, lines, metrics, runner, refresh, primary, signal };
}

/** The Serverless `default`, with extra metadata and a status. */
export function serverless(
  extra: Partial<KubeObject["metadata"]> = {},
  status?: Record<string, unknown>,
): KubeObject {
  return {
    apiVersion: "operator.platform-project.io/v1alpha1",
    kind: "Serverless",
    metadata: { name: "default", namespace: NS, ...extra },
    spec: {},
    ...(status ? { status } : {}),
  };
}

/** A managed ConfigMap. */
export function configMap(name: string, data: Record<string, string>): KubeObject {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: NS, labels: managed },
    data,
  };
}

/** Finalizer, two ConfigMaps and a Ready status. */
export function installPlan(): Plan {
  return {
    ...emptyPlan(),
    finalizer: { add: SERVERLESS_FINALIZER },
    apply: [configMap("a", { k: "1" }), configMap("b", { k: "2", list: "x" })],
    status: {
      state: "Ready",
      served: "True",
      conditions: [{
        type: "Installed",
        status: "True",
        reason: "Installed",
        message: "Workloads deployed",
        lastTransitionTime: "2026-01-01T00:00:00Z",
      }],
    },
  };
}
