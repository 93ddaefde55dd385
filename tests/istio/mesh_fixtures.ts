/** What the tests against a real istiod share. */

/** A second EnvoyFilter on the demo workload's inbound routes, merging `value` into each route. */
export function otherFilter(name: string, value: Record<string, unknown>): string {
  return JSON.stringify({
    apiVersion: "networking.istio.io/v1alpha3",
    kind: "EnvoyFilter",
    metadata: { name, namespace: "demo" },
    spec: {
      workloadSelector: { labels: { app: "httpbin" } },
      configPatches: [{
        applyTo: "HTTP_ROUTE",
        match: {
          context: "SIDECAR_INBOUND",
          routeConfiguration: { vhost: { route: { action: "ROUTE" } } },
        },
        patch: { operation: "MERGE", value },
      }],
    },
  });
}
