/**
 * E2E on one real control plane: a Scaler and a Serverless whose installed CRDs are the previous
 * release's open stand-ins move to KEDA's and Kyma's generated CRDs in place, keeping every user
 * object; then the real CRDs validate, explain and print as KEDA's and Kyma's own do, and a kind
 * the stand-ins lacked (ClusterCloudEventSource) holds the Scaler's deletion.
 */
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { KEDA_CRDS } from "../../src/controllers/embedded_crds.ts";
import { RESOURCES } from "../../src/api/resources.ts";
import { LiveCluster } from "../../src/kube/live_cluster.ts";
import { type E2E, e2eSuite } from "./harness.ts";
import { fn, namespace, scaler, serverless } from "./fixtures.ts";
import { standInCrds } from "./standins.ts";
import {
  assertAggregatorVerdict,
  conditionOf,
  describe,
  KWOK_VERDICT_MS,
  SCALER_ON_KWOK,
} from "./status.ts";
import { checkKind, functionChecks, scaledObjectChecks } from "./upstream_checks.ts";

const NS = "e2e-users";
const KEDA_CRD_NAMES = (await KEDA_CRDS.load()).map((c) => c.metadata.name);
const FUNCTION_CRD = "functions.serverless.platform-project.io";

/** Users' objects stored under the stand-ins; `loose` ones the real schemas would refuse. */
function usersObjects(): KubeObject[] {
  const keda = (kind: string, name: string, spec: Record<string, unknown>): KubeObject => ({
    apiVersion: "keda.sh/v1alpha1",
    kind,
    metadata: { name, namespace: NS },
    spec,
  });
  return [
    keda("ScaledObject", "worker", {
      scaleTargetRef: { name: "worker" },
      triggers: [{ type: "cpu", metadata: { value: "50" } }],
    }),
    keda("ScaledObject", "loose", { minReplicaCount: "two" }),
    keda("TriggerAuthentication", "secrets", {
      secretTargetRef: [{ parameter: "password", name: "s", key: "k" }],
    }),
    fn(NS, "hello"),
    { ...fn(NS, "loose"), spec: { runtime: "cobol" } },
  ];
}

interface Seen {
  uid: string;
  resourceVersion: string;
}

async function seen(env: E2E, resource: string, name: string, ns?: string): Promise<Seen> {
  const o = await env.kube.get(resource, name, ns);
  assert.ok(o, `${resource} ${name} is missing`);
  return { uid: o.metadata.uid!, resourceVersion: o.metadata.resourceVersion! };
}

type Schema =
  & { properties?: Record<string, Schema>; required?: string[] }
  & Record<string, unknown>;

async function specSchema(env: E2E, crd: string): Promise<Schema> {
  const o = await env.kube.get<{ spec: { versions: { schema: { openAPIV3Schema: Schema } }[] } }>(
    "crd",
    crd,
  );
  return o!.spec.versions[0].schema.openAPIV3Schema.properties!.spec;
}

e2eSuite("module-crds", async (env, t) => {
  await env.installCrds();
  const before = new Map<string, Seen>();
  const users = usersObjects();

  const standIns = await env.step(t, "the stand-ins accept anything (the issue)", async () => {
    // As the previous release's operator applied them: server-side, its field manager.
    await env.kube.apply(standInCrds(), ["--server-side", "--field-manager=platform-operator"]);
    const names = standInCrds().map((c) => c.metadata.name);
    await env.kube.must(["wait", "--for=condition=Established", ...names.map((n) => `crd/${n}`)]);
    for (const n of names) before.set(`crd/${n}`, await seen(env, "crd", n));
    await env.kube.apply([namespace(NS), ...users]);
    for (const o of users) {
      before.set(`${o.kind}/${o.metadata.name}`, await seen(env, o.kind, o.metadata.name, NS));
    }
    assert.equal(
      (await specSchema(env, "scaledobjects.keda.sh"))["x-kubernetes-preserve-unknown-fields"],
      true,
    );
  });
  if (!standIns) return;

  const upgraded = await env.step(
    t,
    "a Scaler and a Serverless on the stand-ins move to the real CRDs in place, keeping every object",
    async () => {
      await env.kube.apply([
        scaler("platform-system", "default"),
        serverless("platform-system", "default"),
      ]);
      await env.startServing({ identity: "module-crds-0" });
      // KEDA installed and rolled out on kwok: the aggregator's verdict, not Ready.
      const k = await env.waitStatus("scaler", "platform-system", "default", SCALER_ON_KWOK, {
        timeoutMs: KWOK_VERDICT_MS,
      });
      assertAggregatorVerdict(k);
      await env.waitStatus("serverless", "platform-system", "default", { state: "Ready" });
      for (const [key, was] of before) {
        const [kind, name] = key.split("/");
        const now = await seen(env, kind, name, kind === "crd" ? undefined : NS);
        assert.equal(now.uid, was.uid, `${key} was replaced, not updated in place`);
        if (kind !== "crd") {
          assert.equal(now.resourceVersion, was.resourceVersion, `${key} changed`);
        }
      }
      const so = await specSchema(env, "scaledobjects.keda.sh");
      assert.equal(so["x-kubernetes-preserve-unknown-fields"], undefined, "spec is no longer open");
      assert.deepEqual(so.required, ["scaleTargetRef", "triggers"]);
      assert.deepEqual((await specSchema(env, FUNCTION_CRD)).required, ["runtime", "source"]);
      for (const name of [...KEDA_CRD_NAMES, FUNCTION_CRD]) {
        await env.kube.must(["wait", "--for=condition=Established", `crd/${name}`]);
      }
      const loose = await env.kube.get("scaledobject", "loose", NS);
      assert.deepEqual(
        loose?.spec,
        { minReplicaCount: "two" },
        "a stored object is kept as it was",
      );
    },
  );
  if (!upgraded) return;

  await env.step(
    t,
    'ScaledObject: KEDA\'s example accepted, no scaleTargetRef and minReplicaCount "two" refused; explain; get so',
    () => checkKind(env, scaledObjectChecks(NS)),
  );
  await env.step(
    t,
    "Function: Kyma's example accepted, no runtime, an unknown runtime and two sources refused; explain; get fn",
    () => checkKind(env, functionChecks(NS)),
  );
  await env.step(t, "a ClusterCloudEventSource holds the Scaler's deletion", async () => {
    await env.kube.apply([{
      apiVersion: "eventing.keda.sh/v1alpha1",
      kind: "ClusterCloudEventSource",
      metadata: { name: "events" },
      spec: { destination: { http: { uri: "http://sink.default.svc.cluster.local" } } },
    }]);
    await env.kube.delete("scaler", ["default"], "platform-system");
    const k = await env.waitStatus("scaler", "platform-system", "default", {
      state: "Error",
      conditions: [{ type: "Deleted", status: "False", reason: "DeletionErr" }],
    });
    assert.match(
      conditionOf(k, "Deleted")?.message ?? "",
      /\b1 ClusterCloudEventSource\b/,
      describe(k),
    );
    for (const name of KEDA_CRD_NAMES) {
      assert.ok(await env.kube.get("crd", name), `${name} was deleted while deletion is blocked`);
    }
  });
  await env.step(
    t,
    "the API server answers the RateLimit controller's CRD list and watch with metadata only, under the operator's own account",
    async () => {
      const cluster = LiveCluster.connect({ kubeconfig: env.cluster.operatorKubeconfig });
      try {
        const CRD = RESOURCES.CustomResourceDefinition;
        const page = await cluster.list(CRD, { metadataOnly: true });
        const names = page.items.map((o) => o.metadata.name);
        for (const name of [...KEDA_CRD_NAMES, FUNCTION_CRD, "envoyfilters.networking.istio.io"]) {
          assert.ok(names.includes(name), `${name} listed`);
        }
        for (const o of page.items) {
          assert.deepEqual([o.apiVersion, o.kind, "spec" in o], [
            "meta.k8s.io/v1",
            "PartialObjectMetadata",
            false,
          ], o.metadata.name);
          assert.ok(o.metadata.resourceVersion && o.metadata.uid, "the whole metadata");
        }
        // From "0": the API server sends every CRD as ADDED, then ends after 1 s.
        const added: KubeObject[] = [];
        for await (
          const ev of cluster.watch(
            CRD,
            { resourceVersion: "0", timeoutSeconds: 1, metadataOnly: true },
            AbortSignal.timeout(30_000),
          )
        ) if (ev.type === "ADDED") added.push(ev.object);
        assert.equal(added.length, page.items.length);
        assert.ok(added.every((o) => o.kind === "PartialObjectMetadata" && !("spec" in o)));
        // The same list whole is many times larger: what the operator no longer reads.
        const whole = JSON.stringify((await cluster.list(CRD)).items).length;
        const partial = JSON.stringify(page.items).length;
        console.log(
          `[module-crds] CRDs: ${page.items.length}; ${whole} bytes whole, ${partial} metadata only`,
        );
        assert.ok(partial * 5 < whole, `${partial} of ${whole} bytes`);
      } finally {
        cluster.close();
      }
    },
  );
});
