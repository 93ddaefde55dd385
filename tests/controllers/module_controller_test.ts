/**
 * The module controllers' adapters never let a reducer delete CRDs on a user-object count that is
 * not known: a watch that is not live while its CRD exists means "unknown", not "none".
 */
import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { scalerController } from "../../src/controllers/scaler.ts";
import { SERVERLESS_MODULE, serverlessController } from "../../src/controllers/serverless.ts";
import {
  holdDeletion,
  UNKNOWN_USER_OBJECTS_REQUEUE_MS,
} from "../../src/controllers/module_controller.ts";
import type { KubeObject, ResourceType } from "../../src/api/object.ts";
import type { CacheReader } from "../../src/runtime/controller_spec.ts";
import { converge, IMAGES, NOW, serverless } from "../reconcile/serverless_fixtures.ts";
import { installed as kedaInstalled } from "../reconcile/scaler_fixtures.ts";
import { fakeCache, heldClaim } from "../reconcile/module_fixtures.ts";

// A module controller loads its reducer (and CRDs) before its first reconcile, as the runtime does.
await serverlessController.preload?.();
await scalerController.preload?.();

const ctx = { now: NOW, images: IMAGES, namespace: "platform-system" };

/** `fakeCache` whose watches of `notLive` types are not live. */
function cacheWith(objects: KubeObject[], notLive: ResourceType[]): CacheReader {
  return { ...fakeCache(objects), isLive: (type) => !notLive.includes(type) };
}

function deleting(obj: KubeObject): KubeObject {
  return { ...obj, metadata: { ...obj.metadata, deletionTimestamp: "2026-01-01T00:00:00Z" } };
}

const crdNamed = (name: string) => (o: KubeObject) =>
  o.kind === "CustomResourceDefinition" && o.metadata.name === name;

Deno.test("serverless: a deletion waits, writing nothing, while the Function watch is not live but its CRD exists", () => {
  const { world } = converge({ object: serverless(), others: [], installed: [] });
  assert.ok(world.installed.some(crdNamed("functions.serverless.platform-project.io")));
  const objects = [deleting(world.object!), ...world.installed];

  const held = serverlessController.reconcile(
    "platform-system/default",
    cacheWith(objects, [RESOURCES.Function]),
    ctx,
  )!;
  assert.deepEqual(held.delete, [], "no CRD (or anything) deleted on an unknown count");
  assert.deepEqual(held.apply, []);
  assert.equal(held.status, undefined, "status untouched: nothing true to say yet");
  assert.equal(held.finalizer, undefined);
  assert.equal(held.requeueAfterMs, UNKNOWN_USER_OBJECTS_REQUEUE_MS);

  // Live and really none: deletion proceeds and removes the CRD.
  const live = serverlessController.reconcile(
    "platform-system/default",
    cacheWith(objects, []),
    ctx,
  )!;
  assert.ok(
    live.delete.some((r) => r.name === "functions.serverless.platform-project.io"),
    "deletes the Function CRD once the count is known",
  );

  // Not live, but the CRD is not observed: no Function can exist, so deletion proceeds.
  const withoutCrd = objects.filter((o) =>
    !crdNamed("functions.serverless.platform-project.io")(o)
  );
  const gone = serverlessController.reconcile(
    "platform-system/default",
    cacheWith(withoutCrd, [RESOURCES.Function]),
    ctx,
  )!;
  assert.ok(gone.delete.length > 0);
});

Deno.test("serverless: an unknown count does not hold installation, only deletion", () => {
  const { world } = converge({ object: serverless(), others: [], installed: [] });
  const plan = serverlessController.reconcile(
    "platform-system/default",
    cacheWith(
      [world.object!, ...world.installed, heldClaim("serverless", world.object!)],
      [RESOURCES.Function],
    ),
    ctx,
  )!;
  assert.deepEqual(plan.status, world.object!.status, "the usual reconcile ran");
});

Deno.test("scaler: one KEDA user kind not live (its CRD exists) holds the deletion", () => {
  const w = kedaInstalled();
  const objects = [deleting(w.object!), ...w.installed];
  assert.ok(objects.some(crdNamed("scaledjobs.keda.sh")));
  const held = scalerController.reconcile(
    "platform-system/default",
    cacheWith(objects, [RESOURCES.ScaledJob]),
    ctx,
  )!;
  assert.deepEqual([held.delete, held.status, held.finalizer], [[], undefined, undefined]);
  assert.equal(held.requeueAfterMs, UNKNOWN_USER_OBJECTS_REQUEUE_MS);
  const live = scalerController.reconcile("platform-system/default", cacheWith(objects, []), ctx)!;
  assert.ok(live.delete.some((r) => r.name === "scaledobjects.keda.sh"));
});

Deno.test("holdDeletion: a reader without isLive (a test fake) counts as live", () => {
  const { world } = converge({ object: serverless(), others: [], installed: [] });
  const cache = fakeCache([deleting(world.object!), ...world.installed]);
  assert.equal(holdDeletion(SERVERLESS_MODULE, cache, deleting(world.object!)), undefined);
});

Deno.test("scaler: a ClusterTriggerAuthentication blocks deletion, and its watch not live holds it", () => {
  const w = kedaInstalled();
  const cta: KubeObject = {
    apiVersion: "keda.sh/v1alpha1",
    kind: "ClusterTriggerAuthentication",
    metadata: { name: "shared-creds" },
  };
  const objects = [deleting(w.object!), ...w.installed, cta];
  assert.ok(objects.some(crdNamed("clustertriggerauthentications.keda.sh")));
  const blocked = scalerController.reconcile(
    "platform-system/default",
    cacheWith(objects, []),
    ctx,
  )!;
  assert.deepEqual(blocked.delete, [], "KEDA's CRDs stay while a user's object of them exists");
  assert.match(JSON.stringify(blocked.status), /DeletionErr/);
  assert.match(JSON.stringify(blocked.status), /ClusterTriggerAuthentication/);

  const held = scalerController.reconcile(
    "platform-system/default",
    cacheWith(objects.filter((o) => o !== cta), [RESOURCES.ClusterTriggerAuthentication]),
    ctx,
  )!;
  assert.deepEqual([held.delete, held.status], [[], undefined]);
});
