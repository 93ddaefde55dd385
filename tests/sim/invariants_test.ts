import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { SCALER_FINALIZER } from "../../src/reconcile/labels.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { InvariantChecker } from "../../sim/invariants.ts";
import { codeOf, drive, world } from "./helpers.ts";

const OPERATOR = "operator/platform-operator-0";

function setup() {
  const w = world();
  const checker = new InvariantChecker(w.cluster);
  const op = w.cluster.client(OPERATOR, { manager: "platform-operator" });
  return { ...w, checker, op };
}

const scaler = (name: string, namespace = "platform-system"): KubeObject => ({
  apiVersion: "operator.platform-project.io/v1alpha1",
  kind: "Scaler",
  metadata: { name, namespace },
  spec: {},
});

Deno.test("invariants: the operator deleting an object it did not create is caught", async () => {
  const { driver, client, op, checker } = setup();
  await drive(
    driver,
    client.create(RESOURCES.ConfigMap, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "mine", namespace: "default" },
    }),
  );
  await drive(
    driver,
    op.create(RESOURCES.ConfigMap, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "its", namespace: "default" },
    }),
  );
  await drive(driver, op.delete(RESOURCES.ConfigMap, "default", "its"));
  assert.ok(checker.ok, "deleting its own object is fine");
  await drive(driver, op.delete(RESOURCES.ConfigMap, "default", "mine"));
  assert.equal(checker.violations[0]?.invariant, "operator-deletes-only-its-own");
});

Deno.test("invariants: the operator changing a user's spec or labels is caught; status and finalizers are not", async () => {
  const { driver, client, op, checker } = setup();
  await drive(driver, client.create(RESOURCES.Scaler, scaler("default")));
  await drive(
    driver,
    op.patch(RESOURCES.Scaler, "platform-system", "default", [{
      op: "add",
      path: "/metadata/finalizers",
      value: [SCALER_FINALIZER],
    }]),
  );
  await drive(
    driver,
    op.applyStatus(RESOURCES.Scaler, {
      ...scaler("default"),
      status: {
        served: "True",
        state: "Processing",
        conditions: [{
          type: "Installed",
          status: "Unknown",
          reason: "Initialized",
          message: "",
          lastTransitionTime: "2026-01-01T00:00:00Z",
        }],
      },
    }, { fieldManager: "platform-operator" }),
  );
  checker.checkState();
  assert.ok(checker.ok, JSON.stringify(checker.violations));
  await drive(
    driver,
    op.patch(RESOURCES.Scaler, "platform-system", "default", [{
      op: "add",
      path: "/spec/logging",
      value: { operator: { level: "debug" } },
    }]),
  );
  assert.equal(checker.violations[0]?.invariant, "user-spec-unchanged");
});

Deno.test("invariants: two served objects of a singleton kind, and a status outside the table, are caught", async () => {
  const { driver, client, op, checker } = setup();
  const status = (served: string, state: string, reason: string) => ({
    served,
    state,
    conditions: [{
      type: "Installed",
      status: state === "Warning" ? "True" : "False",
      reason,
      message: "",
      lastTransitionTime: "2026-01-01T00:00:00Z",
    }],
  });
  await drive(driver, client.create(RESOURCES.Scaler, scaler("a")));
  await drive(driver, client.create(RESOURCES.Scaler, scaler("b")));
  await drive(
    driver,
    op.applyStatus(RESOURCES.Scaler, {
      ...scaler("a"),
      status: status("True", "Warning", "Verified"),
    }, { fieldManager: "platform-operator" }),
  );
  await drive(
    driver,
    op.applyStatus(RESOURCES.Scaler, {
      ...scaler("b"),
      status: status("False", "Error", "KedaDuplicated"),
    }, { fieldManager: "platform-operator" }),
  );
  checker.checkState();
  assert.ok(checker.ok, JSON.stringify(checker.violations));
  await drive(
    driver,
    op.applyStatus(RESOURCES.Scaler, {
      ...scaler("b"),
      status: status("True", "Warning", "Verified"),
    }, { fieldManager: "platform-operator" }),
  );
  checker.checkState();
  assert.equal(checker.violations[0]?.invariant, "one-served-singleton");
  await drive(
    driver,
    op.applyStatus(RESOURCES.Scaler, {
      ...scaler("b"),
      status: status("False", "Warning", "KedaDuplicated"),
    }, { fieldManager: "platform-operator" }),
  );
  checker.checkState();
  assert.ok(checker.violations.some((v) => v.invariant === "status-is-a-table-row"));
});

Deno.test("invariants: removing a module finalizer while installed objects remain is caught", async () => {
  const { driver, client, op, checker } = setup();
  await drive(
    driver,
    client.create(RESOURCES.Scaler, {
      ...scaler("default"),
      metadata: { name: "default", namespace: "platform-system", finalizers: [SCALER_FINALIZER] },
    }),
  );
  await drive(
    driver,
    op.applyStatus(RESOURCES.Scaler, {
      ...scaler("default"),
      status: {
        served: "True",
        state: "Warning",
        conditions: [{
          type: "Installed",
          status: "True",
          reason: "Verified",
          message: "",
          lastTransitionTime: "2026-01-01T00:00:00Z",
        }],
      },
    }, { fieldManager: "platform-operator" }),
  );
  await drive(
    driver,
    op.apply(RESOURCES.ConfigMap, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name: "keda-config",
        namespace: "platform-system",
        labels: {
          "app.kubernetes.io/managed-by": "platform-operator",
          "operator.platform-project.io/module": "keda",
        },
      },
    }, { fieldManager: "platform-operator" }),
  );
  await drive(driver, client.delete(RESOURCES.Scaler, "platform-system", "default"));
  await drive(
    driver,
    op.patch(RESOURCES.Scaler, "platform-system", "default", [{
      op: "remove",
      path: "/metadata/finalizers/0",
    }]),
  );
  assert.equal(checker.violations[0]?.invariant, "finalizer-after-cleanup");
  assert.match(checker.violations[0].message, /ConfigMap platform-system\/keda-config/);
});

const rl = (name: string): KubeObject => ({
  apiVersion: "gateway.platform-project.io/v1alpha1",
  kind: "RateLimit",
  metadata: { name, namespace: "default" },
  spec: {
    selectorLabels: { app: "x" },
    local: { defaultBucket: { maxTokens: 1, tokensPerFill: 1, fillInterval: "1m" } },
  },
});

const filterOf = (owner: KubeObject): KubeObject => ({
  apiVersion: "networking.istio.io/v1alpha3",
  kind: "EnvoyFilter",
  metadata: {
    name: owner.metadata.name,
    namespace: "default",
    labels: {
      "app.kubernetes.io/managed-by": "platform-operator",
      "operator.platform-project.io/module": "ratelimit",
    },
    ownerReferences: [{
      apiVersion: owner.apiVersion,
      kind: "RateLimit",
      name: owner.metadata.name,
      uid: owner.metadata.uid!,
    }],
  },
  spec: { workloadSelector: { labels: { app: "x" } } },
});

Deno.test("invariants: dropping a RateLimit's filter with no older RateLimit to claim its Pods is caught", async () => {
  const { driver, client, op, checker } = setup();
  const a = await drive(driver, client.create(RESOURCES.RateLimit, rl("a")));
  await drive(driver, op.create(RESOURCES.EnvoyFilter, filterOf(a)));
  await drive(driver, op.delete(RESOURCES.EnvoyFilter, "default", "a"));
  assert.equal(checker.violations[0]?.invariant, "last-good-kept");
  // The same with an older RateLimit in the namespace: a conflict may withdraw it.
  const second = setup();
  await drive(second.driver, second.client.create(RESOURCES.RateLimit, rl("older")));
  second.clock.jump(1_000);
  const b = await drive(second.driver, second.client.create(RESOURCES.RateLimit, rl("b")));
  await drive(second.driver, second.op.create(RESOURCES.EnvoyFilter, filterOf(b)));
  await drive(second.driver, second.op.delete(RESOURCES.EnvoyFilter, "default", "b"));
  assert.ok(second.checker.ok, JSON.stringify(second.checker.violations));
  // And with the RateLimit gone, removing its filter is cleanup.
  await drive(driver, client.delete(RESOURCES.RateLimit, "default", "a"));
  const c = await drive(driver, client.create(RESOURCES.RateLimit, rl("c")));
  await drive(driver, op.create(RESOURCES.EnvoyFilter, filterOf(c)));
  await drive(driver, client.delete(RESOURCES.RateLimit, "default", "c"));
  const before = checker.violations.length;
  await drive(driver, op.delete(RESOURCES.EnvoyFilter, "default", "c")).catch(() => {});
  assert.equal(checker.violations.length, before);
});

Deno.test("invariants: a write sent by a replica the election Lease does not name is caught when sent", async () => {
  const w = world();
  const lease = { namespace: "platform-system", name: "platform-operator" };
  const checker = new InvariantChecker(w.cluster, lease);
  w.cluster.onRequest = (...args) => checker.checkRequest(...args);
  const a = w.cluster.client("operator/platform-operator-0");
  const b = w.cluster.client("operator/platform-operator-1");
  const cm = (name: string): KubeObject => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: "default" },
  });
  await drive(
    w.driver,
    a.create(RESOURCES.Lease, {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: lease,
      spec: { holderIdentity: "platform-operator-0" },
    }),
  );
  await drive(w.driver, a.create(RESOURCES.ConfigMap, cm("by-leader")));
  await drive(w.driver, b.get(RESOURCES.ConfigMap, "default", "by-leader"));
  await drive(w.driver, b.get(RESOURCES.Lease, lease.namespace, lease.name));
  // Campaigning (a write to the election Lease itself) is what a standby does.
  const campaign = b.create(RESOURCES.Lease, {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: lease,
  });
  assert.equal(await drive(w.driver, codeOf(campaign)), 409);
  assert.ok(checker.ok, JSON.stringify(checker.violations));
  // Sent, not landed: the check runs before any latency or fault, so a 409 would not hide it.
  const late = b.create(RESOURCES.ConfigMap, cm("by-leader"));
  late.catch(() => {});
  assert.equal(checker.violations[0]?.invariant, "writes-only-while-leading");
  assert.match(checker.violations[0].message, /platform-operator-1 sent create ConfigMap/);
  assert.match(checker.violations[0].message, /names platform-operator-0/);
});

Deno.test("invariants: a Serverless written Ready after its Deployment stopped being ready is caught; a clock jump is not the lag", () => {
  const { store, clock, checker } = setup();
  const user = { name: "user", manager: "kubectl" };
  const operator = { name: OPERATOR, manager: "platform-operator" };
  const status = (ready: boolean) => ({
    observedGeneration: 1,
    replicas: 1,
    updatedReplicas: 1,
    ...(ready ? {} : { unavailableReplicas: 1 }),
    conditions: [{ type: "Available", status: ready ? "True" : "False" }],
  });
  let dep = store.create(RESOURCES.Deployment, {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "serverless-ctrl-mngr", namespace: "default" },
    spec: {},
  }, user).obj;
  // The Deployment controller's report (a create drops the status, as the API server does).
  const report = (ready: boolean) =>
    dep = store.update(RESOURCES.Deployment, { ...dep, status: status(ready) }, user, "status").obj;
  report(true);
  let module = store.create(RESOURCES.Serverless, {
    apiVersion: "operator.platform-project.io/v1alpha1",
    kind: "Serverless",
    metadata: { name: "default", namespace: "default" },
    spec: {},
  }, user).obj;
  const write = (state: string) => {
    module = store.update(
      RESOURCES.Serverless,
      { ...module, status: { state, served: "True" } },
      operator,
      "status",
    ).obj;
  };
  const seen = () => checker.violations.filter((v) => v.invariant === "module-ready-needs-rollout");
  write("Ready");
  assert.deepEqual(seen(), []);
  report(false);
  // A Ready under way when the rollout broke lands within the lag.
  write("Processing");
  write("Ready");
  assert.deepEqual(seen(), []);
  // Time the clock jumped over (a paused VM: no watch event, no timer in it) is not the lag.
  clock.jump(60_000);
  write("Processing");
  write("Ready");
  assert.deepEqual(seen(), []);
  // Time that ran is.
  clock.advanceTo(clock.now() + 20_001);
  write("Processing");
  write("Ready");
  assert.equal(seen().length, 1);
  assert.match(
    seen()[0].message,
    /wrote Serverless default\/default Ready while Deployment default\/serverless-ctrl-mngr is not ready \(waiting: 1 replica\(s\) unavailable\) and was not for 80001 ms \(60000 ms of it a clock jump\)$/,
  );
});
