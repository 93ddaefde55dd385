/** Hand-written EnvoyFilters for the proxy model's tests, and how a proxy reads them. */
import assert from "node:assert/strict";
import {
  type EnvoyBehaviour,
  envoyBehaviour,
  type EnvoyFilterModel,
  newProxyState,
  proxyConfig,
  readEnvoyFilter,
} from "../../src/dataplane/mod.ts";

/** A JSON object. */
export type Json = Record<string, unknown>;
/** The LocalRateLimit type URL. */
export const TYPE =
  "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit";
/** 100%: filter_enabled / filter_enforced on. */
export const ON = { default_value: { numerator: 100, denominator: "HUNDRED" } };

/** A protobuf-JSON token bucket. */
export function tb(max: number, perFill: number, interval: string): Json {
  return { max_tokens: max, tokens_per_fill: perFill, fill_interval: interval };
}

/** An EnvoyFilter with the filter inserted and a route merge of `cfg` and `rateLimits`. */
export function filter(cfg: Json, rateLimits?: unknown[], insert = "INSERT_BEFORE"): Json {
  return {
    apiVersion: "networking.istio.io/v1alpha3",
    kind: "EnvoyFilter",
    metadata: { name: "f", namespace: "demo" },
    spec: {
      workloadSelector: { labels: { app: "x" } },
      configPatches: [
        {
          applyTo: "HTTP_FILTER",
          match: {
            context: "SIDECAR_INBOUND",
            listener: {
              filterChain: { filter: { name: "envoy.filters.network.http_connection_manager" } },
            },
          },
          patch: {
            operation: insert,
            value: {
              name: "envoy.filters.http.local_ratelimit",
              typed_config: { "@type": TYPE, stat_prefix: "p" },
            },
          },
        },
        {
          applyTo: "HTTP_ROUTE",
          match: { context: "SIDECAR_INBOUND" },
          patch: {
            operation: "MERGE",
            value: {
              ...(rateLimits ? { route: { rate_limits: rateLimits } } : {}),
              typed_per_filter_config: {
                "envoy.filters.http.local_ratelimit": { "@type": TYPE, stat_prefix: "r", ...cfg },
              },
            },
          },
        },
      ],
    },
  };
}

/** The filter as the model reads it; it must be accepted. */
export function model(obj: unknown): EnvoyFilterModel {
  const r = readEnvoyFilter(obj);
  assert.ok(r.ok, r.ok ? "" : JSON.stringify(r.errors));
  return r.value;
}

/** Why a proxy running `envoy` rejects the filter. */
export function errorsOf(obj: unknown, envoy = "1.38"): string {
  const r = readEnvoyFilter(obj, version(envoy));
  assert.ok(!r.ok, "expected the proxy to reject the filter");
  return r.errors.map((e) => `${e.path}: ${e.message}`).join("\n");
}

/** An Envoy version's behaviour. */
export function version(v: string): EnvoyBehaviour {
  const b = envoyBehaviour(v);
  assert.ok(b.ok);
  return b.value;
}

/** A proxy state for one filter, on `envoy`. */
export function proxy(obj: unknown, envoy = "1.38") {
  return newProxyState(proxyConfig([model(obj)], "SIDECAR_INBOUND"), 0, version(envoy));
}

/** A `rate_limits` action putting the path in the descriptor. */
export const pathAction = { request_headers: { header_name: ":path", descriptor_key: "path" } };

/**
 * A filter whose only rule gives each client address (`remote_address`) a bucket of `maxTokens`,
 * refilled that many a minute, beside a default bucket of 100.
 */
export function byAddressFilter(maxTokens: number): Json {
  return filter({
    token_bucket: tb(100, 100, "60s"),
    filter_enabled: ON,
    filter_enforced: ON,
    always_consume_default_token_bucket: false,
    descriptors: [{
      entries: [{ key: "remote_address", value: "" }],
      token_bucket: tb(maxTokens, maxTokens, "60s"),
    }],
  }, [{ actions: [{ remote_address: {} }] }]);
}
