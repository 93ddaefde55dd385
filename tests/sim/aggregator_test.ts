/**
 * The simulator's aggregator (sim/cluster/aggregator.ts) sets an APIService's Available condition
 * with kube-aggregator's reasons, and the invariant `scaler-ready-needs-metrics-api` catches a
 * Scaler written Ready while KEDA's metrics APIService is not Available.
 */
import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import type { KubeObject } from "../../src/api/object.ts";
import type { Condition } from "../../src/api/common.ts";
import { InvariantChecker, METRICS_LAG_MS } from "../../sim/invariants.ts";
import type { Actor } from "../../sim/cluster/mod.ts";
import { drive, world } from "./helpers.ts";

const USER: Actor = { name: "user", manager: "kubectl" };
const KUBELET: Actor = { name: "kubelet", manager: "kubelet" };
const NS = "platform-system";
const SERVER = "keda-operator-metrics-apiserver";

const apiService: KubeObject = {
  apiVersion: "apiregistration.k8s.io/v1",
  kind: "APIService",
  metadata: { name: "v1beta1.external.metrics.k8s.io" },
  spec: {
    group: "external.metrics.k8s.io",
    version: "v1beta1",
    service: { name: SERVER, namespace: NS, port: 443 },
    groupPriorityMinimum: 100,
    versionPriority: 100,
  },
};

const service = (port: number): KubeObject => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { name: SERVER, namespace: NS },
  spec: { selector: { app: SERVER }, ports: [{ name: "https", port, targetPort: 6443 }] },
});

/** A world whose aggregator fails discovery while `cut` says so. */
function setup(cut: { on: boolean }) {
  const w = world({
    aggregator: {
      discoveryError: (_ns, _name, url) =>
        cut.on ? `Get "${url}": dial tcp 10.96.0.40:443: i/o timeout` : undefined,
    },
  });
  const available = () =>
    ((w.store.get(RESOURCES.APIService, undefined, apiService.metadata.name)?.status as
      | { conditions?: Condition[] }
      | undefined)?.conditions ?? []).find((c) => c.type === "Available");
  const settle = () => w.driver.runFor(1_000);
  return { ...w, available, settle };
}

/** Creates a Pod of the metrics server, ready or not. */
function pod(store: ReturnType<typeof world>["store"], ready: boolean): KubeObject {
  const created = store.create(RESOURCES.Pod, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: `${SERVER}-1`, namespace: NS, labels: { app: SERVER } },
    spec: { containers: [{ name: "server", image: "keda" }] },
  }, USER).obj;
  const status = {
    phase: "Running",
    conditions: [{ type: "Ready", status: ready ? "True" : "False" }],
  };
  return store.update(RESOURCES.Pod, { ...created, status }, KUBELET, "status").obj;
}

Deno.test("aggregator: Available follows the Service, its ready Pods and the discovery check", async () => {
  const cut = { on: false };
  const { store, available, settle, clock, cluster } = setup(cut);
  store.create(RESOURCES.APIService, apiService, USER);
  await settle();
  assert.deepEqual([available()?.status, available()?.reason, available()?.message], [
    "False",
    "ServiceNotFound",
    `service/${SERVER} in "${NS}" is not present`,
  ]);
  store.create(RESOURCES.Service, service(8443), USER);
  await settle();
  assert.equal(available()?.reason, "ServicePortError");
  store.delete(RESOURCES.Service, NS, SERVER, {}, USER);
  store.create(RESOURCES.Service, service(443), USER);
  await settle();
  assert.deepEqual([available()?.status, available()?.reason], ["False", "MissingEndpoints"]);
  assert.match(available()!.message, /have no addresses with port name "https"$/);
  const p = pod(store, false);
  await settle();
  assert.equal(available()?.reason, "MissingEndpoints", "a Pod that is not ready is no endpoint");
  store.update(
    RESOURCES.Pod,
    { ...p, status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] } },
    KUBELET,
    "status",
  );
  await settle();
  assert.deepEqual([available()?.status, available()?.reason], ["True", "Passed"]);
  const turnedTrue = available()!.lastTransitionTime;
  cut.on = true;
  // As the swarm's fault does: the aggregator checks again when the cut starts.
  cluster.aggregator.resync();
  clock.jump(5_000);
  await settle();
  assert.deepEqual([available()?.status, available()?.reason], ["False", "FailedDiscoveryCheck"]);
  assert.match(
    available()!.message,
    /^failing or missing response from https:\/\/keda-operator-metrics-apiserver\.platform-system\.svc:443\/apis\/external\.metrics\.k8s\.io\/v1beta1: /,
  );
  assert.notEqual(available()!.lastTransitionTime, turnedTrue);
});

Deno.test("invariants: a Scaler written Ready while KEDA's metrics APIService is not Available is caught", async () => {
  const cut = { on: false };
  const w = setup(cut);
  const { store, cluster, driver, client, settle, clock } = w;
  const checker = new InvariantChecker(cluster);
  // This check's own violations: the world has no KEDA Deployments, which another check reports.
  const seen = () =>
    checker.violations.filter((v) => v.invariant === "scaler-ready-needs-metrics-api");
  const op = cluster.client("operator/platform-operator-0", { manager: "platform-operator" });
  const scaler: KubeObject = {
    apiVersion: "operator.platform-project.io/v1alpha1",
    kind: "Scaler",
    metadata: { name: "default", namespace: NS },
    spec: {},
  };
  const write = (state: string) =>
    drive(
      driver,
      op.applyStatus(RESOURCES.Scaler, {
        ...scaler,
        status: {
          served: "True",
          state,
          kedaVersion: state,
          conditions: [{
            type: "Installed",
            status: state === "Ready" ? "True" : "Unknown",
            reason: state === "Ready" ? "Verified" : "Verification",
            message: state,
            lastTransitionTime: "2026-01-01T00:00:00Z",
          }],
        },
      }, { fieldManager: "platform-operator" }),
    );
  await drive(driver, client.create(RESOURCES.Scaler, scaler));
  await write("Processing");
  await write("Ready");
  assert.match(seen()[0]?.message ?? "", /does not exist$/);
  checker.violations.length = 0;
  store.create(RESOURCES.APIService, apiService, USER);
  store.create(RESOURCES.Service, service(443), USER);
  pod(store, true);
  await settle();
  await write("Processing");
  await write("Ready");
  assert.deepEqual(seen(), []);
  // The path to the metrics server breaks: a Ready already under way may land within the lag.
  cut.on = true;
  cluster.aggregator.resync();
  await settle();
  await write("Processing");
  await write("Ready");
  assert.deepEqual(seen(), []);
  // Time the clock jumped over (a paused VM: no timer, no watch event in it) is not the lag.
  clock.jump(METRICS_LAG_MS + 1_000);
  await write("Processing");
  await write("Ready");
  assert.deepEqual(seen(), []);
  // Time that ran is.
  clock.advanceTo(clock.now() + METRICS_LAG_MS + 1_000);
  await write("Processing");
  await write("Ready");
  assert.match(
    seen()[0]?.message ?? "",
    /is not Available \(False\/FailedDiscoveryCheck\) and was not for \d+ ms \(\d+ ms of it a clock jump\)$/,
  );
});
