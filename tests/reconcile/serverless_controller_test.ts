/** The Serverless ControllerSpec: its watches, trigger mapping and cache-to-input adapter. */
import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { serverlessController } from "../../src/controllers/serverless.ts";
import { MANAGED_SELECTOR, OWNER_LABEL } from "../../src/reconcile/labels.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { converge, IMAGES, NOW, serverless } from "./serverless_fixtures.ts";
import { fakeCache, heldClaim } from "./module_fixtures.ts";
import { triggersOf } from "../../src/runtime/controller_spec.ts";

// A module controller loads its reducer (and CRDs) before its first reconcile, as the runtime does.
await serverlessController.preload?.();

const fn = (ns: string, name: string): KubeObject => ({
  apiVersion: "serverless.platform-project.io/v1alpha2",
  kind: "Function",
  metadata: { name, namespace: ns },
});

Deno.test("watches: the peers, every installed type by the managed selector, Functions optionally", () => {
  const w = serverlessController.watches;
  assert.ok(w.some((x) => x.type === RESOURCES.Serverless));
  for (
    const type of [
      RESOURCES.Deployment,
      RESOURCES.ConfigMap,
      RESOURCES.CustomResourceDefinition,
      RESOURCES.ClusterRole,
    ]
  ) {
    const { trigger, ...watch } = w.find((x) => x.type === type)!;
    assert.deepEqual(watch, { type, labelSelector: MANAGED_SELECTOR });
    assert.equal(typeof trigger, "function", `${type.kind} wakes its owner`);
  }
  const { trigger: _, ...fnWatch } = w.find((x) => x.type === RESOURCES.Function)!;
  assert.deepEqual(fnWatch, { type: RESOURCES.Function, optional: true });
  assert.equal(serverlessController.primary, RESOURCES.Serverless);
  assert.equal(serverlessController.name, "serverless");
});

Deno.test("every type the reducer installs is watched", () => {
  const { world } = converge({ object: serverless(), others: [], installed: [] });
  const watched = new Set(
    serverlessController.watches.map((x) => `${x.type.group}/${x.type.kind}`),
  );
  for (const o of world.installed) {
    const group = o.apiVersion.includes("/") ? o.apiVersion.split("/")[0] : "";
    assert.ok(watched.has(`${group}/${o.kind}`), `${o.kind} is not watched`);
  }
});

Deno.test("triggers: installed objects wake their owner; peers and Functions wake every peer", () => {
  const { world } = converge({ object: serverless(), others: [], installed: [] });
  const other = serverless({}, { name: "second", namespace: "other" });
  const cache = fakeCache([world.object!, other, ...world.installed]);
  const dep = world.installed.find((o) => o.kind === "Deployment")!;
  assert.deepEqual(triggersOf(serverlessController)(RESOURCES.Deployment, dep, cache), [
    "platform-system/default",
  ]);
  const orphan = {
    ...dep,
    metadata: { ...dep.metadata, labels: { ...dep.metadata.labels, [OWNER_LABEL]: "gone.x" } },
  };
  assert.deepEqual(triggersOf(serverlessController)(RESOURCES.Deployment, orphan, cache), [
    "other/second",
    "platform-system/default",
  ]);
  const gone = serverless({}, { name: "deleted", namespace: "x" });
  assert.deepEqual(triggersOf(serverlessController)(RESOURCES.Serverless, gone, cache).sort(), [
    "other/second",
    "platform-system/default",
    "x/deleted",
  ]);
  assert.deepEqual(triggersOf(serverlessController)(RESOURCES.Function, fn("u", "f"), cache), [
    "other/second",
    "platform-system/default",
  ]);
  const keda = {
    ...dep,
    metadata: {
      ...dep.metadata,
      labels: { ...dep.metadata.labels, "operator.platform-project.io/module": "keda" },
    },
  };
  assert.deepEqual(triggersOf(serverlessController)(RESOURCES.Deployment, keda, cache), []);
});

Deno.test("reconcile reads the cache: installed objects, Functions, peers", () => {
  const { world } = converge({ object: serverless(), others: [], installed: [] });
  const deleting = {
    ...world.object!,
    metadata: { ...world.object!.metadata, deletionTimestamp: "2026-01-01T00:00:00Z" },
  };
  const ctx = { now: NOW, images: IMAGES, namespace: "platform-system" };
  const blocked = serverlessController.reconcile(
    "platform-system/default",
    fakeCache([deleting, ...world.installed, fn("u", "a"), fn("v", "b")]),
    ctx,
  );
  assert.equal(blocked?.status?.state, "Error");
  assert.match(JSON.stringify(blocked?.status), /2 Functions \([^)]+\) still exist/);
  const deletes = serverlessController.reconcile(
    "platform-system/default",
    fakeCache([deleting, ...world.installed]),
    ctx,
  );
  assert.equal(deletes?.delete.length, world.installed.length);
  const ready = serverlessController.reconcile(
    "platform-system/default",
    fakeCache([world.object!, ...world.installed, heldClaim("serverless", world.object!)]),
    ctx,
  );
  assert.deepEqual([ready?.apply, ready?.delete, ready?.status], [[], [], world.object!.status]);
  assert.equal(
    serverlessController.reconcile("platform-system/missing", fakeCache([]), ctx),
    undefined,
  );
});
