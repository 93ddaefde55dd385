/**
 * KEDA 2.20.2 for real: its three programs, built from KEDA's Go module into images made here
 * (tools/keda), run on the cluster's real node. The operator (a host process, as in every e2e
 * test) renders the Scaler's Deployments unchanged but for the image flags; the namespace's
 * annotations put their Pods on the real node. The Scaler is not Ready while the images are
 * missing, and is Ready once KEDA's Pods are; KEDA's operator turns a ScaledObject into its HPA;
 * KEDA scales a real Deployment on a metric served in the cluster (through the aggregator, KEDA's
 * metrics server, its operator, cluster DNS and kube-proxy); a Scaler edit rolls KEDA's Pods while
 * scaling goes on; with CoreDNS scaled to 0 the Scaler leaves Ready naming DNS and comes back
 * (keda_dns.ts); the Scaler's deletion waits for the ScaledObjects, names them, and leaves no
 * APIService, webhook or CRD behind: discovery and namespace deletion work after it.
 */
import assert from "node:assert/strict";
import { KEDA_DEPLOYMENTS, KEDA_VERSION } from "../../src/reconcile/scaler/names.ts";
import { type E2E, e2eSuite, waitFor } from "./harness.ts";
import { moduleSelector, namespace, scaledObject, scaler } from "./fixtures.ts";
import { conditionOf, describe, statesWritten, statusOf } from "./status.ts";
import {
  describePods,
  KEDA_REAL_SKIP,
  kedaImages,
  kwokDeployment,
  operatorFlags,
  pods,
  realNodeNamespace,
} from "./keda_real.ts";
import type { KedaImages } from "../../tools/keda/image.ts";
import {
  describeTrace,
  longestInactive,
  metricsApiScaledObject,
  SCALE_BOUNDS,
  SCALED_APP,
  type ScaleSample,
  ScaleTrace,
  scalingWorkload,
  setMetric,
} from "./keda_scaling.ts";
import { moduleGrantsRole } from "../../src/kube/rbac.ts";
import { MODULE_GROUPS, nothingLeftBehind } from "./left_behind.ts";
import { clusterDnsOutage } from "./keda_dns.ts";

const NS = "keda-system";
const USER_NS = "e2e-user";
/** Where KEDA scales a real Deployment (its Pods go to the real node). */
const SCALE_NS = "e2e-scale";
/** The ScaledObject on the real Deployment, and its HPA. */
const LOAD = "load";
const LOAD_HPA = `keda-hpa-${LOAD}`;
/** What the scaling steps sample: the scaled Deployment, its HPA and the Scaler. */
const LOAD_TRACE = {
  ns: SCALE_NS,
  deployment: SCALED_APP,
  hpa: LOAD_HPA,
  scaler: { ns: NS, name: "keda" },
};
/** How long the HPA may take to follow the metric: its 15 s sync, KEDA's poll, Pods starting. */
const SCALE_MS = 180_000;
const KEDA_APPS = Object.values(KEDA_DEPLOYMENTS).sort();
/** Readiness of all three can take minutes: the webhooks and the metrics server restart until
 * the KEDA operator has written their certificates and kubelet has put them into the volume. */
const READY_MS = 420_000;

e2eSuite("keda-real", async (env, t) => {
  const images = await kedaImages();
  const node = env.cluster.realNode!;
  await env.step(t, "KEDA's namespace sends its Pods to the real node", async () => {
    await env.installCrds();
    await env.kube.apply([realNodeNamespace(NS), namespace(USER_NS), realNodeNamespace(SCALE_NS)]);
    assert.deepEqual(await node.loadImage(node.podcheckArchive), [node.podcheckImage]);
    // KEDA goes to its own namespace: the operator's module grants Role goes there first.
    await env.kube.apply(moduleGrantsRole(NS));
    // ServiceAccount admission refuses Pods until the namespace's default ServiceAccount exists.
    await waitFor("default ServiceAccounts", async () => {
      for (const ns of [NS, USER_NS, SCALE_NS]) {
        if (!await env.kube.get("sa", "default", ns)) return false;
      }
      return true;
    });
    await env.startServing({ identity: "keda-real", extraArgs: operatorFlags(images) });
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
    "KEDA scales a real Deployment from 1 to 3 and back on a metric served in the cluster",
    async () => {
      await scalesForReal(env);
    },
  );

  await env.step(
    t,
    "a Scaler edit reaches KEDA's running Pods, Processing then Ready, while scaling goes on",
    async () => {
      await scalerEditRollsKeda(env);
    },
  );

  await env.step(
    t,
    "KEDA's images move to a rebuild with another tag: ScaledObjects and HPAs kept, scaling goes on",
    async () => {
      await upgradeInPlace(env, images);
    },
  );

  await env.step(
    t,
    "CoreDNS scaled to 0: the Scaler leaves Ready naming DNS, Ready again once it is back",
    async () => {
      await clusterDnsOutage(
        env,
        NS,
        "keda",
        `${KEDA_DEPLOYMENTS.operator}.${NS}.svc.cluster.local`,
      );
    },
  );

  await env.step(
    t,
    "deleting the Scaler waits for the ScaledObjects naming them, then removes KEDA cleanly",
    async () => {
      await env.kube.delete("scaler", ["keda"], NS);
      const k = await env.waitStatus("scaler", NS, "keda", {
        state: "Error",
        conditions: [{ type: "Deleted", status: "False", reason: "DeletionErr" }],
      });
      assert.match(
        conditionOf(k, "Deleted")?.message ?? "",
        new RegExp(`\\b2 ScaledObjects \\(${SCALE_NS}/${LOAD}, ${USER_NS}/hello\\)`),
        describe(k),
      );
      const kept = await env.kube.list("deployments", {
        namespace: NS,
        labelSelector: moduleSelector("keda"),
      });
      assert.equal(kept.length, 3, "KEDA was uninstalled although deletion is blocked");
      // KEDA's own operator still runs: it removes its finalizer and the HPA goes with the object.
      await env.kube.delete("scaledobject", ["hello"], USER_NS);
      await env.kube.delete("scaledobject", [LOAD], SCALE_NS);
      await env.waitGone("scaledobject", USER_NS, "hello");
      await env.waitGone("hpa", USER_NS, "keda-hpa-hello");
      await env.waitGone("scaledobject", SCALE_NS, LOAD);
      await env.waitGone("hpa", SCALE_NS, LOAD_HPA);
      await env.waitGone("scaler", NS, "keda", { timeoutMs: 120_000 });
      const left = await env.kube.list("deployments", {
        allNamespaces: true,
        labelSelector: moduleSelector("keda"),
      });
      assert.deepEqual(left.map((d) => d.metadata.name), []);
      await nothingLeftBehind(env, MODULE_GROUPS.keda);
    },
  );
}, { realNode: true, skip: KEDA_REAL_SKIP });

interface HpaStatusJson {
  status?: {
    currentMetrics?: {
      type: string;
      external?: { metric: { name: string }; current: { averageValue?: string } };
    }[];
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
}

/** The Deployment's ready replicas, when its spec asks for exactly `n`. */
function at(n: number) {
  return (s: ScaleSample | undefined) => s !== undefined && s.replicas === n && s.ready === n;
}

/** Asserts the replicas asked only moved towards `to` and stayed within the ScaledObject's bounds. */
function assertMonotone(samples: readonly ScaleSample[], to: number, what: string): void {
  const up = to >= (samples[0]?.replicas ?? to);
  for (let i = 1; i < samples.length; i++) {
    const [a, b] = [samples[i - 1].replicas, samples[i].replicas];
    assert.ok(
      up ? b >= a : b <= a,
      `${what}: replicas went ${a} -> ${b}\n${describeTrace(samples)}`,
    );
  }
  for (const s of samples) {
    assert.ok(
      s.replicas >= SCALE_BOUNDS.min && s.replicas <= SCALE_BOUNDS.max,
      `${what}: ${s.replicas} replicas outside ${SCALE_BOUNDS.min}..${SCALE_BOUNDS.max}`,
    );
  }
}

/** Waits until the trace's last sample shows `n` replicas asked and ready. */
async function waitReplicas(trace: ScaleTrace, n: number, what: string): Promise<number> {
  await waitFor(what, () => Promise.resolve(at(n)(trace.samples.at(-1))), {
    timeoutMs: SCALE_MS,
    intervalMs: 500,
    describe: () => Promise.resolve(describeTrace(trace.samples)),
  });
  return trace.now();
}

/**
 * Point 2: a real Deployment scaled by KEDA from 1 to 3 replicas and back as the metric moves,
 * the HPA reading the external metric, the Scaler Ready in every sample.
 */
async function scalesForReal(env: E2E): Promise<void> {
  const node = env.cluster.realNode!;
  await env.kube.apply(scalingWorkload(SCALE_NS, node.podcheckImage));
  await env.kube.must(["rollout", "status", "deployment", "--timeout=120s", "-n", SCALE_NS]);
  await setMetric(env.kube, SCALE_NS, 0);
  await env.kube.apply([metricsApiScaledObject(SCALE_NS, LOAD, SCALED_APP)]);
  // The HPA reads the metric through the aggregator, KEDA's metrics server (which reaches KEDA's
  // operator at its Service's DNS name) and the operator, which GETs the metric Service by name.
  const hpa = await waitFor("the HPA reading the external metric", async () => {
    const h = await env.kube.get<HpaStatusJson>("hpa", LOAD_HPA, SCALE_NS);
    const m = h?.status?.currentMetrics?.find((c) => c.type === "External");
    return m?.external?.current.averageValue !== undefined ? { h, m } : undefined;
  }, {
    timeoutMs: SCALE_MS,
    intervalMs: 1000,
    describe: async () =>
      JSON.stringify((await env.kube.get<HpaStatusJson>("hpa", LOAD_HPA, SCALE_NS))?.status),
  });
  assert.match(hpa.m.external!.metric.name, /metric-api/, JSON.stringify(hpa.m));
  const table = await env.kube.must(["get", "hpa", LOAD_HPA, "-n", SCALE_NS]);
  assert.match(table, /\b0\/1 \(avg\)/, table);
  console.error(`[keda-real] kubectl get hpa:\n${table}`);

  const trace = new ScaleTrace(env.kube, LOAD_TRACE, 1000);
  try {
    const upFrom = trace.now();
    await setMetric(env.kube, SCALE_NS, 3);
    const upAt = await waitReplicas(trace, 3, "KEDA scaling app to 3 ready replicas");
    const shown = await env.kube.must(["get", "hpa", LOAD_HPA, "-n", SCALE_NS]);
    console.error(`[keda-real] after scaling up:\n${shown}`);
    const downFrom = trace.now();
    await setMetric(env.kube, SCALE_NS, 0);
    const downAt = await waitReplicas(trace, 1, "KEDA scaling app back to 1 replica");
    const samples = await trace.stop();
    assertMonotone(samples.filter((s) => s.at < downFrom), 3, "scaling up");
    assertMonotone(samples.filter((s) => s.at >= downFrom), 1, "scaling down");
    const notReady = samples.filter((s) => s.scaler !== "Ready");
    assert.deepEqual(notReady, [], `the Scaler left Ready:\n${describeTrace(samples)}`);
    console.error(
      `[keda-real] metric 0 -> 3: 3 Pods Ready in ${((upAt - upFrom) / 1000).toFixed(1)} s; ` +
        `3 -> 0: back to 1 in ${((downAt - downFrom) / 1000).toFixed(1)} s\n${
          describeTrace(samples)
        }`,
    );
  } finally {
    await trace.stop();
  }
}

interface PodJson {
  metadata: {
    name: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
  };
  spec: {
    containers: {
      args?: string[];
      env?: { name: string; value?: string }[];
      resources?: { requests?: Record<string, string> };
    }[];
  };
}

/** The edit of point 3: a log level, requests, an env entry, a Pod annotation, sidecar injection. */
const EDIT = {
  spec: {
    logging: { operator: { level: "debug" } },
    resources: { operator: { requests: { cpu: "150m", memory: "160Mi" } } },
    env: [{ name: "E2E_EDIT", value: "1" }],
    podAnnotations: { operator: { "e2e.example.com/edit": "1" } },
    istio: { operator: { enabledSidecarInjection: true } },
  },
};

/**
 * Point 3: the Scaler edit rolls KEDA's Pods (read from the Pods, not the Deployments), the Scaler
 * goes Processing then Ready, and the ScaledObject scales to 2 and back meanwhile.
 */
async function scalerEditRollsKeda(env: E2E): Promise<void> {
  const before = new Set((await pods(env.kube, NS)).map((p) => p.name));
  const trace = new ScaleTrace(env.kube, LOAD_TRACE, 1000);
  // The states the operator wrote, from the audit log: a Processing shorter than the trace's
  // period (0.8 s once, on a quiet machine) is there too.
  const editAt = Date.now();
  const written = () => statesWritten(env.cluster, "scalers", NS, editAt);
  try {
    await env.kube.must([
      "patch",
      "scaler",
      "keda",
      "-n",
      NS,
      "--type=merge",
      "-p",
      JSON.stringify(EDIT),
    ]);
    await setMetric(env.kube, SCALE_NS, 2);
    await waitFor(
      "the Scaler Processing, then Ready with KEDA's operator Pod replaced",
      async () => {
        const states = await written();
        const processing = states.indexOf("Processing");
        if (processing < 0 || !states.slice(processing).includes("Ready")) return false;
        const ps = await pods(env.kube, NS);
        const operator = ps.find((p) => p.app === KEDA_DEPLOYMENTS.operator);
        return operator !== undefined && !before.has(operator.name) && ps.every((p) => p.ready);
      },
      {
        timeoutMs: READY_MS,
        intervalMs: 1000,
        describe: async () =>
          `states written: ${(await written()).join(", ")}\n${describeTrace(trace.samples)}`,
      },
    );
    await waitReplicas(trace, 2, "scaling on to 2 replicas across the edit");
    await setMetric(env.kube, SCALE_NS, 0);
    await waitReplicas(trace, 1, "scaling back to 1 after the edit");
    const samples = await trace.stop();
    const inactive = longestInactive(samples);
    console.error(
      `[keda-real] Scaler edit: longest HPA ScalingActive gap ${(inactive / 1000).toFixed(1)} s\n` +
        describeTrace(samples),
    );
    await editInPods(env);
  } finally {
    await trace.stop();
  }
}

/**
 * Point 5, as far as this machine allows: one KEDA version is served here, so the upgrade is a
 * rebuilt image of it under another tag. The operator is restarted with the new images (as a new
 * operator release would come); every KEDA Pod is replaced, the ScaledObject and its HPA keep their
 * identity, scaling goes on, and kedaVersion never leaves the version the Pods run.
 */
async function upgradeInPlace(env: E2E, images: KedaImages): Promise<void> {
  const node = env.cluster.realNode!;
  const rebuilt = Object.fromEntries(
    Object.entries(images).map(([k, i]) => [k, { ...i, ref: `${i.ref}-rebuilt` }]),
  ) as unknown as KedaImages;
  for (const k of Object.keys(images) as (keyof KedaImages)[]) {
    await node.tagImage(images[k].ref, rebuilt[k].ref);
  }
  const uid = async (resource: string, name: string) =>
    (await env.kube.get(resource, name, SCALE_NS))?.metadata.uid;
  const before = { so: await uid("scaledobject", LOAD), hpa: await uid("hpa", LOAD_HPA) };
  assert.ok(before.so && before.hpa, "the ScaledObject and its HPA exist before the upgrade");
  const trace = new ScaleTrace(env.kube, LOAD_TRACE, 1000);
  const versions: string[] = [];
  try {
    await env.stopOperators();
    await env.startServing({ identity: "keda-real-upgrade", extraArgs: operatorFlags(rebuilt) });
    const want = Object.values(rebuilt).map((i) => i.ref).sort();
    await waitFor("every KEDA Pod running the rebuilt images, the Scaler Ready", async () => {
      const s = await env.kube.get("scaler", "keda", NS);
      versions.push(String(statusOf(s).kedaVersion));
      const ps = await pods(env.kube, NS);
      return statusOf(s).state === "Ready" && ps.length === 3 && ps.every((p) => p.ready) &&
        JSON.stringify(ps.map((p) => p.image).sort()) === JSON.stringify(want);
    }, {
      timeoutMs: READY_MS,
      intervalMs: 1000,
      describe: async () => describePods(await pods(env.kube, NS)),
    });
    await setMetric(env.kube, SCALE_NS, 2);
    await waitReplicas(trace, 2, "scaling to 2 on the rebuilt KEDA");
    await setMetric(env.kube, SCALE_NS, 0);
    await waitReplicas(trace, 1, "scaling back to 1 on the rebuilt KEDA");
    const samples = await trace.stop();
    assert.deepEqual(
      { so: await uid("scaledobject", LOAD), hpa: await uid("hpa", LOAD_HPA) },
      before,
    );
    assert.deepEqual([...new Set(versions)], [KEDA_VERSION], "kedaVersion while upgrading");
    console.error(
      `[keda-real] upgrade: longest HPA ScalingActive gap ${
        (longestInactive(samples) / 1000).toFixed(1)
      } s\n${describeTrace(samples)}`,
    );
  } finally {
    await trace.stop();
  }
}

/** What the edit must have changed, read from KEDA's running Pods. */
async function editInPods(env: E2E): Promise<void> {
  const running = (await env.kube.list<PodJson>("pods", { namespace: NS }))
    .filter((p) => !p.metadata.deletionTimestamp);
  const byApp = (app: string) => {
    const p = running.find((x) => x.metadata.labels?.app === app);
    assert.ok(p, `no running ${app} Pod`);
    return p;
  };
  const operator = byApp(KEDA_DEPLOYMENTS.operator);
  const c = operator.spec.containers[0];
  assert.ok(c.args?.includes("--zap-log-level=debug"), JSON.stringify(c.args));
  assert.deepEqual(c.resources?.requests, { cpu: "150m", memory: "160Mi" });
  assert.equal(operator.metadata.annotations?.["e2e.example.com/edit"], "1");
  assert.equal(operator.metadata.labels?.["sidecar.istio.io/inject"], "true");
  // The env entry goes to the components that take spec.env (the webhooks keep their own).
  for (const app of [KEDA_DEPLOYMENTS.operator, KEDA_DEPLOYMENTS.metricServer]) {
    const env = byApp(app).spec.containers[0].env ?? [];
    assert.ok(
      env.some((e) => e.name === "E2E_EDIT" && e.value === "1"),
      `${app}: ${JSON.stringify(env)}`,
    );
  }
  const webhook = byApp(KEDA_DEPLOYMENTS.admissionWebhook).spec.containers[0];
  assert.ok(!(webhook.env ?? []).some((e) => e.name === "E2E_EDIT"));
  assert.ok(webhook.args?.includes("--zap-log-level=info"), JSON.stringify(webhook.args));
}

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
  const flags = operatorFlags(images).map((f) =>
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
  await env.startServing({ identity: "keda-real-fixed", extraArgs: operatorFlags(images) });
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
