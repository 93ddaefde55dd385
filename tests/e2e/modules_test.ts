/**
 * E2E on one real control plane: CRDs and schema, samples, the RateLimit table, steady state,
 * singletons, replica failure under a ResourceQuota, and deletion with and without user objects.
 */
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { join } from "node:path";
import { MODULE_GROUPS, nothingLeftBehind } from "./left_behind.ts";
import { type E2E, e2eSuite, waitFor } from "./harness.ts";
import { REPO_ROOT } from "./operator.ts";
import { OPERATOR_USER } from "../../tools/cluster/mod.ts";
import {
  fn,
  moduleSelector,
  namespace,
  noPodsQuota,
  rateLimit,
  readSamples,
  scaledObject,
  scaler,
  SERVED_KINDS,
  serverless,
} from "./fixtures.ts";
import {
  assertAggregatorVerdict,
  conditionOf,
  describe,
  KWOK_VERDICT_MS,
  SCALER_ON_KWOK,
  statusMatches,
} from "./status.ts";
import { schemaRefusals } from "./refusals.ts";
import { adviceWarnings } from "./advice.ts";

const EXPECTED_CRDS = [
  "ratelimits.gateway.platform-project.io",
  "scalers.operator.platform-project.io",
  "serverlesses.operator.platform-project.io",
];

e2eSuite("modules", async (env, t) => {
  const crds = await env.step(t, "the CRDs install", async () => {
    const names = await env.installCrds();
    for (const n of EXPECTED_CRDS) {
      assert.ok(names.includes(n), `crds/ lacks ${n} (has ${names.join(", ")})`);
    }
    const yaml = await env.kube.must([
      "get",
      "crd",
      "serverlesses.operator.platform-project.io",
      "-o",
      "yaml",
    ]);
    assert.match(yaml, /kind: CustomResourceDefinition/);
  });
  if (!crds) return; // nothing below can run without the CRDs

  await env.step(
    t,
    "objects that break the schema are refused by kubectl apply",
    () => schemaRefusals(env),
  );

  await env.step(
    t,
    "kubectl apply warns of RateLimit rules as the preview advises (deploy/ratelimit/advice.yaml)",
    () => adviceWarnings(env),
  );

  const started = await env.step(t, "the operator starts", async () => {
    await env.startServing({ identity: "modules-0" });
  });
  if (!started) return;

  await env.step(t, "every sample reaches its state", () => samplesReachState(env));
  await env.step(
    t,
    "kubectl get ratelimits prints NAME STATUS AGE with Ready and Error rows",
    () => ratelimitTable(env),
  );
  await env.step(
    t,
    "steady state: one minute with zero writes by platform-operator",
    () => steadyState(env),
  );
  await env.step(
    t,
    "singletons: duplicates get the duplicate rows; deleting the first hands over",
    () => singletons(env),
  );
  await env.step(
    t,
    "a ResourceQuota forbidding Pods gives DeploymentReplicaFailure; removing it gives Ready",
    () => quota(env),
  );
  await env.step(
    t,
    "deletion is blocked by a Function and a ScaledObject, then completes; a user's objects with the modules' labels stay",
    () => blockedDeletion(env),
  );
});

/**
 * Samples written to show an Error (see their comments); every other sample must become Ready, but
 * the Scaler: its KEDA runs on kwok, whose Pods never serve, so it shows the aggregator's verdict.
 */
const SAMPLE_ERRORS: Record<string, string> = { "samples/ratelimit-invalid.yaml": "Error" };

async function samplesReachState(env: E2E): Promise<void> {
  const samples = await readSamples();
  const served = samples.filter((s) => SERVED_KINDS.has(s.object.kind));
  assert.ok(
    served.length >= 3,
    `samples/ has only ${served.length} Serverless/Scaler/RateLimit objects`,
  );
  // The valid samples first, then the Error ones (an invalid RateLimit applied first would be the
  // older of two selecting the same Pods).
  const files = [...new Set(samples.map((s) => s.file))];
  for (
    const batch of [
      files.filter((f) => !SAMPLE_ERRORS[f]),
      files.filter((f) => SAMPLE_ERRORS[f]),
    ]
  ) {
    if (batch.length === 0) continue;
    await env.kube.must(["apply", ...batch.flatMap((f) => ["-f", join(REPO_ROOT, f)])]);
    await Promise.all(
      served.filter((s) => batch.includes(s.file)).map(({ file, object }) => {
        const ns = object.metadata.namespace ?? "default";
        const scaler = object.kind === "Scaler";
        const want = scaler ? SCALER_ON_KWOK : { state: SAMPLE_ERRORS[file] ?? "Ready" };
        return env.waitStatus(object.kind.toLowerCase(), ns, object.metadata.name, want, {
          ...(scaler ? { timeoutMs: KWOK_VERDICT_MS } : {}),
        })
          .then((o) => scaler && assertAggregatorVerdict(o))
          .catch((e) => Promise.reject(new Error(`${file}: ${e.message}`)));
      }),
    );
  }
}

async function ratelimitTable(env: E2E): Promise<void> {
  await env.kube.apply([
    namespace("e2e-rl"),
    rateLimit("e2e-rl", "rl-ok", "web"),
    rateLimit("e2e-rl", "rl-bad", "api", "15s"),
  ]);
  await env.waitStatus("ratelimit", "e2e-rl", "rl-ok", { state: "Ready" });
  await env.waitStatus("ratelimit", "e2e-rl", "rl-bad", { state: "Error" });
  const text = await env.kube.table("ratelimits", { namespace: "e2e-rl" });
  const [header, ...rows] = text.trimEnd().split("\n").map((l) => l.trim().split(/\s+/));
  assert.deepEqual(header, ["NAME", "STATUS", "AGE"], text);
  assert.deepEqual(
    rows.map((r) => r.slice(0, 2)).sort(),
    [["rl-bad", "Error"], ["rl-ok", "Ready"]],
    text,
  );
  const all = await env.kube.table("ratelimits", { allNamespaces: true });
  assert.deepEqual(
    all.split("\n")[0].trim().split(/\s+/),
    ["NAMESPACE", "NAME", "STATUS", "AGE"],
    all,
  );
  const statuses = all.trimEnd().split("\n").slice(1).map((l) => l.trim().split(/\s+/)[2]);
  assert.ok(statuses.includes("Ready") && statuses.includes("Error"), all);
}

async function allServed(env: E2E): Promise<KubeObject[]> {
  const out: KubeObject[] = [];
  for (const r of ["serverlesses", "scalers", "ratelimits"]) {
    out.push(...await env.kube.list(r, { allNamespaces: true }));
  }
  return out;
}

async function steadyState(env: E2E): Promise<void> {
  const user = OPERATOR_USER;
  // Everything must be settled: every served object has the state its spec leads to.
  await waitFor(
    "every module object and RateLimit to be Ready or Error (a Scaler on kwok: Warning)",
    async () => {
      const objs = await allServed(env);
      return objs.every((o) =>
        ["Ready", "Error"].includes((o.status as { state?: string })?.state ?? "") ||
        (o.kind === "Scaler" && statusMatches(o, SCALER_ON_KWOK))
      );
    },
    { timeoutMs: KWOK_VERDICT_MS },
  );
  // Let in-flight reconciles of the last status changes finish (bounded), then count one minute.
  let quietSince = Date.now();
  await waitFor("5 s without operator writes", async () => {
    const n = await env.cluster.countWrites({ user, sinceMs: Date.now() - 5_000 });
    if (n > 0) quietSince = Date.now();
    return Date.now() - quietSince >= 5_000;
  }, { timeoutMs: 45_000, intervalMs: 1_000 });
  const from = Date.now();
  await new Promise((r) => setTimeout(r, 60_000));
  const writes = await env.cluster.writes({ user, sinceMs: from });
  assert.equal(
    writes.length,
    0,
    `writes by ${user} in the quiet minute:\n${
      writes.map((w) => `${w.verb} ${w.requestURI} -> ${w.responseStatus?.code}`).join("\n")
    }`,
  );
}

async function singletons(env: E2E): Promise<void> {
  const [first] = await env.kube.list("serverlesses", { allNamespaces: true });
  const [firstScaler] = await env.kube.list("scalers", { allNamespaces: true });
  assert.ok(first && firstScaler, "the samples' Serverless and Scaler are missing");
  await env.kube.apply([
    namespace("e2e-second"),
    serverless("e2e-second", "second"),
    scaler("e2e-second", "second"),
  ]);
  const dupS = await env.waitStatus("serverless", "e2e-second", "second", {
    state: "Error",
    served: "False",
    conditions: [{ type: "Configured", status: "False", reason: "ServerlessDuplicated" }],
  });
  assert.match(
    conditionOf(dupS, "Configured")?.message ?? "",
    new RegExp(first.metadata.name),
    describe(dupS),
  );
  await env.waitStatus("scaler", "e2e-second", "second", {
    state: "Error",
    served: "False",
    conditions: [{ type: "Installed", status: "False", reason: "KedaDuplicated" }],
  });
  // Deleting the first (no user objects block it) removes what it installed and hands over.
  const firstNs = first.metadata.namespace!;
  await env.kube.delete("serverless", [first.metadata.name], firstNs);
  await env.kube.delete("scaler", [firstScaler.metadata.name], firstScaler.metadata.namespace);
  await env.waitGone("serverless", firstNs, first.metadata.name);
  await env.waitGone("scaler", firstScaler.metadata.namespace, firstScaler.metadata.name);
  await env.waitStatus("serverless", "e2e-second", "second", { state: "Ready", served: "True" }, {
    timeoutMs: 120_000,
  });
  const handed = await env.waitStatus(
    "scaler",
    "e2e-second",
    "second",
    { ...SCALER_ON_KWOK, served: "True" },
    { timeoutMs: KWOK_VERDICT_MS },
  );
  assertAggregatorVerdict(handed);
  for (const m of ["serverless", "keda"] as const) {
    const left = await env.kube.list("deployments", {
      namespace: firstNs,
      labelSelector: moduleSelector(m),
    });
    assert.deepEqual(
      left.map((d) => d.metadata.name),
      [],
      `${m} Deployments left in ${firstNs} after handover`,
    );
    const now = await env.kube.list("deployments", {
      namespace: "e2e-second",
      labelSelector: moduleSelector(m),
    });
    assert.ok(now.length > 0, `no ${m} Deployments in e2e-second after handover`);
  }
}

async function quota(env: E2E): Promise<void> {
  const ns = "e2e-second";
  const failing = {
    state: "Error",
    conditions: [{ type: "DeploymentFailure", status: "True", reason: "DeploymentReplicaFailure" }],
  };
  await env.kube.apply([noPodsQuota(ns)]);
  await waitFor("the quota's status.hard to be filled in", async () => {
    const q = await env.kube.get<{ status?: { hard?: { pods?: string } } }>(
      "resourcequota",
      "no-pods",
      ns,
    );
    return q?.status?.hard?.pods === "0";
  });
  // Running Pods are not affected by a quota: delete them so the ReplicaSets must create new ones.
  await env.kube.must(["delete", "pods", "--all", "-n", ns, "--wait=false"]);
  await env.waitStatus("serverless", ns, "second", failing);
  await env.waitStatus("scaler", ns, "second", failing);
  await env.kube.delete("resourcequota", ["no-pods"], ns);
  // The ReplicaSet controller retries failed creates with a growing per-object backoff; after a
  // short failure it retries within seconds. If the failure lasted long, an update event requeues
  // a ReplicaSet at once, so touch them rather than wait out the backoff.
  try {
    await env.waitStatus("serverless", ns, "second", { state: "Ready" }, { timeoutMs: 30_000 });
  } catch {
    console.error("quota: not Ready 30 s after the quota went; touching the ReplicaSets");
    await env.kube.must([
      "annotate",
      "replicasets",
      "--all",
      "-n",
      ns,
      "--overwrite",
      `e2e/nudge=${Date.now()}`,
    ]);
  }
  await env.waitStatus("serverless", ns, "second", { state: "Ready" }, { timeoutMs: 90_000 });
  // Installed and rolled out again; on kwok that is the aggregator's verdict, not Ready.
  await env.waitStatus("scaler", ns, "second", SCALER_ON_KWOK, { timeoutMs: KWOK_VERDICT_MS });
  assert.equal(
    conditionOf(await env.kube.get("serverless", "second", ns), "DeploymentFailure")?.status ??
      "False",
    "False",
  );
}

/**
 * A user's object in the module's namespace, of a kind the module installs, carrying the module's
 * labels (a manifest copied from an installed one, a kustomization's commonLabels): not the
 * module's, since the operator's server-side apply did not write it, so never pruned, deleted with
 * the module, or waited for. Serverless installs ConfigMaps, KEDA ServiceAccounts.
 */
function userLabelled(ns: string, module: "serverless" | "keda"): KubeObject {
  const labels = Object.fromEntries(moduleSelector(module).split(",").map((kv) => kv.split("=")));
  const metadata = { name: `user-labelled-${module}`, namespace: ns, labels };
  return module === "serverless"
    ? { apiVersion: "v1", kind: "ConfigMap", metadata, data: { owner: "a user" } }
    : { apiVersion: "v1", kind: "ServiceAccount", metadata };
}

async function blockedDeletion(env: E2E): Promise<void> {
  const ns = "e2e-second";
  await env.kube.apply([
    namespace("e2e-user"),
    fn("e2e-user", "hello"),
    scaledObject("e2e-user", "hello", "web"),
  ]);
  // One written as kubectl's client-side apply does (an Update entry), one by another manager's
  // server-side apply (an Apply entry, but not the operator's).
  const users = [userLabelled(ns, "serverless"), userLabelled(ns, "keda")];
  await env.kube.apply([users[0]]);
  await env.kube.apply([users[1]], ["--server-side", "--field-manager=platform-user"]);
  await env.kube.delete("serverless", ["second"], ns);
  await env.kube.delete("scaler", ["second"], ns);
  const blocked = {
    state: "Error",
    conditions: [{ type: "Deleted", status: "False", reason: "DeletionErr" }],
  };
  const s = await env.waitStatus("serverless", ns, "second", blocked);
  const k = await env.waitStatus("scaler", ns, "second", blocked);
  // The messages name the objects that block, so a user knows what to remove.
  assert.match(
    conditionOf(s, "Deleted")?.message ?? "",
    /\b1 Function \(e2e-user\/hello\)/,
    describe(s),
  );
  assert.match(
    conditionOf(k, "Deleted")?.message ?? "",
    /\b1 ScaledObject \(e2e-user\/hello\)/,
    describe(k),
  );
  for (const m of ["serverless", "keda"] as const) {
    const kept = await env.kube.list("deployments", {
      namespace: ns,
      labelSelector: moduleSelector(m),
    });
    assert.ok(kept.length > 0, `${m} was uninstalled although deletion is blocked`);
  }
  await env.kube.delete("function", ["hello"], "e2e-user");
  await env.kube.delete("scaledobject", ["hello"], "e2e-user");
  await env.waitGone("serverless", ns, "second", { timeoutMs: 120_000 });
  await env.waitGone("scaler", ns, "second", { timeoutMs: 120_000 });
  for (const m of ["serverless", "keda"] as const) {
    const left = await env.kube.list("deployments", {
      allNamespaces: true,
      labelSelector: moduleSelector(m),
    });
    assert.deepEqual(left.map((d) => d.metadata.name), [], `${m} Deployments left after deletion`);
  }
  // The modules are gone; the user's objects are as the user wrote them.
  for (const u of users) {
    const what = `the user's ${u.kind} ${ns}/${u.metadata.name}`;
    const kept = await env.kube.get(u.kind.toLowerCase(), u.metadata.name, ns);
    assert.ok(kept, `${what} was deleted with its module`);
    assert.deepEqual([kept.metadata.labels, kept.data], [u.metadata.labels, u.data], what);
  }
  await nothingLeftBehind(env, [...MODULE_GROUPS.serverless, ...MODULE_GROUPS.keda]);
}
