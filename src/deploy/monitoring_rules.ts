/**
 * The alerts on the operator, as Prometheus rule groups: deploy/monitoring/ wraps them in a
 * PrometheusRule, the Helm chart renders the same object, promtool checks them and runs their
 * unit tests (tests/deploy/monitoring_rules_test.ts). `for:` durations are a parameter so that a
 * test can run the same expressions with short ones; the installed rules use the defaults.
 */
import { GLOBAL_ENGINE_SERVICE, GLOBAL_ENGINE_TIMEOUT } from "../api/global_engine.ts";

/** The `job` label Prometheus gives the operator's targets: the metrics Service's name. */
export const METRICS_JOB = "platform-operator-metrics";

/**
 * The `job` label Prometheus gives the global rate limit engine's targets: its Service's name
 * (monitoring_objects.ts scrapes its `http-metrics` port).
 */
export const ENGINE_METRICS_JOB = GLOBAL_ENGINE_SERVICE.name;

/**
 * The engine's answer time above which it is slow: half the proxies' deadline for its answer
 * (GLOBAL_ENGINE_TIMEOUT), past which the failure mode applies.
 */
export const ENGINE_SLOW_SECONDS = seconds(GLOBAL_ENGINE_TIMEOUT) / 2;

/** One alerting rule. */
export interface AlertRule {
  alert: string;
  expr: string;
  for: string;
  labels: { severity: "critical" | "warning" };
  annotations: { summary: string; description: string };
}

/** `0.1s` as seconds. */
function seconds(duration: string): number {
  return Number(duration.replace(/s$/, ""));
}

/** How long each kind of problem must last before its alert fires. */
export interface AlertDurations {
  /** The operator down or not leading. */
  down: string;
  /** A module in Error, a RateLimit not enforced or refused. */
  objects: string;
  /** Reconciles failing. */
  errors: string;
}

/** What the installed rules wait: 10 minutes for an object, as issue #27 asks. */
export const DEFAULT_DURATIONS: AlertDurations = { down: "5m", objects: "10m", errors: "15m" };

const job = `job="${METRICS_JOB}"`;
const engineJob = `job="${ENGINE_METRICS_JOB}"`;
/**
 * The number of the engine's Pods with `labels` that each operator replica reads (every replica
 * polls them), the largest: what the replica that sees most says.
 */
const enginePods = (labels: string) =>
  `max(sum without (ready, redis) (platform_operator_engine_pods{${job},${labels}}))`;

/** The operator's alerting rules. */
export function alertRules(d: AlertDurations = DEFAULT_DURATIONS): AlertRule[] {
  return [
    {
      alert: "PlatformOperatorDown",
      expr: `absent(up{${job}} == 1)`,
      for: d.down,
      labels: { severity: "critical" },
      annotations: {
        summary: "No replica of the platform operator is scraped",
        description:
          `Prometheus has scraped no replica of the operator (job ${METRICS_JOB}) for ${d.down}: ` +
          "nothing reconciles RateLimits, Serverless or Scaler. Check the Deployment in " +
          "platform-system and the ServiceMonitor.",
      },
    },
    {
      alert: "PlatformOperatorNotLeading",
      expr: `max(platform_operator_leader{${job}}) < 1`,
      for: d.down,
      labels: { severity: "critical" },
      annotations: {
        summary: "No replica of the platform operator holds the Lease",
        description:
          `Replicas run, but none has led for ${d.down}: nothing is written. Check the Lease ` +
          "platform-system/platform-operator and the replicas' logs.",
      },
    },
    {
      alert: "PlatformOperatorControllerWaiting",
      expr: `max by (controller) (platform_operator_controller_waiting{${job}}) > 0`,
      for: d.down,
      labels: { severity: "critical" },
      annotations: {
        summary: "The leader has not begun the {{ $labels.controller }} controller",
        description:
          `The leading replica has waited ${d.down} to reconcile with the {{ $labels.controller }} ` +
          "controller: a watch of a type it reads cannot list. The leader's error log names the " +
          "type and the API server's answer (`list <type> failed …`: a conversion webhook, etcd " +
          "timing out, a permission). The other controllers go on.",
      },
    },
    {
      alert: "PlatformOperatorReconcileErrors",
      expr: `sum by (controller) (rate(platform_operator_reconcile_errors_total{${job}}[5m])) > 0`,
      for: d.errors,
      labels: { severity: "warning" },
      annotations: {
        summary: "Reconciles of {{ $labels.controller }} keep failing",
        description:
          `The {{ $labels.controller }} controller has failed reconciles for ${d.errors}; the ` +
          "operator's error logs say which objects and why.",
      },
    },
    {
      alert: "PlatformOperatorModuleError",
      expr:
        `max by (kind, namespace, name) (platform_operator_module{${job},served="True",state="Error"}) == 1`,
      for: d.objects,
      labels: { severity: "warning" },
      annotations: {
        summary: "{{ $labels.kind }} {{ $labels.namespace }}/{{ $labels.name }} is in Error",
        description: `The served {{ $labels.kind }} has been in state Error for ${d.objects}: ` +
          "kubectl describe it for the reason.",
      },
    },
    {
      alert: "PlatformOperatorRateLimitNotEnforced",
      expr:
        `max by (namespace, name, reason) (platform_operator_ratelimit_unmet{${job},condition="Enforced"}) == 1`,
      for: d.objects,
      labels: { severity: "warning" },
      annotations: {
        summary: "RateLimit {{ $labels.namespace }}/{{ $labels.name }} is not enforced",
        description: `Its Enforced condition has not been True for ${d.objects} (reason ` +
          "{{ $labels.reason }}): some or all of its Pods' requests are not limited.",
      },
    },
    {
      alert: "PlatformOperatorRateLimitProxyRejected",
      expr:
        `max by (namespace, name, reason) (platform_operator_ratelimit_unmet{${job},condition="Accepted"}) == 1`,
      for: d.objects,
      labels: { severity: "warning" },
      annotations: {
        summary: "A proxy rejected RateLimit {{ $labels.namespace }}/{{ $labels.name }}'s config",
        description: `Its Accepted condition has been False for ${d.objects}: a selected proxy ` +
          "rejected the config istiod sent it and keeps its previous one, which may not hold this " +
          "limit; kubectl describe it for the proxy and Envoy's error.",
      },
    },
    {
      alert: "PlatformOperatorRateLimitEngineDown",
      expr: `${enginePods(`ready="true"`)} == 0`,
      for: d.down,
      labels: { severity: "critical" },
      annotations: {
        summary: "No Pod of the global rate limit engine is Ready",
        description: `For ${d.down} no engine Pod in ${GLOBAL_ENGINE_SERVICE.namespace} has ` +
          "been Ready: every call for a global limit fails, and each RateLimit's failure mode " +
          "applies (Allow admits without the global limits, Deny refuses with 500). kubectl -n " +
          `${GLOBAL_ENGINE_SERVICE.namespace} describe pods; the RateLimits' GlobalEnforced ` +
          "condition says which Pods and why.",
      },
    },
    {
      alert: "PlatformOperatorRateLimitEngineRedisUnreachable",
      expr: `${enginePods(`redis="Unreachable"`)} > 0`,
      for: d.down,
      labels: { severity: "critical" },
      annotations: {
        summary: "The global rate limit engine cannot reach Redis",
        description: `For ${d.down} some engine Pods have had no connection to Redis ` +
          "(their /healthcheck fails): the calls they take fail and the failure mode applies. " +
          "Check Redis and the Secret the engine reads it from.",
      },
    },
    {
      alert: "PlatformOperatorRateLimitDomainNotLoaded",
      expr:
        `max by (namespace, name) (platform_operator_ratelimit_unmet{${job},condition="GlobalEnforced",reason="DomainNotLoaded"}) == 1`,
      for: d.objects,
      labels: { severity: "warning" },
      annotations: {
        summary:
          "The rate limit engine does not hold RateLimit {{ $labels.namespace }}/{{ $labels.name }}'s limits",
        description: `For ${d.objects} a Ready engine Pod has not held its domain as in force: ` +
          "it admits the domain's requests without counting them. kubectl describe the " +
          "RateLimit for the Pods; the operator's and the engine's logs say why the " +
          "configuration was not taken.",
      },
    },
    {
      alert: "PlatformOperatorRateLimitEngineSlow",
      expr:
        `histogram_quantile(0.99, sum by (le) (rate(ratelimit_service_response_time_seconds_bucket{${engineJob}}[5m]))) > ${ENGINE_SLOW_SECONDS}`,
      for: d.errors,
      labels: { severity: "warning" },
      annotations: {
        summary: "The global rate limit engine answers slowly",
        description: `For ${d.errors} the engine's 99th percentile answer time has been over ` +
          `${ENGINE_SLOW_SECONDS * 1000} ms, half the proxies' ${GLOBAL_ENGINE_TIMEOUT} ` +
          "deadline, past which the failure mode applies. Usually Redis is slow or far.",
      },
    },
    {
      alert: "PlatformOperatorRateLimitGlobalOverLimit",
      expr: `sum by (domain) (rate(ratelimit_service_rate_limit_over_limit{${engineJob}}[5m])) > 0`,
      for: d.objects,
      labels: { severity: "warning" },
      annotations: {
        summary: "Requests over RateLimit {{ $labels.domain }}'s global limits",
        description: `For ${d.objects} the engine has answered over the limit for domain ` +
          "{{ $labels.domain }} (the RateLimit's namespace/name): its clients send more than " +
          "the global limits allow, and the excess is refused (or only counted in shadow mode).",
      },
    },
    {
      alert: "PlatformOperatorRateLimitRefused",
      expr:
        `max by (namespace, name, reason) (platform_operator_ratelimit_unmet{${job},condition="Ready"}) == 1`,
      for: d.objects,
      labels: { severity: "warning" },
      annotations: {
        summary: "RateLimit {{ $labels.namespace }}/{{ $labels.name }} is refused",
        description:
          `Its Ready condition has not been True for ${d.objects} (reason {{ $labels.reason }}): ` +
          "its spec is not applied; the last good limit, if any, stays in place.",
      },
    },
    {
      alert: "PlatformOperatorOOMKilled",
      // The kill's time, set by the replica that restarted (src/cli/oom_restart.ts): within the
      // last hour (and not 0, never killed).
      expr:
        `(max by (pod) (platform_operator_last_oom_kill_timestamp_seconds{${job}}) > (time() - 3600)) > 0`,
      for: "0m",
      labels: { severity: "warning" },
      annotations: {
        summary: "Replica {{ $labels.pod }} of the platform operator was OOM-killed",
        description:
          "Its container was killed at its memory limit within the last hour and restarted (its " +
          "Warning Event OOMKilled says when, and the limit). Raise the limit for the cluster's " +
          "size: docs/faults.md, memory.",
      },
    },
  ];
}

/** The rules as a Prometheus rule file's `groups` (a PrometheusRule's `spec`). */
export function ruleGroups(d: AlertDurations = DEFAULT_DURATIONS): {
  groups: { name: string; rules: AlertRule[] }[];
} {
  return { groups: [{ name: "platform-operator", rules: alertRules(d) }] };
}
