/**
 * The alert rules of deploy/monitoring/prometheusrule.yaml, checked by Prometheus's own promtool
 * (built from its Go module by `deno task build --only=promtool`): `promtool check rules` on the
 * installed file, and `promtool test rules` with a case for every alert that shows it firing with
 * its labels and annotations after its `for:`, and not before, nor for a healthy series.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import {
  type AlertRule,
  alertRules,
  ENGINE_METRICS_JOB,
  METRICS_JOB,
} from "../../src/deploy/monitoring_rules.ts";
import { dashboardPanels } from "../../src/deploy/monitoring_dashboard.ts";
import { ensurePromtool } from "../../tools/prometheus/build.ts";
import { monitoringObjects } from "../../src/deploy/monitoring_objects.ts";
import { DEFAULT_ENGINE_RESOURCES, reconcileEngine } from "../../src/reconcile/engine/mod.ts";
import { GLOBAL_ENGINE_SERVICE } from "../../src/api/global_engine.ts";
import type { KubeObject } from "../../src/api/object.ts";

/** A case: input series, when the alert must not have fired yet, when it must fire, and with what. */
interface AlertCase {
  series: { series: string; values: string }[];
  quietAt: string;
  firesAt: string;
  labels: Record<string, string>;
  /** A series that must not make it fire at all. */
  healthy?: { series: string; values: string }[];
}

const j = `job="${METRICS_JOB}"`;
const RL = `namespace="demo",name="httpbin"`;
const e = `job="${ENGINE_METRICS_JOB}"`;
/** The engine Pods an operator replica reads, by readiness and Redis. */
const pods = (instance: string, ready: string, redis: string, values: string) => ({
  series:
    `platform_operator_engine_pods{${j},instance="${instance}",ready="${ready}",redis="${redis}"}`,
  values,
});
/** The engine's answer time histogram: `fast` answers under 5 ms and `slow` ones 25-100 ms a minute. */
const answers = (fast: number, slow: number) =>
  [["0.005", fast], ["0.025", fast], ["0.1", fast + slow], ["+Inf", fast + slow]].map((
    [le, n],
  ) => ({
    series:
      `ratelimit_service_response_time_seconds_bucket{${e},instance="10.0.0.1:9090",grpc_method="ShouldRateLimit",le="${le}"}`,
    values: `0+${n}x40`,
  }));

const CASES: Record<string, AlertCase> = {
  PlatformOperatorDown: {
    series: [{ series: `up{${j},instance="a"}`, values: "0x30" }],
    quietAt: "4m",
    firesAt: "6m",
    // absent() of a comparison keeps no label.
    labels: {},
    healthy: [{ series: `up{${j},instance="a"}`, values: "1x30" }],
  },
  PlatformOperatorNotLeading: {
    series: [
      { series: `platform_operator_leader{${j},instance="a"}`, values: "0x30" },
      { series: `platform_operator_leader{${j},instance="b"}`, values: "0x30" },
    ],
    quietAt: "4m",
    firesAt: "6m",
    labels: {},
    healthy: [
      { series: `platform_operator_leader{${j},instance="a"}`, values: "0x30" },
      { series: `platform_operator_leader{${j},instance="b"}`, values: "1x30" },
    ],
  },
  PlatformOperatorControllerWaiting: {
    // The leader (a) waits for the scaler controller's lists; the standby (b) has no term.
    series: [
      {
        series: `platform_operator_controller_waiting{${j},instance="a",controller="scaler"}`,
        values: "1x30",
      },
      {
        series: `platform_operator_controller_waiting{${j},instance="b",controller="scaler"}`,
        values: "0x30",
      },
    ],
    quietAt: "4m",
    firesAt: "6m",
    labels: { controller: "scaler" },
    healthy: [
      {
        series: `platform_operator_controller_waiting{${j},instance="a",controller="scaler"}`,
        values: "1 1 0x28",
      },
      {
        series: `platform_operator_controller_waiting{${j},instance="a",controller="ratelimit"}`,
        values: "0x30",
      },
    ],
  },
  PlatformOperatorOOMKilled: {
    // Killed 5 minutes in (the restarted replica sets the kill's time): fires at once, for an hour.
    series: [{
      series: `platform_operator_last_oom_kill_timestamp_seconds{${j},instance="a",pod="op-a"}`,
      values: "0x4 300x30",
    }],
    quietAt: "4m",
    firesAt: "6m",
    labels: { pod: "op-a" },
    healthy: [{
      series: `platform_operator_last_oom_kill_timestamp_seconds{${j},instance="a",pod="op-a"}`,
      values: "0x30",
    }],
  },
  PlatformOperatorReconcileErrors: {
    series: [{
      series: `platform_operator_reconcile_errors_total{${j},instance="a",controller="ratelimit"}`,
      values: "0+2x30",
    }],
    quietAt: "14m",
    firesAt: "21m",
    labels: { controller: "ratelimit" },
    healthy: [{
      series: `platform_operator_reconcile_errors_total{${j},instance="a",controller="ratelimit"}`,
      values: "3x30",
    }],
  },
  PlatformOperatorModuleError: {
    series: [{
      series:
        `platform_operator_module{${j},instance="a",kind="Scaler",namespace="platform-system",name="default",served="True",state="Error"}`,
      values: "1x30",
    }],
    quietAt: "9m",
    firesAt: "11m",
    labels: { kind: "Scaler", namespace: "platform-system", name: "default" },
    // A duplicate is in Error by design; only the served one alerts.
    healthy: [{
      series:
        `platform_operator_module{${j},instance="a",kind="Scaler",namespace="x",name="dup",served="False",state="Error"}`,
      values: "1x30",
    }],
  },
  PlatformOperatorRateLimitNotEnforced: {
    series: [{
      series:
        `platform_operator_ratelimit_unmet{${j},instance="a",${RL},condition="Enforced",status="False",reason="SidecarMissing"}`,
      values: "1x30",
    }],
    quietAt: "9m",
    firesAt: "11m",
    labels: { namespace: "demo", name: "httpbin", reason: "SidecarMissing" },
    // Fixed after 5 minutes: the series goes away and nothing fires.
    healthy: [{
      series:
        `platform_operator_ratelimit_unmet{${j},instance="a",${RL},condition="Enforced",status="False",reason="SidecarMissing"}`,
      values: "1x5 _x25",
    }],
  },
  PlatformOperatorRateLimitProxyRejected: {
    series: [{
      series:
        `platform_operator_ratelimit_unmet{${j},instance="a",${RL},condition="Accepted",status="False",reason="ProxyRejected"}`,
      values: "1x30",
    }],
    quietAt: "9m",
    firesAt: "11m",
    labels: { namespace: "demo", name: "httpbin", reason: "ProxyRejected" },
    // Another condition unmet is not a rejection.
    healthy: [{
      series:
        `platform_operator_ratelimit_unmet{${j},instance="a",${RL},condition="Enforced",status="False",reason="SidecarMissing"}`,
      values: "1x30",
    }],
  },
  PlatformOperatorRateLimitEngineDown: {
    // Two replicas read the same two Pods, neither Ready (Redis lost).
    series: [
      pods("a", "true", "Reachable", "0x30"),
      pods("a", "false", "Unreachable", "2x30"),
      pods("b", "true", "Reachable", "0x30"),
      pods("b", "false", "Unreachable", "2x30"),
    ],
    quietAt: "4m",
    firesAt: "6m",
    labels: {},
    // One replica sees a Ready Pod (the other cannot read them yet): the engine is up.
    healthy: [pods("a", "true", "Reachable", "0x30"), pods("b", "true", "Reachable", "1x30")],
  },
  PlatformOperatorRateLimitEngineRedisUnreachable: {
    series: [pods("a", "true", "Unreachable", "1x30"), pods("a", "true", "Reachable", "1x30")],
    quietAt: "4m",
    firesAt: "6m",
    labels: {},
    // Back after 3 minutes.
    healthy: [pods("a", "true", "Unreachable", "1x3 0x27"), pods("a", "true", "Reachable", "1x30")],
  },
  PlatformOperatorRateLimitDomainNotLoaded: {
    series: [{
      series:
        `platform_operator_ratelimit_unmet{${j},instance="a",${RL},condition="GlobalEnforced",status="False",reason="DomainNotLoaded"}`,
      values: "1x30",
    }],
    quietAt: "9m",
    firesAt: "11m",
    labels: { namespace: "demo", name: "httpbin" },
    // The engine down is another alert's.
    healthy: [{
      series:
        `platform_operator_ratelimit_unmet{${j},instance="a",${RL},condition="GlobalEnforced",status="False",reason="EngineNotReady"}`,
      values: "1x30",
    }],
  },
  PlatformOperatorRateLimitEngineSlow: {
    // 10 of 100 answers a minute take 25-100 ms: the 99th percentile is about 92 ms.
    series: answers(90, 10),
    quietAt: "14m",
    firesAt: "21m",
    labels: {},
    // One in a thousand slow: the 99th percentile stays under 5 ms.
    healthy: answers(999, 1),
  },
  PlatformOperatorRateLimitGlobalOverLimit: {
    series: [{
      series:
        `ratelimit_service_rate_limit_over_limit{${e},instance="10.0.0.1:9090",domain="demo/httpbin",key1="rule_0"}`,
      values: "0+5x30",
    }],
    quietAt: "9m",
    firesAt: "11m",
    labels: { domain: "demo/httpbin" },
    // Over the limit once, then no more.
    healthy: [{
      series:
        `ratelimit_service_rate_limit_over_limit{${e},instance="10.0.0.1:9090",domain="demo/httpbin",key1="rule_0"}`,
      values: "3x30",
    }],
  },
  PlatformOperatorRateLimitRefused: {
    series: [{
      series:
        `platform_operator_ratelimit_unmet{${j},instance="a",${RL},condition="Ready",status="False",reason="InvalidSpec"}`,
      values: "1x30",
    }],
    quietAt: "9m",
    firesAt: "11m",
    labels: { namespace: "demo", name: "httpbin", reason: "InvalidSpec" },
    healthy: [{
      series:
        `platform_operator_ratelimit_unmet{${j},instance="a",${RL},condition="Enforced",status="False",reason="NoPodSelected"}`,
      values: "1x30",
    }],
  },
};

/** An annotation as Prometheus expands it for `labels` (the rules use `{{ $labels.x }}` only). */
function expand(text: string, labels: Record<string, string>): string {
  return text.replace(/\{\{ \$labels\.(\w+) \}\}/g, (_, l: string) => labels[l] ?? "");
}

/** The promtool unit tests of `rules`, from CASES. */
function promtoolTests(rules: AlertRule[], ruleFile: string): unknown {
  return {
    rule_files: [ruleFile],
    evaluation_interval: "1m",
    tests: rules.flatMap((rule) => {
      const c = CASES[rule.alert];
      const labels = { ...rule.labels, ...c.labels };
      const fired = {
        interval: "1m",
        input_series: c.series,
        alert_rule_test: [
          { eval_time: c.quietAt, alertname: rule.alert, exp_alerts: [] },
          {
            eval_time: c.firesAt,
            alertname: rule.alert,
            exp_alerts: [{
              exp_labels: labels,
              exp_annotations: {
                summary: expand(rule.annotations.summary, labels),
                description: expand(rule.annotations.description, labels),
              },
            }],
          },
        ],
      };
      const healthy = c.healthy && {
        interval: "1m",
        input_series: c.healthy,
        alert_rule_test: [{ eval_time: "29m", alertname: rule.alert, exp_alerts: [] }],
      };
      return healthy ? [fired, healthy] : [fired];
    }),
  };
}

async function promtool(args: string[], cwd: string): Promise<{ ok: boolean; out: string }> {
  const out = await new Deno.Command(await ensurePromtool(), { args, cwd }).output();
  const dec = new TextDecoder();
  return { ok: out.success, out: dec.decode(out.stdout) + dec.decode(out.stderr) };
}

/** The installed PrometheusRule's `spec`, as a rule file promtool reads. */
async function installedRules(dir: string): Promise<string> {
  const rule = parse(await Deno.readTextFile("deploy/monitoring/prometheusrule.yaml"));
  assert.equal(rule.kind, "PrometheusRule");
  const path = join(dir, "rules.yaml");
  await Deno.writeTextFile(path, stringify(rule.spec));
  return path;
}

Deno.test("promtool checks deploy/monitoring's rules and every alert's unit test passes", async () => {
  const dir = await Deno.makeTempDir({ prefix: "promtool-" });
  try {
    await installedRules(dir);
    const check = await promtool(["check", "rules", "rules.yaml"], dir);
    assert.ok(check.ok, check.out);
    assert.match(check.out, /SUCCESS: 14 rules found/);
    const rules = alertRules();
    assert.deepEqual(Object.keys(CASES).sort(), rules.map((r) => r.alert).sort(), "a case each");
    await Deno.writeTextFile(
      join(dir, "tests.yaml"),
      stringify(promtoolTests(rules, "rules.yaml")),
    );
    const test = await promtool(["test", "rules", "tests.yaml"], dir);
    assert.ok(test.ok, test.out);
    assert.match(test.out, /SUCCESS/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the unit tests fail against broken rules: a `for:` of 1m, an alert that ignores `served`, the engine or a waiting controller judged by the replica that sees least, any GlobalEnforced reason taken for a domain not loaded", async () => {
  const dir = await Deno.makeTempDir({ prefix: "promtool-" });
  try {
    const rules = alertRules();
    const broken = structuredClone(rules);
    const at = (alert: string) => broken.findIndex((r) => r.alert === alert);
    broken[at("PlatformOperatorRateLimitNotEnforced")].for = "1m";
    const module = at("PlatformOperatorModuleError");
    broken[module].expr = broken[module].expr.replace(`served="True",`, "");
    // Judged by the replica that sees least: the standby, which has no term, hides the leader.
    const waiting = at("PlatformOperatorControllerWaiting");
    broken[waiting].expr = broken[waiting].expr.replace(/^max by/, "min by");
    const down = at("PlatformOperatorRateLimitEngineDown");
    broken[down].expr = broken[down].expr.replace(/^max\(/, "min(");
    const domain = at("PlatformOperatorRateLimitDomainNotLoaded");
    broken[domain].expr = broken[domain].expr.replace(`,reason="DomainNotLoaded"`, "");
    await Deno.writeTextFile(
      join(dir, "rules.yaml"),
      stringify({ groups: [{ name: "platform-operator", rules: broken }] }),
    );
    await Deno.writeTextFile(
      join(dir, "tests.yaml"),
      stringify(promtoolTests(rules, "rules.yaml")),
    );
    const test = await promtool(["test", "rules", "tests.yaml"], dir);
    assert.equal(test.ok, false, test.out);
    assert.match(test.out, /PlatformOperatorRateLimitNotEnforced/);
    assert.match(test.out, /PlatformOperatorModuleError/);
    assert.match(test.out, /PlatformOperatorRateLimitEngineDown/);
    assert.match(test.out, /PlatformOperatorRateLimitDomainNotLoaded/);
    assert.match(test.out, /PlatformOperatorControllerWaiting/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("every query of the dashboard is PromQL promtool accepts", async () => {
  const dir = await Deno.makeTempDir({ prefix: "promtool-" });
  try {
    const panels = dashboardPanels();
    const rules = panels.flatMap((p, i) =>
      p.targets.map((t, j) => ({ record: `dashboard:panel${i}:${j}`, expr: t.expr }))
    );
    await Deno.writeTextFile(
      join(dir, "dashboard.yaml"),
      stringify({ groups: [{ name: "dashboard", rules }] }),
    );
    const check = await promtool(["check", "rules", "dashboard.yaml"], dir);
    assert.ok(check.ok, check.out);
    assert.match(check.out, new RegExp(`SUCCESS: ${rules.length} rules found`));
    // The Envoy panels read the stats our EnvoyFilter's stat_prefix produces.
    const envoy = panels.filter((p) => p.title.startsWith("Envoy")).map((p) => p.targets[0].expr);
    assert.equal(envoy.length, 3);
    for (const e of envoy) assert.match(e, /envoy_http_local_rate_limiter_http_local_rate_limit_/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("every job the alerts select is scraped: a ServiceMonitor selects a Service of that name", async () => {
  const monitors = monitoringObjects().filter((o) => o.kind === "ServiceMonitor") as (KubeObject & {
    spec: {
      namespaceSelector?: { matchNames: string[] };
      selector: { matchLabels: Record<string, string> };
      endpoints: { port: string }[];
    };
  })[];
  // The Services the jobs are named after (prometheus-operator's job label is the Service's name).
  const engine = reconcileEngine({
    settings: {
      secret: { namespace: GLOBAL_ENGINE_SERVICE.namespace, name: "redis" },
      image: "engine:test",
      replicas: 2,
      resources: DEFAULT_ENGINE_RESOURCES,
      operatorNamespace: "platform-system",
    },
    secret: {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "redis", namespace: GLOBAL_ENGINE_SERVICE.namespace, uid: "u" },
      data: { address: btoa("redis:6379") },
    },
    observed: [],
  }).apply.find((o) => o.kind === "Service")!;
  const operator = parse(await Deno.readTextFile("deploy/base/service.yaml")) as KubeObject;
  const services = [operator, engine] as (KubeObject & {
    spec: { ports: { name: string }[] };
  })[];
  for (const job of [METRICS_JOB, ENGINE_METRICS_JOB]) {
    const svc = services.find((s) => s.metadata.name === job);
    assert.ok(svc, `no Service named ${job}`);
    const scraped = monitors.some((m) =>
      (m.spec.namespaceSelector?.matchNames ?? [m.metadata.namespace]).includes(
        svc.metadata.namespace!,
      ) &&
      Object.entries(m.spec.selector.matchLabels).every(([k, v]) =>
        svc.metadata.labels?.[k] === v
      ) &&
      m.spec.endpoints.every((ep) => svc.spec.ports.some((p) => p.name === ep.port))
    );
    assert.ok(scraped, `no ServiceMonitor scrapes Service ${job}: the alerts on it never fire`);
  }
});
