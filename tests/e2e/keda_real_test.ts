/**
 * KEDA 2.20.2 for real: its three programs, built from KEDA's Go module into images made here
 * (tools/keda), run on the cluster's real node. The operator (a host process, as in every e2e
 * test) renders the Scaler's Deployments unchanged but for the image flags; the namespace's
 * annotations put their Pods on the real node. The Scaler is not Ready while the images are
 * missing, and is Ready once KEDA's Pods are; KEDA's operator turns a ScaledObject into its HPA;
 * the Scaler's deletion waits for the ScaledObject.
 */
import assert from "node:assert/strict";
import { KEDA_DEPLOYMENTS } from "../../src/reconcile/scaler/names.ts";
import { type E2E, e2eSuite, waitFor } from "./harness.ts";
import { moduleSelector, namespace, scaledObject, scaler } from "./fixtures.ts";
import { conditionOf, describe, statusOf } from "./status.ts";
import {
  describePods,
  imageFlags,
  KEDA_REAL_SKIP,
  kedaImages,
  kwokDeployment,
  pods,
  realNodeNamespace,
} from "./keda_real.ts";
import type { KedaImages } from "../../tools/keda/image.ts";
import { moduleGrantsRole } from "../../src/kube/rbac.ts";

const NS = "keda-system";
const USER_NS = "e2e-user";
const KEDA_APPS = Object.values(KEDA_DEPLOYMENTS).sort();
/** Readiness of all three can take minutes: the webhooks and the metrics server restart until
 * the KEDA operator has written their certificates and kubelet has put them into the volume. */
const READY_MS = 420_000;

e2eSuite("keda-real", async (env, t) => {
  const images = await kedaImages();
  const node = env.cluster.realNode!;
  await env.step(t, "KEDA's namespace sends its Pods to the real node", async () => {
    await env.installCrds();
    await env.kube.apply([realNodeNamespace(NS), namespace(USER_NS)]);
    // KEDA goes to its own namespace: the operator's module grants Role goes there first.
    await env.kube.apply(moduleGrantsRole(NS));
    // ServiceAccount admission refuses Pods until the namespace's default ServiceAccount exists.
    await waitFor("default ServiceAccounts", async () => {
      for (const ns of [NS, USER_NS]) if (!await env.kube.get("sa", "default", ns)) return false;
      return true;
    });
    await env.startServing({ identity: "keda-real", extraArgs: imageFlags(images) });
    await env.kube.apply([scaler(NS, "keda")]);
  });

  await env.step(
    t,
    "without the images loaded, the Pods fail to pull and the Scaler is not Ready",
    async () => {
      await notReadyWhileImagesMissing(env, images, node.name);
    },
  );

  await env.step(t, "with the images loaded, KEDA runs and the Scaler is Ready", async () => {
    for (const i of Object.values(images)) {
      const names = await node.loadImage(i.archive);
      assert.ok(names.includes(i.ref), `${i.archive} loaded as ${names.join(", ")}, not ${i.ref}`);
    }
    // Pods in ImagePullBackOff wait out their backoff; new ones start at once.
    await env.kube.must(["delete", "pods", "--all", "-n", NS, "--wait=false"]);
    const ready = await env.waitStatus("scaler", NS, "keda", { state: "Ready" }, {
      timeoutMs: READY_MS,
      intervalMs: 1000,
    });
    const ps = await pods(env.kube, NS);
    assert.deepEqual(ps.filter((p) => p.ready).map((p) => p.app), KEDA_APPS, describePods(ps));
    assert.ok(ps.every((p) => p.node === node.name), describePods(ps));
    assert.equal(statusOf(ready).kedaVersion, "2.20.2", describe(ready));
  });

  await env.step(
    t,
    "a wrong image: not Ready while the rollout fails, Ready once fixed",
    async () => {
      await wrongImageRollout(env, images);
    },
  );

  await env.step(
    t,
    "KEDA's CA is in the APIService and webhooks; the APIService is Available",
    async () => {
      await kedaCaInjected(env);
    },
  );

  await env.step(t, "a ScaledObject on a Deployment gets KEDA's HPA", async () => {
    await env.kube.apply([kwokDeployment(USER_NS, "web"), scaledObject(USER_NS, "hello", "web")]);
    const hpa = await waitFor(
      "HPA keda-hpa-hello",
      async () => await env.kube.get<HpaJson>("hpa", "keda-hpa-hello", USER_NS),
      {
        timeoutMs: 120_000,
        describe: async () => JSON.stringify(await env.kube.get("scaledobject", "hello", USER_NS)),
      },
    );
    assert.equal(hpa.spec.scaleTargetRef.name, "web");
    assert.equal(hpa.spec.scaleTargetRef.kind, "Deployment");
    assert.equal(hpa.spec.maxReplicas, 2);
    assert.equal(hpa.metadata.ownerReferences?.[0]?.kind, "ScaledObject");
    const so = await waitFor("ScaledObject hello Ready", async () => {
      const o = await env.kube.get("scaledobject", "hello", USER_NS);
      return conditionOf(o, "Ready")?.status === "True" ? o : undefined;
    }, { timeoutMs: 60_000 });
    assert.ok(
      (so.metadata as { finalizers?: string[] }).finalizers?.includes("finalizer.keda.sh"),
      "KEDA's operator put its finalizer on the ScaledObject",
    );
    // KEDA's webhook (reached at its Pod's address) refuses a second ScaledObject for `web`.
    const second = await env.kube.tryApply([scaledObject(USER_NS, "second", "web")]);
    assert.notEqual(second.code, 0, "a second ScaledObject on web was accepted");
    // KEDA's webhook names either the ScaledObject or its HPA, whichever it finds first.
    assert.match(
      second.stderr,
      /already managed by the (ScaledObject 'hello'|hpa 'keda-hpa-hello')/,
      second.stderr,
    );
  });

  await env.step(
    t,
    "deleting the Scaler waits for the ScaledObject, then removes KEDA",
    async () => {
      await env.kube.delete("scaler", ["keda"], NS);
      const k = await env.waitStatus("scaler", NS, "keda", {
        state: "Error",
        conditions: [{ type: "Deleted", status: "False", reason: "DeletionErr" }],
      });
      assert.match(conditionOf(k, "Deleted")?.message ?? "", /\b1 ScaledObject\b/, describe(k));
      const kept = await env.kube.list("deployments", {
        namespace: NS,
        labelSelector: moduleSelector("keda"),
      });
      assert.equal(kept.length, 3, "KEDA was uninstalled although deletion is blocked");
      // KEDA's own operator still runs: it removes its finalizer and the HPA goes with the object.
      await env.kube.delete("scaledobject", ["hello"], USER_NS);
      await env.waitGone("scaledobject", USER_NS, "hello");
      await env.waitGone("hpa", USER_NS, "keda-hpa-hello");
      await env.waitGone("scaler", NS, "keda", { timeoutMs: 120_000 });
      const left = await env.kube.list("deployments", {
        allNamespaces: true,
        labelSelector: moduleSelector("keda"),
      });
      assert.deepEqual(left.map((d) => d.metadata.name), []);
    },
  );
}, { realNode: true, skip: KEDA_REAL_SKIP });

interface HpaJson {
  metadata: { ownerReferences?: { kind: string; name: string }[] };
  spec: { scaleTargetRef: { kind: string; name: string }; maxReplicas: number };
}

async function notReadyWhileImagesMissing(
  env: E2E,
  images: KedaImages,
  nodeName: string,
): Promise<void> {
  const want = Object.values(images).map((i) => i.ref).sort();
  const failing = await waitFor("three KEDA Pods failing to pull on the real node", async () => {
    const ps = await pods(env.kube, NS);
    const pulling = ps.filter((p) => /ErrImagePull|ImagePullBackOff/.test(p.waiting));
    return pulling.length === 3 ? ps : undefined;
  }, {
    timeoutMs: 60_000,
    describe: async () => describePods(await pods(env.kube, NS)),
  });
  assert.deepEqual(failing.map((p) => p.image).sort(), want, describePods(failing));
  for (const p of failing) {
    assert.equal(p.node, nodeName, describePods(failing));
    assert.deepEqual(p.nodeSelector, { [env.cluster.realNode!.label.key]: "real" });
  }
  // For a while (the operator has seen the Deployments fail), the Scaler must not claim Ready.
  const until = Date.now() + 10_000;
  while (Date.now() < until) {
    const s = await env.kube.get("scaler", "keda", NS);
    assert.ok(s && statusOf(s).state !== undefined, "the Scaler has a state");
    assert.notEqual(statusOf(s).state, "Ready", describe(s));
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** Restarts the operator with a webhook image no node has, then with the right one. */
async function wrongImageRollout(env: E2E, images: KedaImages): Promise<void> {
  const wrong = `${images.admissionWebhook.ref}-missing`;
  await env.stopOperators();
  const flags = imageFlags(images).map((f) =>
    f.startsWith("--keda-webhook-image=") ? `--keda-webhook-image=${wrong}` : f
  );
  await env.startServing({ identity: "keda-real-wrong", extraArgs: flags });
  await waitFor("a webhook Pod failing to pull the wrong image", async () => {
    const ps = await pods(env.kube, NS);
    return ps.some((p) => p.image === wrong && /ErrImagePull|ImagePullBackOff/.test(p.waiting));
  }, { timeoutMs: 60_000, describe: async () => describePods(await pods(env.kube, NS)) });
  // The old webhook Pod still serves, but the rollout does not finish: the Scaler is not Ready.
  const notReady = await env.waitStatus("scaler", NS, "keda", { state: "Processing" });
  assert.notEqual(statusOf(notReady).state, "Ready");
  await env.stopOperators();
  await env.startServing({ identity: "keda-real-fixed", extraArgs: imageFlags(images) });
  await env.waitStatus("scaler", NS, "keda", { state: "Ready" }, { timeoutMs: READY_MS });
  const ps = await waitFor("only the right images' Pods left", async () => {
    const now = await pods(env.kube, NS);
    return now.length === 3 && now.every((p) => p.ready) ? now : undefined;
  }, { timeoutMs: 120_000, describe: async () => describePods(await pods(env.kube, NS)) });
  assert.deepEqual(
    ps.map((p) => p.image).sort(),
    Object.values(images).map((i) => i.ref).sort(),
  );
}

/** KEDA's certificate Secret exists and its CA reaches the APIService and every webhook. */
async function kedaCaInjected(env: E2E): Promise<void> {
  const secret = await env.kube.get<{ data?: Record<string, string> }>(
    "secret",
    "kedaorg-certs",
    NS,
  );
  const keys = Object.keys(secret?.data ?? {}).sort();
  assert.deepEqual(keys, ["ca.crt", "ca.key", "tls.crt", "tls.key"]);
  const ca = secret!.data!["ca.crt"];
  // KEDA's rotator injects the CA some seconds after it wrote the Secret.
  await waitFor("KEDA's CA in the APIService and the webhook configuration", async () => {
    const api = await env.kube.get<{ spec: { caBundle?: string } }>(
      "apiservice",
      "v1beta1.external.metrics.k8s.io",
    );
    const hooks = await env.kube.get<{ webhooks: { clientConfig: { caBundle?: string } }[] }>(
      "validatingwebhookconfiguration",
      "keda-admission",
    );
    return api?.spec.caBundle === ca && hooks !== undefined && hooks.webhooks.length === 6 &&
      hooks.webhooks.every((w) => w.clientConfig.caBundle === ca);
  }, { timeoutMs: 120_000, intervalMs: 1000 });
  // The aggregator reaches KEDA's metrics server (its Pod's address, the front proxy's client
  // certificate) and finds it serving external.metrics.k8s.io.
  await waitFor("the external metrics APIService Available", async () => {
    const api = await env.kube.get("apiservice", "v1beta1.external.metrics.k8s.io");
    return conditionOf(api, "Available")?.status === "True";
  }, {
    timeoutMs: 120_000,
    intervalMs: 1000,
    describe: async () =>
      JSON.stringify(
        conditionOf(
          await env.kube.get("apiservice", "v1beta1.external.metrics.k8s.io"),
          "Available",
        ),
      ),
  });
}
