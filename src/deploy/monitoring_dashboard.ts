/**
 * The Grafana dashboard of deploy/monitoring/: the operator (up, leader, reconciles, queue, memory,
 * objects by state, RateLimits not enforced) and Envoy's local rate limit per workload. Envoy
 * counts, under the `stat_prefix` our EnvoyFilter sets (`http_local_rate_limiter`, see
 * src/reconcile/ratelimit/render.ts), `<prefix>.http_local_rate_limit.{enabled, ok,
 * rate_limited, enforced}`: `ok` admitted, `enforced` rejected with 429, and `rate_limited`
 * over the limit whether enforced or not, so `rate_limited - enforced` is what a shadow
 * (not enforced) limit would have rejected. Istio shows them only when the proxy's stats
 * inclusion names them (docs/operations.md#envoys-rate-limit-stats). The global panels show the
 * rate limit engine as the operator reads it back (its Pods' readiness and Redis, the domains each
 * holds, the RateLimits by GlobalEnforced) and as it counts itself (its own Prometheus metrics:
 * answers within and over the limit per domain, its answer time).
 */
import { STAT_PREFIX } from "../reconcile/ratelimit/render.ts";
import { ENGINE_METRICS_JOB, METRICS_JOB } from "./monitoring_rules.ts";

/** Envoy's Prometheus name of one local rate limit counter of our filters. */
export function envoyStat(name: "ok" | "enforced" | "rate_limited" | "enabled"): string {
  return `envoy_${STAT_PREFIX}_http_local_rate_limit_${name}`;
}

/** One panel: its title, kind and PromQL queries (legend per query). */
export interface Panel {
  title: string;
  type: "timeseries" | "stat" | "table";
  targets: { expr: string; legendFormat: string }[];
}

const job = `job="${METRICS_JOB}"`;
const engineJob = `job="${ENGINE_METRICS_JOB}"`;
/** Workload of an Envoy series: the Pod's namespace and `app` label, as Istio's scrape gives. */
const WORKLOAD = "namespace, app";

/** Every panel of the dashboard, in order. */
export function dashboardPanels(): Panel[] {
  const p = (title: string, type: Panel["type"], ...targets: [string, string][]): Panel => ({
    title,
    type,
    targets: targets.map(([expr, legendFormat]) => ({ expr, legendFormat })),
  });
  const envoy = (name: Parameters<typeof envoyStat>[0]) =>
    `sum by (${WORKLOAD}) (rate(${envoyStat(name)}[5m]))`;
  return [
    p("Replicas up", "stat", [`sum(up{${job}})`, "up"]),
    p("Leader", "stat", [`max(platform_operator_leader{${job}})`, "leading"]),
    p("Reconciles by result", "timeseries", [
      `sum by (controller, result) (rate(platform_operator_reconcile_total{${job}}[5m]))`,
      "{{controller}} {{result}}",
    ]),
    p("Reconcile errors", "timeseries", [
      `sum by (controller) (rate(platform_operator_reconcile_errors_total{${job}}[5m]))`,
      "{{controller}}",
    ]),
    p("Reconcile duration p99", "timeseries", [
      `histogram_quantile(0.99, sum by (controller, le) (rate(platform_operator_reconcile_duration_seconds_bucket{${job}}[5m])))`,
      "{{controller}}",
    ]),
    p("Queue depth", "timeseries", [
      `max by (controller) (platform_operator_queue_depth{${job}})`,
      "{{controller}}",
    ]),
    p("Objects by state", "timeseries", [
      `max by (kind, state) (platform_operator_objects{${job}})`,
      "{{kind}} {{state}}",
    ]),
    p("RateLimits by Enforced", "timeseries", [
      `max by (status, reason) (platform_operator_ratelimits_enforced{${job}})`,
      "{{status}} {{reason}}",
    ]),
    p("RateLimit conditions not True", "table", [
      `max by (namespace, name, condition, reason) (platform_operator_ratelimit_unmet{${job}})`,
      "{{namespace}}/{{name}} {{condition}} {{reason}}",
    ]),
    p("Module objects", "table", [
      `max by (kind, namespace, name, state, served) (platform_operator_module{${job}})`,
      "{{kind}} {{namespace}}/{{name}}",
    ]),
    p("Memory", "timeseries", [
      `max by (pod, kind) (platform_operator_memory_bytes{${job}})`,
      "{{pod}} {{kind}}",
    ]),
    p("Global: engine Pods by readiness and Redis", "timeseries", [
      `max by (ready, redis) (platform_operator_engine_pods{${job}})`,
      "Ready {{ready}}, Redis {{redis}}",
    ]),
    p(
      "Global: domains each engine Pod holds, and RateLimits with a global part",
      "timeseries",
      [`max by (pod) (platform_operator_engine_domains_loaded{${job}})`, "{{pod}}"],
      [
        `sum(max by (status, reason) (platform_operator_ratelimits_global_enforced{${job}}))`,
        "RateLimits with spec.global",
      ],
    ),
    p("Global: RateLimits by GlobalEnforced", "timeseries", [
      `max by (status, reason) (platform_operator_ratelimits_global_enforced{${job}})`,
      "{{status}} {{reason}}",
    ]),
    p(
      "Global: engine answers within and over the limit / s, by domain",
      "timeseries",
      [
        `sum by (domain) (rate(ratelimit_service_rate_limit_within_limit{${engineJob}}[5m]))`,
        "{{domain}} within",
      ],
      [
        `sum by (domain) (rate(ratelimit_service_rate_limit_over_limit{${engineJob}}[5m]))`,
        "{{domain}} over",
      ],
    ),
    p("Global: engine answer time p99", "timeseries", [
      `histogram_quantile(0.99, sum by (le) (rate(ratelimit_service_response_time_seconds_bucket{${engineJob}}[5m])))`,
      "p99",
    ]),
    p("Envoy: admitted requests / s", "timeseries", [envoy("ok"), "{{namespace}}/{{app}}"]),
    p("Envoy: rejected (429) / s", "timeseries", [envoy("enforced"), "{{namespace}}/{{app}}"]),
    p("Envoy: over the limit, not enforced (shadow) / s", "timeseries", [
      `${envoy("rate_limited")} - ${envoy("enforced")}`,
      "{{namespace}}/{{app}}",
    ]),
  ];
}

/** The Grafana dashboard model (schema 39) of {@link dashboardPanels}, two panels a row. */
export function dashboard(): Record<string, unknown> {
  return {
    uid: "platform-operator",
    title: "Platform operator",
    tags: ["platform-operator"],
    schemaVersion: 39,
    time: { from: "now-6h", to: "now" },
    refresh: "30s",
    templating: {
      list: [{ name: "datasource", type: "datasource", query: "prometheus", label: "Data source" }],
    },
    panels: dashboardPanels().map((panel, i) => ({
      id: i + 1,
      title: panel.title,
      type: panel.type,
      datasource: { type: "prometheus", uid: "${datasource}" },
      gridPos: { h: 8, w: 12, x: (i % 2) * 12, y: Math.floor(i / 2) * 8 },
      targets: panel.targets.map((t, j) => ({
        refId: String.fromCharCode(65 + j),
        expr: t.expr,
        legendFormat: t.legendFormat,
      })),
    })),
  };
}
