/**
 * The objects of the optional monitoring component (deploy/monitoring/, and the Helm chart's
 * `monitoring.enabled`): a ServiceMonitor for the metrics Service, a PrometheusRule with the
 * alerts of monitoring_rules.ts, the Grafana dashboard of monitoring_dashboard.ts in a ConfigMap
 * that Grafana's dashboard sidecar picks up by its `grafana_dashboard` label, and a ServiceMonitor
 * for the global rate limit engine's metrics Service (it selects nothing where no engine runs).
 * The ServiceMonitors and the rule are prometheus-operator's kinds: without its CRDs they cannot
 * be applied.
 */
import type { KubeObject } from "../api/object.ts";
import { GLOBAL_ENGINE_LABELS, GLOBAL_ENGINE_SERVICE } from "../api/global_engine.ts";
import { dashboard } from "./monitoring_dashboard.ts";
import { ruleGroups } from "./monitoring_rules.ts";

/** The CRDs the component needs, and who installs them. */
export const MONITORING_CRDS = [
  "servicemonitors.monitoring.coreos.com",
  "prometheusrules.monitoring.coreos.com",
];

const LABELS = {
  "app.kubernetes.io/name": "platform-operator",
  "app.kubernetes.io/part-of": "platform-operator",
};

/** The component's objects, in the operator's namespace `namespace`. */
export function monitoringObjects(namespace = "platform-system"): KubeObject[] {
  const meta = (name: string, extra: Record<string, string> = {}) => ({
    name,
    namespace,
    labels: { ...LABELS, ...extra },
  });
  return [
    {
      apiVersion: "monitoring.coreos.com/v1",
      kind: "ServiceMonitor",
      metadata: meta("platform-operator"),
      // Prometheus names the job after the Service (platform-operator-metrics): the alerts and
      // the dashboard select on it.
      spec: {
        selector: { matchLabels: LABELS },
        endpoints: [{
          port: "metrics",
          scheme: "https",
          // The operator's own `namespace` and `name` labels name RateLimits; without this the
          // target's namespace would replace them (as `exported_namespace`).
          honorLabels: true,
          // Prometheus's ServiceAccount token, bound to ClusterRole platform-operator-metrics-reader.
          bearerTokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token",
          // Each replica's certificate is self-signed (docs/operations.md#transport).
          tlsConfig: { insecureSkipVerify: true },
          interval: "30s",
        }],
      },
    },
    {
      apiVersion: "monitoring.coreos.com/v1",
      kind: "PrometheusRule",
      metadata: meta("platform-operator"),
      spec: ruleGroups(),
    },
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: meta("platform-operator-dashboard", { grafana_dashboard: "1" }),
      data: { "platform-operator.json": JSON.stringify(dashboard(), null, 2) + "\n" },
    },
    {
      apiVersion: "monitoring.coreos.com/v1",
      kind: "ServiceMonitor",
      metadata: meta(GLOBAL_ENGINE_SERVICE.name),
      // Prometheus names the job after the Service (ratelimit-engine): the engine's alerts
      // (PlatformOperatorRateLimitEngineSlow, ...GlobalOverLimit) and dashboard panels select on it.
      spec: {
        namespaceSelector: { matchNames: [GLOBAL_ENGINE_SERVICE.namespace] },
        selector: { matchLabels: { ...GLOBAL_ENGINE_LABELS } },
        endpoints: [{
          // The engine's Prometheus endpoint, plain HTTP (its NetworkPolicy lets scrapes in).
          port: "http-metrics",
          path: "/metrics",
          // The engine's own `domain` label names a RateLimit's domain, kept as it is.
          honorLabels: true,
          interval: "30s",
        }],
      },
    },
  ];
}
