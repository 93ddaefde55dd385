/**
 * E2E of what a RateLimit's status promises, on one real control plane (first, the start-up access
 * checks as deploy/'s ServiceAccount, access_checks.ts): enforcement follows the
 * Pods (sidecar or not, `-o wide`, a Warning Event when it drops), an invalid update keeps the
 * last good EnvoyFilter (also across an operator restart, with zero writes), `kubectl describe`
 * reads as a runbook, a newer conflicting RateLimit leaves the older one's filter alone, deleting
 * removes the filter, the gateway's Pods are counted, and in the mesh's root namespace a limit
 * reaching a workload is refused. Last, /metrics beyond loopback: the real API server reviews each
 * scraper's token for the operator, with deploy/'s roles.
 */
import assert from "node:assert/strict";
import type { KubeObject } from "../../src/api/object.ts";
import { DEFAULT_RBAC_NAMES } from "../../src/kube/rbac.ts";
import { OPERATOR_USER } from "../../tools/cluster/mod.ts";
import { freePort } from "../../tools/processes.ts";
import { scrapeHttps } from "../../tools/operator/scrape_https.ts";
import { shownOutput } from "../docs_shown.ts";
import { type E2E, e2eSuite, type OperatorProcess, waitFor } from "./harness.ts";
import { bucket, GATEWAY_API, meshDeployment, namespace } from "./fixtures.ts";
import { conditionOf, describe, statusOf } from "./status.ts";
import { assertNoWritesAtRest } from "./at_rest.ts";
import { startupAccessChecks } from "./access_checks.ts";

const NS = "e2e-rl-status";
const ANNOTATION = "gateway.platform-project.io/ratelimit-generation";
const USER = OPERATOR_USER;

/** The Pods export Envoy's rate limit stats, so the Enforced message shows no stats hint. */
const STATS = { "sidecar.istio.io/statsInclusionPrefixes": "http_local_rate_limiter" };

function deployment(name: string, replicas: number, sidecar: boolean): KubeObject {
  return meshDeployment(NS, name, { app: "web", track: name }, replicas, sidecar, STATS);
}

function limit(name: string, rules: { path: string; fillInterval: string }[] = []): KubeObject {
  return {
    apiVersion: GATEWAY_API,
    kind: "RateLimit",
    metadata: { name, namespace: NS },
    spec: {
      selectorLabels: { app: "web" },
      local: {
        defaultBucket: bucket(10, 10, "10s"),
        buckets: rules.map((r) => ({ path: r.path, bucket: bucket(2, 2, r.fillInterval) })),
      },
    },
  };
}

interface Figures {
  enforcedGeneration?: number;
  podsSelected?: number;
  podsWithSidecar?: number;
}

/** Waits until the RateLimit shows the state, the Enforced reason and the figures. */
function waitFigures(
  env: E2E,
  name: string,
  state: string,
  enforced: string,
  figures: Figures,
  ns = NS,
): Promise<KubeObject> {
  let last: KubeObject | undefined;
  return waitFor(
    `ratelimit ${ns}/${name}: ${state}, Enforced ${enforced}, ${JSON.stringify(figures)}`,
    async () => {
      last = await env.kube.get("ratelimit", name, ns);
      const s = statusOf(last) as Figures & { state?: string };
      return last && s.state === state && conditionOf(last, "Enforced")?.reason === enforced &&
          Object.entries(figures).every(([k, v]) => s[k as keyof Figures] === v)
        ? last
        : undefined;
    },
    {
      timeoutMs: 120_000,
      describe: () => Promise.resolve(`${describe(last)} ${JSON.stringify(statusOf(last))}`),
    },
  );
}

function filterOf(env: E2E, name: string, ns = NS): Promise<KubeObject | undefined> {
  return env.kube.get("envoyfilter", name, ns);
}

e2eSuite("ratelimit-status", async (env, t) => {
  const crds = await env.step(t, "CRDs", () => env.installCrds().then(() => {}));
  // Before any replica runs: the step takes a grant away for a moment.
  await env.step(
    t,
    "start-up checks as deploy/'s ServiceAccount: two rules reviews; a grant taken away is named",
    () => startupAccessChecks(env),
  );
  const ready = crds && await env.step(t, "the operator", async () => {
    await env.startServing({ identity: "rl-0" });
    await env.kube.apply([namespace(NS)]);
  });
  if (!ready) return;
  let operator: OperatorProcess | undefined = env.running[0];

  await env.step(
    t,
    "enforcement follows the Pods; -o wide shows it; a drop is a Warning Event",
    async () => {
      await env.kube.apply([deployment("stable", 2, true), limit("web")]);
      await waitFigures(env, "web", "Ready", "Enforced", {
        enforcedGeneration: 1,
        podsSelected: 2,
        podsWithSidecar: 2,
      });
      const wide = await env.kube.must(["get", "ratelimits", "-n", NS, "-o", "wide"]);
      console.error(`[ratelimit-status] kubectl get ratelimits -o wide:\n${wide}`);
      const [header, row] = wide.trimEnd().split("\n").map((l) => l.trim().split(/\s+/));
      assert.deepEqual(header, [
        "NAME",
        "STATUS",
        "ENFORCED",
        "ACCEPTED",
        "PODS",
        "SIDECARS",
        "ENFORCED-GEN",
        "MODE",
        "WORKLOAD-RATE",
        "AGE",
      ], wide);
      // Accepted: Unknown, as this operator does not ask istiod (IstiodNotAsked).
      const figures = ["web", "Ready", "True", "Unknown", "2", "2", "1", "Enforcing", "20/10s"];
      assert.deepEqual(row.slice(0, 9), figures, wide);
      // docs/ratelimit-status.md shows this table: the same columns and figures (AGE aside).
      const shown = (await shownOutput(
        "docs/ratelimit-status.md",
        `kubectl get ratelimits -n ${NS} -o wide`,
      )).map((l) => l.trim().split(/\s+/).slice(0, 9));
      assert.deepEqual(shown, [header.slice(0, 9), row.slice(0, 9)], wide);
      const plain = await env.kube.table("ratelimits", { namespace: NS });
      assert.deepEqual(plain.split("\n")[0].trim().split(/\s+/), ["NAME", "STATUS", "AGE"], plain);
      // A canary without the mesh's sidecar joins the selected Pods.
      await env.kube.apply([deployment("canary", 1, false)]);
      const rl = await waitFigures(env, "web", "Ready", "SidecarMissing", {
        podsSelected: 3,
        podsWithSidecar: 2,
      });
      const [canary] = await env.kube.list("pods", {
        namespace: NS,
        labelSelector: "track=canary",
      });
      const message = conditionOf(rl, "Enforced")?.message ?? "";
      assert.match(message, /^1 of 3 Pods with app=web has no mesh sidecar/, message);
      assert.ok(message.includes(canary.metadata.name), message);
      await waitFor("a Warning Event SidecarMissing on the RateLimit", async () => {
        const events = await env.kube.list<KubeObject & { type: string; reason: string }>(
          "events",
          {
            namespace: NS,
          },
        );
        return events.some((e) =>
          e.type === "Warning" && e.reason === "SidecarMissing" &&
          (e as unknown as { involvedObject: { name: string } }).involvedObject.name === "web"
        );
      });
      await env.kube.delete("deployment", ["canary"], NS);
      await waitFigures(env, "web", "Ready", "Enforced", { podsSelected: 2, podsWithSidecar: 2 });
    },
  );

  let filterRv = "";
  await env.step(
    t,
    "an invalid update keeps the EnvoyFilter of generation 1 in place",
    async () => {
      const before = await filterOf(env, "web");
      assert.equal(before?.metadata.annotations?.[ANNOTATION], "1", describe(before));
      filterRv = before!.metadata.resourceVersion!;
      await env.kube.apply([limit("web", [{ path: "/headers", fillInterval: "15s" }])]);
      const rl = await waitFigures(env, "web", "Error", "Enforced", { enforcedGeneration: 1 });
      assert.equal(statusOf(rl).observedGeneration, 2);
      assert.equal(
        conditionOf(rl, "Ready")?.message,
        "Invalid spec, generation 2 rejected: spec.local.buckets[0].bucket.fillInterval 15s is not a multiple of the default bucket's fillInterval 10s; generation 1 still enforced by EnvoyFilter e2e-rl-status/web",
      );
      const after = await filterOf(env, "web");
      assert.equal(after?.metadata.resourceVersion, filterRv, "the filter was not touched");
    },
  );

  await env.step(t, "after an operator restart: the same status, not a single write", async () => {
    await operator?.stop();
    const restartedAt = Date.now();
    operator = await env.startServing({ identity: "rl-1" });
    const next = operator;
    await waitFor(
      "the new operator to reconcile",
      async () =>
        (await next.logLines()).some((l) => l.msg === "caches synced and leading: reconciling"),
    );
    // Its first wave has run through every RateLimit well within this.
    await new Promise((r) => setTimeout(r, 15_000));
    const writes = await env.cluster.writes({ user: USER, sinceMs: restartedAt, namespace: NS });
    assert.deepEqual(
      writes.map((w) => `${w.verb} ${w.requestURI}`),
      [],
      "the restarted operator wrote in the namespace",
    );
    const filter = await filterOf(env, "web");
    assert.equal(filter?.metadata.resourceVersion, filterRv);
    const rl = await env.kube.get("ratelimit", "web", NS);
    assert.equal((statusOf(rl) as Figures).enforcedGeneration, 1);
  });

  await env.step(t, "kubectl describe reads as a runbook", async () => {
    const text = await env.kube.must(["describe", "ratelimit", "web", "-n", NS]);
    console.error(`[ratelimit-status] kubectl describe ratelimit web:\n${text}`);
    for (
      const want of [
        /State:\s+Error/,
        /Enforced Generation:\s+1/,
        /Observed Generation:\s+2/,
        /Pods Selected:\s+2/,
        /Pods With Sidecar:\s+2/,
        /generation 2 rejected: spec\.local\.buckets\[0\]\.bucket\.fillInterval 15s is not a multiple/,
        /generation 1 still enforced by EnvoyFilter e2e-rl-status\/web/,
        /Enforced on all 2 Pods with app=web: each has a mesh sidecar/,
        /Warning\s+InvalidSpec/,
        /Warning\s+SidecarMissing/,
      ]
    ) assert.match(text, want, text);
    // docs/ratelimit-status.md shows this output: every line it shows is here, times and ages
    // (an Event's age with its count, "17s (x2 over 17s)", as the recorder counts repeats)
    // and Pod name suffixes aside.
    const steady = (l: string) =>
      l.trim().replace(/\d{4}-\d\d-\d\dT[\d:]+Z/g, "T")
        .replace(/\s+\d+[smh](\s+\(x\d+ over \d+[smh]\))?\s+/g, " AGE ")
        .replace(/canary-[a-z0-9]+-[a-z0-9]+/g, "canary-*").replace(/\s+/g, " ");
    const live = new Set(text.split("\n").map(steady));
    const shown = await shownOutput(
      "docs/ratelimit-status.md",
      `kubectl describe ratelimit web -n ${NS}`,
    );
    const missing = shown.map(steady).filter((l) => !live.has(l));
    assert.deepEqual(missing, [], `lines of docs/ratelimit-status.md not in:\n${text}`);
  });

  await env.step(t, "fixing the spec enforces the new generation", async () => {
    await env.kube.apply([limit("web", [{ path: "/headers", fillInterval: "20s" }])]);
    await waitFigures(env, "web", "Ready", "Enforced", { enforcedGeneration: 3 });
    const filter = await filterOf(env, "web");
    assert.equal(filter?.metadata.annotations?.[ANNOTATION], "3");
    filterRv = filter!.metadata.resourceVersion!;
  });

  await env.step(
    t,
    "a newer conflicting RateLimit never touches the older one's filter",
    async () => {
      await env.kube.apply([limit("web-2")]);
      const rl = await env.waitStatus("ratelimit", NS, "web-2", {
        state: "Error",
        conditions: [{ type: "Ready", status: "False", reason: "Conflict" }],
      });
      assert.match(conditionOf(rl, "Ready")?.message ?? "", /older RateLimit e2e-rl-status\/web/);
      assert.equal(await filterOf(env, "web-2"), undefined);
      // Give it a few passes: the older filter stays as it was.
      await new Promise((r) => setTimeout(r, 3_000));
      assert.equal((await filterOf(env, "web"))?.metadata.resourceVersion, filterRv);
    },
  );

  await env.step(
    t,
    "deleting the RateLimit removes its filter; the newer one takes over",
    async () => {
      await env.kube.delete("ratelimit", ["web"], NS);
      await waitFor(
        "EnvoyFilter web to be gone",
        async () => (await filterOf(env, "web")) === undefined,
        {
          timeoutMs: 90_000,
        },
      );
      await waitFigures(env, "web-2", "Ready", "Enforced", {
        enforcedGeneration: 1,
        podsSelected: 2,
      });
    },
  );

  await env.step(t, "an invalid create applies nothing", async () => {
    const bad = { ...limit("bad", [{ path: "/x", fillInterval: "15s" }]) };
    bad.spec = { ...(bad.spec as object), selectorLabels: { app: "other" } };
    await env.kube.apply([bad]);
    const rl = await waitFigures(env, "bad", "Error", "NotApplied", {});
    assert.equal((statusOf(rl) as Figures).enforcedGeneration, undefined);
    assert.match(conditionOf(rl, "Ready")?.message ?? "", /^Invalid spec, limit not applied: /);
    assert.equal(await filterOf(env, "bad"), undefined);
  });

  await env.step(t, "the gateway case counts the ingress gateway's Pods", async () => {
    const gw: KubeObject = {
      apiVersion: GATEWAY_API,
      kind: "RateLimit",
      metadata: { name: "gateway", namespace: "mesh-system" },
      spec: {
        selectorLabels: { app: "mesh-ingressgateway" },
        local: { defaultBucket: bucket(100, 100, "1m") },
      },
    };
    await env.kube.apply([gw]);
    const rl = await waitFigures(env, "gateway", "Ready", "Enforced", {
      podsSelected: 1,
      podsWithSidecar: 1,
    }, "mesh-system");
    assert.match(conditionOf(rl, "Enforced")?.message ?? "", /ingress gateway Pod/);
  });

  await env.step(
    t,
    "in the mesh's root namespace, a limit reaching a workload is refused",
    async () => {
      // mesh-system is the local mesh's root namespace (--mesh-root-namespace): a filter there
      // would reach app=web in every namespace, so nothing is applied.
      const everyone: KubeObject = {
        apiVersion: GATEWAY_API,
        kind: "RateLimit",
        metadata: { name: "everyone", namespace: "mesh-system" },
        spec: { selectorLabels: { app: "web" }, local: { defaultBucket: bucket(1, 1, "1m") } },
      };
      await env.kube.apply([everyone]);
      const rl = await waitFigures(env, "everyone", "Error", "NotApplied", {}, "mesh-system");
      const ready = conditionOf(rl, "Ready");
      assert.equal(ready?.reason, "MeshWide");
      assert.match(ready?.message ?? "", new RegExp(`not ingress gateways \\(${NS}/stable-`));
      assert.equal(await filterOf(env, "everyone", "mesh-system"), undefined);
      // The team's own limit on those Pods is not blocked by it.
      assert.equal(statusOf(await env.kube.get("ratelimit", "web-2", NS))?.state, "Ready");
      await env.kube.must(["delete", "ratelimit", "everyone", "-n", "mesh-system", "--wait"]);
    },
  );

  await env.step(t, "at rest: 20 s without a write by the operator", async () => {
    await assertNoWritesAtRest(env, 20_000);
  });

  await env.step(
    t,
    "/metrics beyond loopback: 401 without a token the API server knows, 403 unbound, 200 bound to the metrics reader role",
    async () => {
      await env.stopOperators();
      const port = freePort();
      const from = Date.now();
      await env.startServing({
        identity: "rl-metrics",
        extraArgs: [`--metrics-addr=0.0.0.0:${port}`],
      });
      for (const sa of ["metrics-scraper", "metrics-unbound"]) {
        await env.kube.must(["create", "serviceaccount", sa, "-n", NS]);
      }
      await env.kube.must([
        "create",
        "clusterrolebinding",
        "e2e-metrics-scraper",
        `--clusterrole=${DEFAULT_RBAC_NAMES.metricsReader}`,
        `--serviceaccount=${NS}:metrics-scraper`,
      ]);
      const token = async (sa: string) =>
        (await env.kube.must(["create", "token", sa, "-n", NS])).trim();
      assert.equal((await scrapeHttps("127.0.0.1", port)).status, 401);
      assert.equal((await scrapeHttps("127.0.0.1", port, "forged")).status, 401);
      const unbound = await scrapeHttps("127.0.0.1", port, await token("metrics-unbound"));
      assert.deepEqual([unbound.status, unbound.body.trim()], [
        403,
        `Authorization denied for user system:serviceaccount:${NS}:metrics-unbound`,
      ]);
      const ok = await scrapeHttps("127.0.0.1", port, await token("metrics-scraper"));
      assert.equal(ok.status, 200, ok.body);
      assert.match(ok.body, /^platform_operator_api_requests_total\{/m);
      // Asked by the operator's ServiceAccount, which deploy/rbac.yaml lets create both reviews.
      const reviews = (await env.cluster.writes({ user: USER, sinceMs: from }))
        .map((w) => w.objectRef?.resource)
        .filter((r) => r === "tokenreviews" || r === "subjectaccessreviews");
      assert.ok(
        reviews.includes("tokenreviews") && reviews.includes("subjectaccessreviews"),
        String(reviews),
      );
    },
  );
});
