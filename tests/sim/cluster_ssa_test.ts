import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { codeOf, drive, world } from "./helpers.ts";

const deployment = (
  spec: Record<string, unknown>,
  labels?: Record<string, string>,
): KubeObject => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "web", namespace: "default", ...(labels ? { labels } : {}) },
  spec,
});

const template = (image: string, env?: { name: string; value: string }[]) => ({
  selector: { matchLabels: { app: "web" } },
  template: {
    metadata: { labels: { app: "web" } },
    spec: { containers: [{ name: "main", image, ...(env ? { env } : {}) }] },
  },
});

Deno.test("ssa: apply creates, a repeated identical apply changes nothing, managedFields record the owner", async () => {
  const { driver, client } = world();
  const first = await drive(
    driver,
    client.apply(RESOURCES.Deployment, deployment({ replicas: 2, ...template("a:1") }), {
      fieldManager: "op",
    }),
  );
  const again = await drive(
    driver,
    client.apply(RESOURCES.Deployment, deployment({ replicas: 2, ...template("a:1") }), {
      fieldManager: "op",
    }),
  );
  assert.equal(again.metadata.resourceVersion, first.metadata.resourceVersion);
  const mf = first.metadata.managedFields as {
    manager: string;
    operation: string;
    fieldsV1: Record<string, unknown>;
  }[];
  const op = mf.find((m) => m.manager === "op")!;
  assert.equal(op.operation, "Apply");
  assert.deepEqual(Object.keys(op.fieldsV1).sort(), ["f:spec"]);
  const spec = op.fieldsV1["f:spec"] as Record<string, unknown>;
  assert.ok("f:replicas" in spec);
  const containers = (spec["f:template"] as Record<string, Record<string, unknown>>)["f:spec"][
    "f:containers"
  ] as Record<string, unknown>;
  assert.deepEqual(Object.keys(containers), ['k:{"name":"main"}']);
});

Deno.test("ssa: applying a smaller object removes the fields that manager alone owned", async () => {
  const { driver, client } = world();
  await drive(
    driver,
    client.apply(
      RESOURCES.Deployment,
      deployment({ replicas: 2, ...template("a:1", [{ name: "X", value: "1" }]) }, {
        a: "1",
        b: "2",
      }),
      { fieldManager: "op" },
    ),
  );
  // Another manager co-owns label b (same value) and owns label c.
  await drive(
    driver,
    client.apply(
      RESOURCES.Deployment,
      { ...deployment({}, { b: "2", c: "3" }), spec: undefined } as unknown as KubeObject,
      { fieldManager: "other" },
    ),
  );
  const smaller = await drive(
    driver,
    client.apply(RESOURCES.Deployment, deployment({ ...template("a:1") }, {}), {
      fieldManager: "op",
    }),
  );
  assert.equal(
    (smaller.spec as { replicas?: number }).replicas,
    undefined,
    "replicas was op's alone: removed",
  );
  assert.deepEqual(
    smaller.metadata.labels,
    { b: "2", c: "3" },
    "a removed, b kept (co-owned), c kept (other's)",
  );
  const container =
    (smaller.spec as { template: { spec: { containers: { env?: unknown }[] } } }).template.spec
      .containers[0];
  assert.equal(container.env, undefined, "the env entry op stopped applying is gone");
});

Deno.test("ssa: a different value in a field another manager owns is a 409 conflict; force takes it", async () => {
  const { driver, client } = world();
  await drive(
    driver,
    client.apply(RESOURCES.Deployment, deployment({ replicas: 2, ...template("a:1") }), {
      fieldManager: "user",
    }),
  );
  const err = await drive(
    driver,
    client.apply(RESOURCES.Deployment, deployment({ replicas: 3, ...template("a:1") }), {
      fieldManager: "op",
    }).catch((e) => e),
  );
  assert.equal(err.code, 409);
  assert.match(err.message, /conflict with "user": \.spec\.replicas/);
  const forced = await drive(
    driver,
    client.apply(RESOURCES.Deployment, deployment({ replicas: 3, ...template("a:1") }), {
      fieldManager: "op",
      force: true,
    }),
  );
  assert.equal((forced.spec as { replicas: number }).replicas, 3);
  // The user no longer owns replicas: dropping it from the user's apply leaves op's value.
  const after = await drive(
    driver,
    client.apply(RESOURCES.Deployment, deployment({ ...template("a:1") }), {
      fieldManager: "user",
    }),
  );
  assert.equal((after.spec as { replicas: number }).replicas, 3);
});

Deno.test("ssa: an update takes ownership of the fields it changed", async () => {
  const { driver, client } = world();
  const applied = await drive(
    driver,
    client.apply(RESOURCES.Deployment, deployment({ replicas: 2, ...template("a:1") }), {
      fieldManager: "op",
    }),
  );
  const edited = await drive(
    driver,
    client.update(RESOURCES.Deployment, {
      ...applied,
      spec: { ...(applied.spec as object), replicas: 5 },
    }),
  );
  const mf = edited.metadata.managedFields as { manager: string; operation: string }[];
  assert.ok(mf.some((m) => m.manager === "kubectl" && m.operation === "Update"));
  // op re-applies its value: now a conflict with the updater.
  assert.equal(
    await drive(
      driver,
      codeOf(
        client.apply(RESOURCES.Deployment, deployment({ replicas: 2, ...template("a:1") }), {
          fieldManager: "op",
        }),
      ),
    ),
    409,
  );
});

Deno.test("ssa: apply with a stale resourceVersion is 409; apply to a missing namespace is 404", async () => {
  const { driver, client } = world();
  const d = await drive(
    driver,
    client.apply(RESOURCES.Deployment, deployment({ replicas: 1, ...template("a:1") }), {
      fieldManager: "op",
    }),
  );
  await drive(
    driver,
    client.apply(RESOURCES.Deployment, deployment({ replicas: 2, ...template("a:1") }), {
      fieldManager: "op",
    }),
  );
  const stale = {
    ...deployment({ replicas: 3, ...template("a:1") }),
    metadata: { ...deployment({}).metadata, resourceVersion: d.metadata.resourceVersion },
  };
  assert.equal(
    await drive(driver, codeOf(client.apply(RESOURCES.Deployment, stale, { fieldManager: "op" }))),
    409,
  );
  const elsewhere = {
    ...deployment({ ...template("a:1") }),
    metadata: { name: "x", namespace: "nowhere" },
  };
  assert.equal(
    await drive(
      driver,
      codeOf(client.apply(RESOURCES.Deployment, elsewhere, { fieldManager: "op" })),
    ),
    404,
  );
});

Deno.test("ssa: CRD list types come from the schema (conditions merge by type in status applies)", async () => {
  const { driver, client } = world();
  const s: KubeObject = {
    apiVersion: "operator.platform-project.io/v1alpha1",
    kind: "Serverless",
    metadata: { name: "default", namespace: "platform-system" },
    spec: {},
  };
  await drive(driver, client.create(RESOURCES.Serverless, s));
  const cond = (type: string, status: string) => ({
    type,
    status,
    reason: "R",
    message: "",
    lastTransitionTime: "2026-01-01T00:00:00Z",
  });
  await drive(
    driver,
    client.applyStatus(RESOURCES.Serverless, {
      ...s,
      status: { served: "True", conditions: [cond("Configured", "True")] },
    }, { fieldManager: "a" }),
  );
  const both = await drive(
    driver,
    client.applyStatus(RESOURCES.Serverless, {
      ...s,
      status: { served: "True", conditions: [cond("Installed", "True")] },
    }, { fieldManager: "b" }),
  );
  const types = (both.status as { conditions: { type: string }[] }).conditions.map((c) => c.type);
  assert.deepEqual(
    types,
    ["Configured", "Installed"],
    "two managers' conditions merge as a map keyed by type",
  );
});
