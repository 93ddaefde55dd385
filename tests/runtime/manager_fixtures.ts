/** The Manager's tests' controller (Widgets, each with a ConfigMap) and their setup. */
import { RESOURCES } from "../../src/api/resources.ts";
import { ALL_CONTROLLERS } from "../../src/controllers/registry.ts";
import { MANAGED_BY, MANAGED_BY_LABEL } from "../../src/reconcile/labels.ts";
import { emptyPlan, type Plan } from "../../src/reconcile/plan.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { ControllerSpec } from "../../src/runtime/controller_spec.ts";
import { Manager, type ManagerOptions } from "../../src/runtime/manager.ts";
import { TestCluster, WIDGET } from "./test_cluster.ts";
import { captureLogger, link, ManualClock, seededRandom } from "./helpers.ts";

/** The primary type of the test controller. */
export const RL = WIDGET;
/** The type of its children. */
export const CM = RESOURCES.ConfigMap;
/** The finalizer it puts on each Widget. */
export const FINALIZER = "test.platform-project.io/cleanup";
/** The label naming a child's Widget. */
export const OWNER = "test.platform-project.io/owner";
/** Module images (unused by the test controller). */
export const images = {
  serverlessController: "s",
  kedaOperator: "k",
  kedaMetricsServer: "m",
  kedaAdmissionWebhooks: "w",
};

/** A tiny controller: each Widget gets a ConfigMap holding its spec, and a status. */
export function widgets(calls: string[] = [], fail?: (key: string) => boolean): ControllerSpec {
  return {
    name: "widgets",
    primary: RL,
    watches: [{
      type: CM,
      labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}`,
      trigger: (obj) => {
        const owner = obj.metadata.labels?.[OWNER];
        return owner ? [`${obj.metadata.namespace}/${owner}`] : [];
      },
    }],
    reconcile(key, cache, ctx): Plan | undefined {
      calls.push(key);
      if (fail?.(key)) throw new Error(`boom ${key}`);
      const [ns, name] = key.split("/");
      const rl = cache.get(RL, ns, name);
      if (!rl) return undefined;
      const childName = `${name}-cfg`;
      if (rl.metadata.deletionTimestamp) {
        const child = cache.get(CM, ns, childName);
        return {
          ...emptyPlan(),
          delete: child
            ? [{ apiVersion: "v1", kind: "ConfigMap", namespace: ns, name: childName }]
            : [],
          finalizer: child ? undefined : { remove: FINALIZER },
        };
      }
      const child: KubeObject = {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
          name: childName,
          namespace: ns,
          labels: { [MANAGED_BY_LABEL]: MANAGED_BY, [OWNER]: name },
        },
        data: { value: String((rl.spec as { value: string }).value) },
      };
      const ok = ctx.lastOutcome?.ok !== false;
      return {
        ...emptyPlan(),
        finalizer: { add: FINALIZER },
        apply: [child],
        status: { state: ok ? "Ready" : "Error" },
        events: [{
          type: "Normal",
          reason: "Configured",
          message: `value ${(rl.spec as { value: string }).value}`,
        }],
      };
    },
  };
}

/** The Widget `name` in namespace demo with spec value `value`. */
export function widget(name: string, value: string): KubeObject {
  return {
    apiVersion: "test.platform-project.io/v1",
    kind: "Widget",
    metadata: { name, namespace: "demo" },
    spec: { value },
  };
}

/**
 * The test cluster and a factory of Managers running `widgets`: each replica on its own link,
 * which a test can fail or hang.
 */
export function setup(opts: Partial<ManagerOptions> = {}, seed = 7) {
  const clock = new ManualClock();
  const cluster = new TestCluster(clock);
  const { log, lines } = captureLogger(clock);
  const calls: string[] = [];
  const mk = (identity: string, extra: Partial<ManagerOptions> = {}, onlyKinds?: string[]) => {
    const net = link(cluster, onlyKinds);
    const m = new Manager({
      cluster: net.cluster,
      clock,
      random: seededRandom(seed),
      log: log.child({ replica: identity }),
      controllers: [widgets(calls)],
      images,
      identity,
      leaderElection: false,
      ...opts,
      ...extra,
    });
    return { m, net, done: m.start() };
  };
  return { clock, cluster, lines, calls, mk };
}

/** The writes of a link that are not the Lease's. */
export const writesExceptLease = (w: string[]) => w.filter((x) => !x.endsWith(":Lease"));

/** A manager of every controller on `cluster`, no leader election. */
export function allControllers(
  cluster: TestCluster,
  clock: ManualClock,
  more: Partial<ManagerOptions> = {},
): Manager {
  return new Manager({
    cluster,
    clock,
    random: seededRandom(7),
    log: captureLogger(clock).log,
    controllers: [...ALL_CONTROLLERS],
    images,
    identity: "op-0",
    leaderElection: false,
    ...more,
  });
}
