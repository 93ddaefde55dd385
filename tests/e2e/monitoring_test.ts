/**
 * E2E of deploy/monitoring's alerts and dashboard against a real Prometheus (built from its Go
 * module, tools/prometheus/) scraping the operator on the local control plane over plain HTTP on
 * loopback (docs/operations.md, Transport). The rules are the generated ones (alertRules) rendered
 * with SHORT `for:` durations (5 s instead of 10 minutes; the expressions are the installed ones),
 * so the test can show `PlatformOperatorRateLimitNotEnforced` firing for a RateLimit whose Pod has
 * no sidecar and clearing once the workload gets one. Then every query of the generated dashboard
 * runs against that Prometheus: the operator's panels return series; the Envoy panels are valid
 * queries that return none, as no Envoy runs here. A Prometheus that cannot start fails the test
 * with what to fix (tests/deploy/prometheus_server_test.ts), never skips it.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { KubeObject } from "../../src/api/object.ts";
import {
  type AlertDurations,
  ENGINE_METRICS_JOB,
  METRICS_JOB,
  ruleGroups,
} from "../../src/deploy/monitoring_rules.ts";
import { dashboardPanels, envoyStat } from "../../src/deploy/monitoring_dashboard.ts";
import { ensurePrometheus } from "../../tools/prometheus/build.ts";
import { type Alert, Prometheus } from "../../tools/prometheus/server.ts";
import { e2eSuite, waitFor } from "./harness.ts";
import { bucket, GATEWAY_API, meshDeployment, namespace, serverless } from "./fixtures.ts";
import { conditionOf } from "./status.ts";

const NS = "e2e-monitoring";
/** A namespace where a quota refuses EnvoyFilters: its RateLimit's reconciles fail. */
const QUOTA_NS = "e2e-monitoring-quota";
/** Short `for:` durations: the installed rules wait 5 to 15 minutes. */
const SHORT: AlertDurations = { down: "5s", objects: "5s", errors: "5s" };
const NOT_ENFORCED = "PlatformOperatorRateLimitNotEnforced";

function limit(ns: string, app: string): KubeObject {
  return {
    apiVersion: GATEWAY_API,
    kind: "RateLimit",
    metadata: { name: app, namespace: ns },
    spec: { selectorLabels: { app }, local: { defaultBucket: bucket(10, 10, "10s") } },
  };
}

const quota: KubeObject = {
  apiVersion: "v1",
  kind: "ResourceQuota",
  metadata: { name: "no-envoyfilters", namespace: QUOTA_NS },
  spec: { hard: { "count/envoyfilters.networking.istio.io": "0" } },
};

const notEnforced = (alerts: Alert[]) =>
  alerts.filter((a) => a.labels.alertname === NOT_ENFORCED && a.labels.name === "shop");

e2eSuite("monitoring", async (env, t) => {
  let prom: Prometheus | undefined;
  const ready = await env.step(t, "CRDs, the operator, and Prometheus scraping it", async () => {
    await env.installCrds();
    const op = await env.startServing({ identity: "monitoring" });
    await env.kube.apply([namespace(NS), namespace(QUOTA_NS), namespace("platform-system")]);
    prom = await Prometheus.start({
      binary: await ensurePrometheus((m) => console.error(`[monitoring] ${m}`)),
      dir: join(env.dir, "prometheus"),
      job: METRICS_JOB,
      targets: [op.metricsAddr],
      rules: ruleGroups(SHORT),
    });
    await waitFor("Prometheus to scrape the operator (up == 1)", async () => {
      const up = await prom!.query(`up{job="${METRICS_JOB}"}`);
      return up.length === 1 && up[0].value[1] === "1";
    });
  });
  if (!ready || !prom) return;
  const p = prom;
  try {
    await env.step(t, "a RateLimit whose Pod has no sidecar: the alert fires", async () => {
      await env.kube.apply([meshDeployment(NS, "shop-plain", { app: "shop" }, 1, false)]);
      await env.kube.apply([limit(NS, "shop")]);
      await env.waitStatus("ratelimit", NS, "shop", {
        conditions: [{ type: "Enforced", status: "False", reason: "SidecarMissing" }],
      });
      const firing = await waitFor(`${NOT_ENFORCED} firing for ${NS}/shop`, async () => {
        const a = notEnforced(await p.alerts()).find((a) => a.state === "firing");
        return a;
      }, { timeoutMs: 60_000, describe: async () => JSON.stringify(await p.alerts()) });
      assert.deepEqual(
        { ...firing.labels },
        {
          alertname: NOT_ENFORCED,
          namespace: NS,
          name: "shop",
          reason: "SidecarMissing",
          severity: "warning",
        },
      );
      assert.match(
        firing.annotations.description,
        /not been True for 5s \(reason SidecarMissing\)/,
      );
    });

    await env.step(
      t,
      "every query of the dashboard runs; the operator's return series",
      async () => {
        // Series for the panels that need them: a module object, and failing reconciles (the
        // quota refuses the EnvoyFilter of the RateLimit in QUOTA_NS).
        await env.kube.apply([quota]);
        // A RateLimit with a global part (refused by the quota too): GlobalEnforced gives the
        // global panels' RateLimit series; no engine runs here (no --global-redis-secret).
        const global = limit(QUOTA_NS, "global");
        (global.spec as Record<string, unknown>).global = {
          default: { limit: { requests: 10, unit: "Minute" } },
        };
        await env.kube.apply([
          limit(QUOTA_NS, "refused"),
          global,
          serverless("platform-system", "default"),
        ]);
        const envoy = new Set(
          (["ok", "enforced", "rate_limited", "enabled"] as const).map((n) => envoyStat(n)),
        );
        for (const panel of dashboardPanels()) {
          for (const { expr } of panel.targets) {
            const isEnvoy = [...envoy].some((s) => expr.includes(s));
            // Read from the engine, or the engine's own: none runs here.
            const isEngine = expr.includes("platform_operator_engine_") ||
              expr.includes(`job="${ENGINE_METRICS_JOB}"`);
            if (isEnvoy || isEngine) {
              // No Envoy runs here: a valid query (query() throws on a parse error) with no series.
              assert.deepEqual(await p.query(expr), [], `${panel.title}: ${expr}`);
              continue;
            }
            const series = await waitFor(`series for "${panel.title}": ${expr}`, async () => {
              const r = await p.query(expr);
              return r.length > 0 ? r : undefined;
            }, { timeoutMs: 90_000 });
            console.error(`[monitoring] ${panel.title}: ${series.length} series`);
          }
        }
      },
    );

    await env.step(t, "the workload gets its sidecar: Enforced, the alert clears", async () => {
      await env.kube.delete("deployment", ["shop-plain"], NS);
      await env.kube.apply([meshDeployment(NS, "shop-mesh", { app: "shop" }, 1, true)]);
      const rl = await env.waitStatus("ratelimit", NS, "shop", {
        conditions: [{ type: "Enforced", status: "True", reason: "Enforced" }],
      });
      // Its Pod names no stats inclusion: the message says the dashboard's Envoy panels stay empty.
      assert.match(
        conditionOf(rl, "Enforced")?.message ?? "",
        /its proxy does not export Envoy's rate limit stats \(http_local_rate_limiter\)/,
      );
      await waitFor(`${NOT_ENFORCED} for ${NS}/shop to clear`, async () => {
        return notEnforced(await p.alerts()).length === 0;
      }, { timeoutMs: 60_000, describe: async () => JSON.stringify(await p.alerts()) });
      const alerts = await p.query(`ALERTS{alertname="${NOT_ENFORCED}",name="shop"}`);
      assert.deepEqual(alerts, []);
    });
  } finally {
    await p.stop();
  }
});
