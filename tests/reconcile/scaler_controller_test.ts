/** The Scaler ControllerSpec: its watches, trigger mapping and cache-to-input adapter. */
import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { scalerController } from "../../src/controllers/scaler.ts";
import { serverlessController } from "../../src/controllers/serverless.ts";
import { MANAGED_SELECTOR } from "../../src/reconcile/labels.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { IMAGES, installed, NOW, scaler } from "./scaler_fixtures.ts";
import { fakeCache, heldClaim } from "./module_fixtures.ts";
import { triggersOf } from "../../src/runtime/controller_spec.ts";

// A module controller loads its reducer (and CRDs) before its first reconcile, as the runtime does.
await scalerController.preload?.();

const userObject = (kind: string, ns: string, name: string): KubeObject => ({
  apiVersion: "keda.sh/v1alpha1",
  kind,
  metadata: { name, namespace: ns },
});

Deno.test("watches: the peers, every installed type by the managed selector, KEDA's user kinds optionally", () => {
  const w = scalerController.watches;
  assert.equal(scalerController.name, "scaler");
  assert.equal(scalerController.primary, RESOURCES.Scaler);
  assert.ok(w.some((x) => x.type === RESOURCES.Scaler));
  for (
    const type of [
      RESOURCES.Deployment,
      RESOURCES.APIService,
      RESOURCES.ValidatingWebhookConfiguration,
    ]
  ) {
    const { trigger, ...watch } = w.find((x) => x.type === type)!;
    assert.deepEqual(watch, { type, labelSelector: MANAGED_SELECTOR });
    assert.equal(typeof trigger, "function", `${type.kind} wakes its owner`);
  }
  for (
    const type of [RESOURCES.ScaledObject, RESOURCES.ScaledJob, RESOURCES.TriggerAuthentication]
  ) {
    const { trigger: _, ...watch } = w.find((x) => x.type === type)!;
    assert.deepEqual(watch, { type, optional: true });
  }
  const { installed: objs } = installed();
  const watched = new Set(w.map((x) => `${x.type.group}/${x.type.kind}`));
  for (const o of objs) {
    const group = o.apiVersion.includes("/") ? o.apiVersion.split("/")[0] : "";
    assert.ok(watched.has(`${group}/${o.kind}`), `${o.kind} is not watched`);
  }
});

Deno.test("triggers: KEDA objects wake their Scaler, not the Serverless; user objects wake every Scaler", () => {
  const w = installed();
  const cache = fakeCache([w.object!, scaler({}, { name: "b", namespace: "x" }), ...w.installed]);
  const dep = w.installed.find((o) => o.kind === "Deployment")!;
  assert.deepEqual(triggersOf(scalerController)(RESOURCES.Deployment, dep, cache), [
    "platform-system/default",
  ]);
  assert.deepEqual(triggersOf(serverlessController)(RESOURCES.Deployment, dep, cache), []);
  assert.deepEqual(
    triggersOf(scalerController)(
      RESOURCES.ScaledObject,
      userObject("ScaledObject", "u", "s"),
      cache,
    ),
    ["platform-system/default", "x/b"],
  );
});

Deno.test("reconcile counts ScaledObjects, ScaledJobs and TriggerAuthentications against deletion", () => {
  const w = installed();
  const deleting = {
    ...w.object!,
    metadata: { ...w.object!.metadata, deletionTimestamp: "2026-01-01T00:00:00Z" },
  };
  const ctx = { now: NOW, images: IMAGES, namespace: "platform-system" };
  const users = [
    userObject("ScaledObject", "u", "a"),
    userObject("ScaledJob", "u", "b"),
    userObject("ScaledJob", "v", "c"),
  ];
  const blocked = scalerController.reconcile(
    "platform-system/default",
    fakeCache([deleting, ...w.installed, ...users]),
    ctx,
  );
  assert.match(
    JSON.stringify(blocked?.status),
    /1 ScaledObject \(\S+\) and 2 ScaledJobs \([^)]+\) still exist/,
  );
  assert.deepEqual(blocked?.delete, []);
  const ready = scalerController.reconcile(
    "platform-system/default",
    fakeCache([w.object!, ...w.installed, heldClaim("keda", w.object!)]),
    {
      ...ctx,
      lastOutcome: { ok: true },
    },
  );
  assert.deepEqual([ready?.apply, ready?.delete, ready?.status], [[], [], w.object!.status]);
});
