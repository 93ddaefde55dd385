/** Envoy names and limits the RateLimit API, its reducer and the data-plane model share. */

/** Type URL of the LocalRateLimit message. */
export const LOCAL_RATELIMIT_TYPE =
  "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit";
/** Name of the local rate limit HTTP filter. */
export const LOCAL_RATELIMIT_FILTER = "envoy.filters.http.local_ratelimit";

/**
 * The key of the operator's entry in a route's `metadata.filter_metadata` (route_components.proto
 * Route.metadata, which no filter of ours reads, so Envoy behaves the same with it): `{digest}`,
 * identifying the exact route config a filter merges (render.ts `routeDigest`), which istiod's
 * config dump shows beside the per-route limits a proxy holds (istiod.ts `heldLimitsOf`).
 */
export const ROUTE_METADATA_KEY = "platform-project.io/ratelimit";
/** The largest value of a protobuf uint32 field, such as a token bucket's counts. */
export const UINT32_MAX = 4294967295;
/**
 * Body of a local rate limit refusal (local_ratelimit's `sendLocalReply(..., "local_rate_limited",
 * ...)`); global refusals get the same through the connection manager's local reply mapper.
 */
export const RATE_LIMITED_BODY = "local_rate_limited";
/** Type URL of the HTTP connection manager's config. */
export const HCM_TYPE =
  "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager";
/** Envoy's response flag of a request refused by a rate limit filter, local or global. */
export const RATE_LIMITED_FLAG = "RL";
/** Envoy's floor for any fill interval ("fill timer must be >= 50ms"). */
export const MIN_FILL_INTERVAL_MS = 50;
/**
 * The request header the upstream sees on a request a limit in shadow mode would have rejected
 * (`request_headers_to_add_when_not_enforced`).
 */
export const SHADOW_HEADER = "x-ratelimit-would-reject";
/** Its value. */
export const SHADOW_HEADER_VALUE = "true";
/** gRPC status codes a rejected gRPC call can get (grpc/grpc doc/statuscodes.md). */
export const GRPC_STATUS = { ResourceExhausted: 8, Unavailable: 14 } as const;

/** One entry of a rate limit descriptor (Envoy's `RateLimitDescriptor.Entry`): a key and its value. */
export interface DescriptorEntry {
  key: string;
  value: string;
}

// Which Envoy a mesh's proxies run. istiod knows a proxy's Istio version only: pilot-agent sends
// it as the node metadata ISTIO_VERSION, which istiod keeps (model.NodeMetadata.IstioVersion) and
// shows as `istio_version` in /debug/syncz; Envoy's own build version (the node's
// `user_agent_build_version`) is read by nothing in istiod, and syncz's `proxy_version` is never
// set (pilot/pkg/xds/debug.go Syncz, istio.io/istio at the pin of tools/istio-check/go.mod). So a
// proxy's Envoy follows from its Istio release, by the table below: each Istio release ships one
// Envoy minor version, pinned by istio/proxy, and a later release never ships an older one.

/** One Istio release, the Envoy it ships, and where that was read. */
export interface IstioEnvoyRow {
  /** `1.26`: Istio major.minor. */
  istio: string;
  /** `1.34`: Envoy major.minor. */
  envoy: string;
  source: string;
}

/** The Istio releases the project knows, oldest first, and their Envoy. */
export const ISTIO_ENVOY_ROWS: readonly IstioEnvoyRow[] = [
  {
    istio: "1.25",
    envoy: "1.33",
    source: 'istio/proxy branch release-1.25: commit "Update envoy to v1.33.8"',
  },
  {
    istio: "1.26",
    envoy: "1.34",
    source: 'istio/proxy branch release-1.26: commit "Update envoy to v1.34.6"',
  },
  {
    istio: "1.27",
    envoy: "1.35",
    source: 'istio/proxy branch release-1.27: envoy pinned at "the latest 1.35-dev"',
  },
  { istio: "1.28", envoy: "1.36", source: "istio/proxy branch release-1.28: ENVOY_VERSION.txt" },
  { istio: "1.29", envoy: "1.37", source: "istio/proxy branch release-1.29: ENVOY_VERSION.txt" },
  { istio: "1.30", envoy: "1.38", source: "istio/proxy branch release-1.30: ENVOY_VERSION.txt" },
];

/** The Envoy each Istio release ships, by Istio major.minor ({@link ISTIO_ENVOY_ROWS}). */
export const ISTIO_ENVOY: Readonly<Record<string, string>> = Object.fromEntries(
  ISTIO_ENVOY_ROWS.map((r) => [r.istio, r.envoy]),
);

/** The newest Istio release the project supports (1.31 is not released yet). */
export const NEWEST_ISTIO = ISTIO_ENVOY_ROWS[ISTIO_ENVOY_ROWS.length - 1].istio;

/**
 * The first Envoy minor version with dynamic descriptors (envoyproxy/envoy#36623,
 * changelogs/1.34.0.yaml): an entry with an empty value is a wildcard. Older Envoys refuse the
 * empty value, so they refuse a filter with per-client buckets.
 */
export const DYNAMIC_DESCRIPTORS_MINOR = 34;

/** What a proxy's Istio version says of its Envoy. */
export interface ProxyEnvoy {
  /** The Istio version the proxy's agent reported (`1.25.2`). */
  istio: string;
  /** Envoy's minor version: exactly, at least or at most, as `bound` says. */
  minor: number;
  /**
   * `exact` for an Istio release of the table; `atLeast` for a newer one (the newest listed
   * Envoy or later); `atMost` for an older one (older than the oldest listed Envoy).
   */
  bound: "exact" | "atLeast" | "atMost";
}

const minorOf = (version: string) => Number(version.split(".")[1]);

/**
 * Istio's version as istiod reads it (pilot/pkg/model/context.go ParseIstioVersion: a `release-`
 * prefix dropped, then `major.minor[.patch]` at the start, so `1.26.2`, `1.27-dev` and
 * `1.26.0-beta.1` read as 1.26 and 1.27).
 */
const ISTIO_VERSION = /^(?:release-)?([1-9][0-9]*)\.([0-9]{1,4})(?![0-9])/;

/**
 * The Envoy a proxy reporting Istio `istioVersion` runs; undefined when that says nothing (empty,
 * not a version, or not Istio 1: istiod reads an unreadable version as the newest, the operator
 * does not assume).
 */
export function envoyOfIstio(istioVersion: string): ProxyEnvoy | undefined {
  const m = ISTIO_VERSION.exec(istioVersion);
  if (!m || m[1] !== "1") return undefined;
  const istio = Number(m[2]);
  const listed = ISTIO_ENVOY[`1.${istio}`];
  if (listed !== undefined) return { istio: istioVersion, minor: minorOf(listed), bound: "exact" };
  const oldest = ISTIO_ENVOY_ROWS[0];
  const newest = ISTIO_ENVOY_ROWS[ISTIO_ENVOY_ROWS.length - 1];
  return istio < minorOf(oldest.istio)
    ? { istio: istioVersion, minor: minorOf(oldest.envoy) - 1, bound: "atMost" }
    : { istio: istioVersion, minor: minorOf(newest.envoy), bound: "atLeast" };
}

/** `Istio 1.25.2, Envoy 1.33` (or `Envoy 1.38 or later`, `Envoy 1.32 or older`). */
export function proxyEnvoyText(e: ProxyEnvoy): string {
  const envoy = `Envoy 1.${e.minor}`;
  const bound = e.bound === "atLeast" ? " or later" : e.bound === "atMost" ? " or older" : "";
  return `Istio ${e.istio}, ${envoy}${bound}`;
}

/** True when the proxy's Envoy is known to refuse per-client buckets (older than 1.34). */
export function refusesPerClient(e: ProxyEnvoy | undefined): boolean {
  return e !== undefined && e.bound !== "atLeast" && e.minor < DYNAMIC_DESCRIPTORS_MINOR;
}

/** `Envoy 1.34 (Istio 1.26) or later`: what per-client buckets need. */
export const PER_CLIENT_NEEDS = `Envoy 1.${DYNAMIC_DESCRIPTORS_MINOR} (Istio ${
  ISTIO_ENVOY_ROWS.find((r) => minorOf(r.envoy) === DYNAMIC_DESCRIPTORS_MINOR)!.istio
}) or later`;

/**
 * Hop-by-hop request headers Envoy's connection manager removes before any filter, on every
 * request (`mutateRequestHeaders`); `connection` and `upgrade` go too unless it is an upgrade.
 */
export const HOP_BY_HOP_HEADERS = ["keep-alive", "proxy-connection", "transfer-encoding"] as const;
/**
 * Internal `x-envoy-*` request headers Envoy removes from every request that is not internal
 * (`cleanInternalHeaders`): every request from Envoy 1.33, where Istio leaves no address internal.
 */
export const INTERNAL_ENVOY_HEADERS = [
  "x-envoy-retriable-status-codes",
  "x-envoy-retriable-header-names",
  "x-envoy-retry-on",
  "x-envoy-retry-grpc-on",
  "x-envoy-max-retries",
  "x-envoy-upstream-alt-stat-name",
  "x-envoy-upstream-rq-timeout-ms",
  "x-envoy-upstream-rq-per-try-timeout-ms",
  "x-envoy-upstream-rq-timeout-alt-response",
  "x-envoy-expected-rq-timeout-ms",
  "x-envoy-force-trace",
  "x-envoy-ip-tags",
  "x-envoy-original-url",
  "x-envoy-hedge-on-per-try-timeout",
] as const;
const REMOVED_BEFORE_FILTERS: ReadonlySet<string> = new Set<string>([
  ...HOP_BY_HOP_HEADERS,
  ...INTERNAL_ENVOY_HEADERS,
]);

/**
 * Whether every proxy removes the request header `name` (any case) before any filter (from Envoy
 * 1.33 for the internal `x-envoy-*` ones), so that a rule comparing a client's value of it never
 * sees one. Not `connection`, `upgrade` (kept on upgrades) or `x-envoy-internal` (the proxy may
 * set it).
 */
export function removedBeforeFilters(name: string): boolean {
  return REMOVED_BEFORE_FILTERS.has(name.toLowerCase());
}
