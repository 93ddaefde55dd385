import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { codeOf, drive, world } from "./helpers.ts";

const serverless = (finalizers?: string[]): KubeObject => ({
  apiVersion: "operator.platform-project.io/v1alpha1",
  kind: "Serverless",
  metadata: {
    name: "default",
    namespace: "platform-system",
    ...(finalizers ? { finalizers } : {}),
  },
  spec: {},
});

Deno.test("finalizers: delete sets deletionTimestamp once and bumps generation; removing the last finalizer deletes", async () => {
  const { driver, client } = world();
  const s = await drive(driver, client.create(RESOURCES.Serverless, serverless(["x/hook"])));
  assert.equal(
    await drive(driver, client.delete(RESOURCES.Serverless, "platform-system", "default")),
    true,
  );
  const marked =
    (await drive(driver, client.get(RESOURCES.Serverless, "platform-system", "default")))!;
  assert.ok(marked.metadata.deletionTimestamp);
  assert.equal(marked.metadata.generation, (s.metadata.generation ?? 0) + 1);
  await drive(driver, client.delete(RESOURCES.Serverless, "platform-system", "default"));
  const again =
    (await drive(driver, client.get(RESOURCES.Serverless, "platform-system", "default")))!;
  assert.equal(
    again.metadata.resourceVersion,
    marked.metadata.resourceVersion,
    "a second delete changes nothing",
  );
  // No new finalizers on an object being deleted.
  const add = [{ op: "add" as const, path: "/metadata/finalizers/-", value: "y/hook" }];
  assert.equal(
    await drive(
      driver,
      codeOf(client.patch(RESOURCES.Serverless, "platform-system", "default", add)),
    ),
    422,
  );
  // Removing the finalizer with a resourceVersion test (optimistic concurrency) deletes the object.
  const stale = [{ op: "test" as const, path: "/metadata/resourceVersion", value: "1" }, {
    op: "remove" as const,
    path: "/metadata/finalizers/0",
  }];
  assert.equal(
    await drive(
      driver,
      codeOf(client.patch(RESOURCES.Serverless, "platform-system", "default", stale)),
    ),
    422,
  );
  const ok = [{
    op: "test" as const,
    path: "/metadata/resourceVersion",
    value: again.metadata.resourceVersion,
  }, { op: "remove" as const, path: "/metadata/finalizers/0" }];
  await drive(driver, client.patch(RESOURCES.Serverless, "platform-system", "default", ok));
  assert.equal(
    await drive(driver, client.get(RESOURCES.Serverless, "platform-system", "default")),
    undefined,
  );
});

Deno.test("delete: preconditions on uid and resourceVersion give 409", async () => {
  const { driver, client } = world();
  const s = await drive(driver, client.create(RESOURCES.Serverless, serverless()));
  assert.equal(
    await drive(
      driver,
      codeOf(
        client.delete(RESOURCES.Serverless, "platform-system", "default", {
          preconditions: { uid: "other" },
        }),
      ),
    ),
    409,
  );
  assert.equal(
    await drive(
      driver,
      codeOf(
        client.delete(RESOURCES.Serverless, "platform-system", "default", {
          preconditions: { resourceVersion: "1" },
        }),
      ),
    ),
    409,
  );
  assert.equal(
    await drive(
      driver,
      client.delete(RESOURCES.Serverless, "platform-system", "default", {
        preconditions: { uid: s.metadata.uid },
      }),
    ),
    true,
  );
});

Deno.test("gc: dependents of a deleted owner are deleted in the background; orphaning keeps them", async () => {
  const { driver, client } = world();
  const owner = await drive(
    driver,
    client.create(RESOURCES.ConfigMap, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "owner", namespace: "default" },
    }),
  );
  const ref = { apiVersion: "v1", kind: "ConfigMap", name: "owner", uid: owner.metadata.uid! };
  for (const name of ["d1", "d2"]) {
    await drive(
      driver,
      client.create(RESOURCES.ConfigMap, {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name, namespace: "default", ownerReferences: [ref] },
      }),
    );
  }
  await drive(driver, client.delete(RESOURCES.ConfigMap, "default", "owner"));
  await driver.runFor(2000);
  const left = (await drive(driver, client.list(RESOURCES.ConfigMap, { namespace: "default" })))
    .items.map((o) => o.metadata.name);
  assert.deepEqual(left, []);
  // Orphan: the dependent stays, without the reference.
  const owner2 = await drive(
    driver,
    client.create(RESOURCES.ConfigMap, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "owner2", namespace: "default" },
    }),
  );
  await drive(
    driver,
    client.create(RESOURCES.ConfigMap, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name: "kept",
        namespace: "default",
        ownerReferences: [{ ...ref, name: "owner2", uid: owner2.metadata.uid! }],
      },
    }),
  );
  await drive(
    driver,
    client.delete(RESOURCES.ConfigMap, "default", "owner2", { propagationPolicy: "Orphan" }),
  );
  await driver.runFor(2000);
  const kept = await drive(driver, client.get(RESOURCES.ConfigMap, "default", "kept"));
  assert.ok(kept);
  assert.equal(kept.metadata.ownerReferences, undefined);
  // A dependent created with a dangling owner reference is collected too.
  await drive(
    driver,
    client.create(RESOURCES.ConfigMap, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name: "dangling",
        namespace: "default",
        ownerReferences: [{ ...ref, uid: "no-such-uid" }],
      },
    }),
  );
  await driver.runFor(2000);
  assert.equal(
    await drive(driver, client.get(RESOURCES.ConfigMap, "default", "dangling")),
    undefined,
  );
});

Deno.test("deployments: Pods with template labels become ready; status follows; deleting the Deployment collects them", async () => {
  const { driver, client, cluster } = world();
  const labels = { app: "httpbin" };
  await drive(
    driver,
    client.create(RESOURCES.Namespace, {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "demo" },
    }),
  );
  await drive(
    driver,
    client.apply(RESOURCES.Deployment, {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "httpbin", namespace: "demo" },
      spec: {
        replicas: 2,
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name: "c", image: "httpbin" }] } },
      },
    }, { fieldManager: "kubectl" }),
  );
  await driver.runFor(200);
  const early = cluster.store.get(RESOURCES.Deployment, "demo", "httpbin")!;
  const earlyStatus = early.status as {
    conditions: { type: string; status: string; reason: string }[];
    unavailableReplicas?: number;
  };
  assert.equal(earlyStatus.unavailableReplicas, 2);
  assert.ok(
    earlyStatus.conditions.some((c) =>
      c.type === "Available" && c.status === "False" && c.reason === "MinimumReplicasUnavailable"
    ),
  );
  await driver.runFor(10_000);
  const d = cluster.store.get(RESOURCES.Deployment, "demo", "httpbin")!;
  const status = d.status as Record<string, unknown> & {
    conditions: { type: string; status: string; reason: string }[];
  };
  assert.equal(status.observedGeneration, d.metadata.generation);
  assert.equal(status.readyReplicas, 2);
  assert.equal(status.availableReplicas, 2);
  assert.equal(status.unavailableReplicas, undefined);
  assert.deepEqual(status.conditions.map((c) => `${c.type}=${c.status}/${c.reason}`), [
    "Available=True/MinimumReplicasAvailable",
    "Progressing=True/NewReplicaSetAvailable",
  ]);
  const pods = cluster.store.objects(RESOURCES.Pod, "demo");
  assert.equal(pods.length, 2);
  for (const p of pods) assert.equal(p.metadata.labels?.app, "httpbin");
  await drive(driver, client.delete(RESOURCES.Deployment, "demo", "httpbin"));
  await driver.runFor(2000);
  assert.equal(cluster.store.objects(RESOURCES.Pod, "demo").length, 0);
});

Deno.test("deployments: a creation failure gives ReplicaFailure; a stuck rollout passes its deadline", async () => {
  let failing = true;
  const { driver, client, cluster } = world({
    deployments: {
      createFailure: () => failing ? 'pods "x" is forbidden: exceeded quota' : undefined,
    },
  });
  const labels = { app: "x" };
  await drive(
    driver,
    client.apply(RESOURCES.Deployment, {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "x", namespace: "default" },
      spec: {
        progressDeadlineSeconds: 60,
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: {} },
      },
    }, { fieldManager: "kubectl" }),
  );
  await driver.runFor(61_000);
  const conds = () =>
    (cluster.store.get(RESOURCES.Deployment, "default", "x")!.status as {
      conditions: { type: string; status: string; reason: string }[];
    }).conditions.map((c) => `${c.type}=${c.status}/${c.reason}`);
  assert.deepEqual(conds(), [
    "Available=False/MinimumReplicasUnavailable",
    "Progressing=False/ProgressDeadlineExceeded",
    "ReplicaFailure=True/FailedCreate",
  ]);
  failing = false;
  cluster.deployments.resyncAll();
  await driver.runFor(10_000);
  assert.deepEqual(conds(), [
    "Available=True/MinimumReplicasAvailable",
    "Progressing=True/NewReplicaSetAvailable",
  ]);
});

Deno.test("mesh: the ingress gateway Deployment has ready Pods labelled app: mesh-ingressgateway", async () => {
  const { driver, cluster } = world();
  await driver.runFor(10_000);
  const pods = cluster.store.objects(RESOURCES.Pod, "mesh-system");
  assert.equal(pods.length, 1);
  assert.equal(pods[0].metadata.labels?.app, "mesh-ingressgateway");
  assert.ok(cluster.store.types.serves(RESOURCES.EnvoyFilter));
});

Deno.test("namespaces: deleting one deletes its contents, then the namespace; creating in it meanwhile is 403", async () => {
  const { driver, client, cluster } = world();
  await drive(
    driver,
    client.create(RESOURCES.Namespace, {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "tmp" },
    }),
  );
  await drive(
    driver,
    client.create(RESOURCES.ConfigMap, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "c", namespace: "tmp", finalizers: ["x/y"] },
    }),
  );
  await drive(driver, client.delete(RESOURCES.Namespace, undefined, "tmp"));
  assert.equal(
    await drive(
      driver,
      codeOf(
        client.create(RESOURCES.ConfigMap, {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: "d", namespace: "tmp" },
        }),
      ),
    ),
    403,
  );
  await driver.runFor(2000);
  assert.ok(
    cluster.store.get(RESOURCES.Namespace, undefined, "tmp"),
    "blocked by the ConfigMap's finalizer",
  );
  await drive(
    driver,
    client.patch(RESOURCES.ConfigMap, "tmp", "c", [{ op: "remove", path: "/metadata/finalizers" }]),
  );
  await driver.runFor(2000);
  assert.equal(cluster.store.get(RESOURCES.Namespace, undefined, "tmp"), undefined);
});

Deno.test("finalizers: the DELETED change of a finalizer removal carries the object as it was before the request", async () => {
  const { driver, client, cluster } = world();
  await drive(driver, client.create(RESOURCES.Serverless, serverless(["x/hook"])));
  await drive(driver, client.delete(RESOURCES.Serverless, "platform-system", "default"));
  const seen: (string[] | undefined)[] = [];
  cluster.store.subscribe((c) => {
    if (c.type === "DELETED") seen.push(c.old?.metadata.finalizers);
  });
  await drive(
    driver,
    client.patch(RESOURCES.Serverless, "platform-system", "default", [{
      op: "remove",
      path: "/metadata/finalizers/0",
    }]),
  );
  assert.deepEqual(seen, [["x/hook"]]);
});
