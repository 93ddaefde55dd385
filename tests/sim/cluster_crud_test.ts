import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { customResourceDefinitions } from "../../src/crd/definitions.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { codeOf, drive, world } from "./helpers.ts";

const cm = (name: string, data: Record<string, string>, namespace = "default"): KubeObject => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace },
  data,
});

const serverless = (name: string, spec: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: "operator.platform-project.io/v1alpha1",
  kind: "Serverless",
  metadata: { name, namespace: "platform-system" },
  spec,
});

Deno.test("cluster: create, get, 409 on an existing name, 404 on a missing one", async () => {
  const { driver, client } = world();
  const created = await drive(driver, client.create(RESOURCES.ConfigMap, cm("a", { k: "v" })));
  assert.equal(created.metadata.generation, 1);
  assert.ok(
    created.metadata.uid && created.metadata.creationTimestamp && created.metadata.resourceVersion,
  );
  assert.equal(await drive(driver, codeOf(client.create(RESOURCES.ConfigMap, cm("a", {})))), 409);
  assert.deepEqual((await drive(driver, client.get(RESOURCES.ConfigMap, "default", "a")))?.data, {
    k: "v",
  });
  assert.equal(await drive(driver, client.get(RESOURCES.ConfigMap, "default", "nope")), undefined);
  assert.equal(
    await drive(driver, codeOf(client.update(RESOURCES.ConfigMap, cm("nope", {})))),
    404,
  );
  assert.equal(await drive(driver, client.delete(RESOURCES.ConfigMap, "default", "nope")), false);
  assert.equal(
    await drive(driver, codeOf(client.create(RESOURCES.ConfigMap, cm("x", {}, "missing-ns")))),
    404,
  );
});

Deno.test("cluster: resourceVersion is one global counter; a stale update gets 409", async () => {
  // An empty world: no background writers between the two creates.
  const { driver, client } = world({ empty: true });
  await drive(
    driver,
    client.create(RESOURCES.Namespace, {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "default" },
    }),
  );
  const crd = customResourceDefinitions().find((c) => c.spec.names.kind === "Serverless")!;
  await drive(
    driver,
    client.create(RESOURCES.CustomResourceDefinition, crd as unknown as KubeObject),
  );
  await drive(
    driver,
    client.create(RESOURCES.Namespace, {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "platform-system" },
    }),
  );
  await driver.runFor(1000);
  const a = await drive(driver, client.create(RESOURCES.ConfigMap, cm("a", {})));
  const b = await drive(driver, client.create(RESOURCES.ConfigMap, cm("b", {})));
  assert.equal(Number(b.metadata.resourceVersion), Number(a.metadata.resourceVersion) + 1);
  const a2 = await drive(driver, client.update(RESOURCES.ConfigMap, { ...a, data: { x: "1" } }));
  assert.ok(Number(a2.metadata.resourceVersion) > Number(b.metadata.resourceVersion));
  assert.equal(
    await drive(driver, codeOf(client.update(RESOURCES.ConfigMap, { ...a, data: { x: "2" } }))),
    409,
  );
  // Custom resources need a resourceVersion on update (AllowUnconditionalUpdate is false).
  const s = await drive(driver, client.create(RESOURCES.Serverless, serverless("default")));
  const { resourceVersion: _, ...meta } = s.metadata;
  assert.equal(
    await drive(driver, codeOf(client.update(RESOURCES.Serverless, { ...s, metadata: meta }))),
    422,
  );
});

Deno.test("cluster: generation bumps on spec changes only, not on metadata or status", async () => {
  const { driver, client } = world();
  const s = await drive(driver, client.create(RESOURCES.Serverless, serverless("default")));
  assert.equal(s.metadata.generation, 1);
  const labelled = await drive(
    driver,
    client.update(RESOURCES.Serverless, { ...s, metadata: { ...s.metadata, labels: { a: "b" } } }),
  );
  assert.equal(labelled.metadata.generation, 1);
  const st = await drive(
    driver,
    client.applyStatus(RESOURCES.Serverless, {
      ...serverless("default"),
      status: { served: "True", state: "Ready" },
    }, { fieldManager: "op" }),
  );
  assert.equal(st.metadata.generation, 1);
  assert.deepEqual(st.status, { served: "True", state: "Ready" });
  const changed = await drive(
    driver,
    client.update(RESOURCES.Serverless, { ...st, spec: { logLevel: "debug" } }),
  );
  assert.equal(changed.metadata.generation, 2);
});

Deno.test("cluster: main-resource writes ignore status; applyStatus touches only status", async () => {
  const { driver, client } = world();
  const created = await drive(
    driver,
    client.create(RESOURCES.Serverless, { ...serverless("default"), status: { served: "True" } }),
  );
  assert.equal(
    created.status,
    undefined,
    "create drops status of a type with a status subresource",
  );
  const withStatus = await drive(
    driver,
    client.applyStatus(RESOURCES.Serverless, {
      ...serverless("default"),
      status: { served: "False", state: "Error" },
    }, { fieldManager: "op" }),
  );
  const updated = await drive(
    driver,
    client.update(RESOURCES.Serverless, {
      ...withStatus,
      spec: { logLevel: "warn" },
      status: { served: "True" },
    }),
  );
  assert.deepEqual(updated.status, { served: "False", state: "Error" });
  const statusOnly = await drive(
    driver,
    client.applyStatus(RESOURCES.Serverless, {
      ...serverless("default", { logLevel: "error" }),
      status: { served: "True", state: "Ready" },
    }, { fieldManager: "op" }),
  );
  assert.deepEqual(statusOnly.spec, { logLevel: "warn" });
  assert.equal(
    await drive(
      driver,
      codeOf(
        client.applyStatus(RESOURCES.Serverless, {
          ...serverless("ghost"),
          status: { served: "True" },
        }, { fieldManager: "op" }),
      ),
    ),
    404,
  );
});

Deno.test("cluster: the project's custom resources are validated with their schemas (422 Invalid)", async () => {
  const { driver, client } = world();
  const bad = {
    apiVersion: "gateway.platform-project.io/v1alpha1",
    kind: "RateLimit",
    metadata: { name: "rl", namespace: "default" },
    spec: {
      selectorLabels: { app: "x" },
      local: { defaultBucket: { maxTokens: 0, tokensPerFill: 1, fillInterval: "1s" } },
    },
  };
  const err = await drive(driver, client.create(RESOURCES.RateLimit, bad).catch((e) => e));
  assert.equal(err.code, 422);
  assert.equal(err.reason, "Invalid");
  assert.match(
    err.message,
    /^RateLimit\.gateway\.platform-project\.io "rl" is invalid: spec\.local\.defaultBucket\.maxTokens: Invalid value/,
  );
  const s = await drive(driver, client.create(RESOURCES.Serverless, serverless("default")));
  // Status is validated too: an unknown state is refused.
  const code = await drive(
    driver,
    codeOf(
      client.applyStatus(RESOURCES.Serverless, {
        ...s,
        metadata: { name: "default", namespace: "platform-system" },
        status: { served: "True", state: "Bogus" },
      }, { fieldManager: "op" }),
    ),
  );
  assert.equal(code, 422);
  assert.equal(
    await drive(driver, codeOf(client.create(RESOURCES.ConfigMap, cm("Bad_Name", {})))),
    422,
  );
});

Deno.test("cluster: types whose CRD is not installed are 404; creating the CRD serves them", async () => {
  const { driver, client } = world();
  assert.equal(await drive(driver, codeOf(client.list(RESOURCES.Function))), 404);
  assert.equal(
    await drive(
      driver,
      codeOf(
        client.create(RESOURCES.Function, {
          apiVersion: "serverless.platform-project.io/v1alpha2",
          kind: "Function",
          metadata: { name: "f", namespace: "default" },
        }),
      ),
    ),
    404,
  );
  const crd: KubeObject = {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: "functions.serverless.platform-project.io" },
    spec: {
      group: "serverless.platform-project.io",
      names: { kind: "Function", plural: "functions" },
      scope: "Namespaced",
      versions: [{
        name: "v1alpha2",
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: "object" } },
      }],
    },
  };
  await drive(driver, client.create(RESOURCES.CustomResourceDefinition, crd));
  assert.deepEqual((await drive(driver, client.list(RESOURCES.Function))).items, []);
  await drive(
    driver,
    client.create(RESOURCES.Function, {
      apiVersion: "serverless.platform-project.io/v1alpha2",
      kind: "Function",
      metadata: { name: "f", namespace: "default" },
    }),
  );
  await driver.runFor(1000);
  const established = await drive(
    driver,
    client.get(RESOURCES.CustomResourceDefinition, undefined, crd.metadata.name),
  );
  assert.ok(
    (established?.status as { conditions: { type: string; status: string }[] }).conditions.some((
      c,
    ) => c.type === "Established" && c.status === "True"),
  );
  // Deleting the CRD deletes its instances first, then the type is no longer served.
  await drive(
    driver,
    client.delete(RESOURCES.CustomResourceDefinition, undefined, crd.metadata.name),
  );
  await driver.runFor(5000);
  assert.equal(
    await drive(
      driver,
      client.get(RESOURCES.CustomResourceDefinition, undefined, crd.metadata.name),
    ),
    undefined,
  );
  assert.equal(await drive(driver, codeOf(client.list(RESOURCES.Function))), 404);
});

Deno.test("cluster: generateName, cluster-scoped objects drop a namespace, and the starting namespaces exist", async () => {
  const { driver, client } = world();
  const ev = await drive(
    driver,
    client.create(RESOURCES.ConfigMap, {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "", generateName: "gen-", namespace: "default" },
    }),
  );
  assert.match(ev.metadata.name, /^gen-[a-z0-9]{5}$/);
  const role = await drive(
    driver,
    client.create(RESOURCES.ClusterRole, {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: "r", namespace: "default" },
      rules: [],
    }),
  );
  assert.equal(role.metadata.namespace, undefined);
  const names = (await drive(driver, client.list(RESOURCES.Namespace))).items.map((n) =>
    n.metadata.name
  );
  assert.deepEqual(names, ["default", "mesh-system", "platform-system"]);
});
