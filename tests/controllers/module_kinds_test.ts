/**
 * The modules know the kinds of the CRDs they install: every kind of KEDA's generated CRDs (and
 * the Function) is a user type that blocks deletion, may be listed and watched by the operator,
 * and is counted by name in the blocked message, also the kinds the stand-ins did not have.
 */
import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import type { ModuleKind } from "../../src/controllers/module_controller.ts";
import { SCALER_MODULE, scalerController } from "../../src/controllers/scaler.ts";
import { SERVERLESS_MODULE } from "../../src/controllers/serverless.ts";
import { accessOf, rulesFor } from "../../src/kube/rbac.ts";
import { kedaCrds, kedaKinds } from "../../src/reconcile/scaler/crds.ts";
import { renderServerless } from "../../src/reconcile/serverless/render.ts";
import { typeOfCrd, type UpstreamCrd } from "../../src/reconcile/upstream_crds.ts";
import type { KubeObject, ResourceType } from "../../src/api/object.ts";
import type { CacheReader } from "../../src/runtime/controller_spec.ts";
import { IMAGES, installed, NOW } from "../reconcile/scaler_fixtures.ts";
import { FUNCTION_CRD_LIST, KEDA_CRD_LIST, SETTINGS } from "../reconcile/serverless_fixtures.ts";
import { fakeCache } from "../reconcile/module_fixtures.ts";

// A module controller loads its reducer (and CRDs) before its first reconcile, as the runtime does.
await scalerController.preload?.();

const key = (t: ResourceType) => `${t.group}/${t.version}/${t.kind}/${t.plural}/${t.namespaced}`;

function userKeys(module: ModuleKind): string[] {
  return module.userTypes.map(key).sort();
}

Deno.test("the Scaler's user types are exactly the kinds of KEDA's CRDs, all six of 2.20", () => {
  const kinds = kedaKinds(KEDA_CRD_LIST);
  assert.deepEqual(kinds.map((k) => k.kind), [
    "ScaledObject",
    "ScaledJob",
    "TriggerAuthentication",
    "ClusterTriggerAuthentication",
    "CloudEventSource",
    "ClusterCloudEventSource",
  ]);
  assert.deepEqual(userKeys(SCALER_MODULE), kinds.map(key).sort());
  const crds = kedaCrds(KEDA_CRD_LIST, { namespace: "n", owner: "n.o" }) as UpstreamCrd[];
  assert.deepEqual(crds.map((c) => key(typeOfCrd(c))).sort(), kinds.map(key).sort());
});

Deno.test("the Serverless's user type is the kind of the Function CRD it installs", () => {
  const crds = renderServerless({
    namespace: "n",
    owner: "n.o",
    image: "i",
    settings: SETTINGS,
    crds: FUNCTION_CRD_LIST,
  }).filter((o) => o.kind === "CustomResourceDefinition") as UpstreamCrd[];
  assert.deepEqual(userKeys(SERVERLESS_MODULE), crds.map((c) => key(typeOfCrd(c))));
  assert.deepEqual(userKeys(SERVERLESS_MODULE), [key(RESOURCES.Function)]);
});

Deno.test("the operator may list and watch every user kind (deploy/rbac.yaml's rules)", () => {
  const rules = rulesFor("cluster");
  for (const type of [...SCALER_MODULE.userTypes, ...SERVERLESS_MODULE.userTypes]) {
    assert.ok(accessOf(type).verbs.includes("watch"), type.kind);
    assert.ok(
      rules.some((r) =>
        r.apiGroups.includes(type.group) && r.resources.includes(type.plural) &&
        r.verbs.includes("list") && r.verbs.includes("watch")
      ),
      `no list/watch rule for ${type.plural}.${type.group}`,
    );
  }
});

function deletingScaler() {
  const w = installed();
  const object = {
    ...w.object!,
    metadata: { ...w.object!.metadata, deletionTimestamp: "2026-01-01T00:00:00Z" },
  };
  return { object, installed: w.installed };
}

function userObject(type: ResourceType): KubeObject {
  return {
    apiVersion: `${type.group}/${type.version}`,
    kind: type.kind,
    metadata: { name: "u", ...(type.namespaced ? { namespace: "users" } : {}) },
  };
}

const ctx = { now: NOW, images: IMAGES, namespace: "platform-system" };

for (const type of kedaKinds(KEDA_CRD_LIST)) {
  Deno.test(`one ${type.kind} blocks Scaler deletion; its watch not live holds it`, () => {
    const w = deletingScaler();
    const cache = fakeCache([w.object, ...w.installed, userObject(type)]);
    const blocked = scalerController.reconcile("platform-system/default", cache, ctx)!;
    assert.deepEqual(blocked.delete, [], "nothing is deleted while a user object exists");
    assert.match(
      JSON.stringify(blocked.status),
      new RegExp(`1 ${type.kind} \\(\\S+\\) still exists`),
    );
    const unknown: CacheReader = {
      ...fakeCache([w.object, ...w.installed]),
      isLive: (t) => key(t) !== key(type),
    };
    const held = scalerController.reconcile("platform-system/default", unknown, ctx)!;
    assert.deepEqual([held.delete, held.status], [[], undefined], "an unknown count holds");
  });
}
