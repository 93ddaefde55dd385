/**
 * What istiod says of the proxies connected to it, read from its `/debug/syncz` answer: for each
 * proxy, whether the last listeners (LDS) and routes (RDS) istiod sent were acknowledged, or
 * rejected with which error. The RateLimit's filter lives in both: the HTTP filter in the
 * listeners, its limits in the routes' per-route config.
 *
 * Facts, from istio.io/istio (pilot/pkg/xds/debug.go `Syncz`, pkg/xds/server.go): one entry a
 * connected proxy, `proxy` is the node id's `pod.namespace`, `resources` maps a type URL to
 * `{sent, acked, sentTime, lastError}` nonces; `lastError` is the error detail of the proxy's last
 * NACK of that type and is cleared by its next ACK; a nonce is the push version (`RFC3339 time/N`)
 * followed by a 36-character UUID. A proxy istiod does not list is not connected to that istiod.
 *
 * Read leniently, and bounded: an entry that is not an object or has no proxy id is skipped and
 * counted, a string field longer than {@link MAX_FIELD} is cut.
 */
import { isObject, type JsonObject as Json } from "./json.ts";
import type { KubeObject, ResourceType } from "./object.ts";
import { envoyOfIstio, type ProxyEnvoy, ROUTE_METADATA_KEY } from "./envoy.ts";

/** The xDS type URLs of listeners and routes. */
export const LISTENER_TYPE = "type.googleapis.com/envoy.config.listener.v3.Listener";
/** The xDS type URL of route configurations. */
export const ROUTE_TYPE = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";

/** Longest string kept of one field (an Envoy rejection can be long): the rest is cut with `…`. */
export const MAX_FIELD = 2048;

/** One xDS type's last exchange with a proxy. */
export interface TypeSync {
  sent: string;
  acked: string;
  /** istiod's clock, RFC 3339, when it sent `sent`; empty when unknown. */
  sentTime: string;
  /** The proxy's last NACK of this type, empty when its last answer was an ACK. */
  lastError: string;
}

/** One proxy as istiod reports it. */
export interface ProxySync {
  /** `pod.namespace`. */
  id: string;
  /** `sidecar` or `router` (istiod's node type), empty when not said. */
  type: string;
  /**
   * The Istio version the proxy's agent reports (node metadata ISTIO_VERSION); its Envoy's version
   * follows from it (envoy.ts `envoyOfIstio`): syncz carries no Envoy version (its
   * `proxy_version` is never set) and istiod keeps none.
   */
  istioVersion: string;
  listeners: TypeSync;
  routes: TypeSync;
}

/** How a proxy stands with the config istiod last sent it. */
export type ProxyVerdict =
  | { state: "Acked" }
  | { state: "Pending" }
  | { state: "Rejected"; type: "listeners" | "routes"; error: string };

/** The parsed answer: the proxies, and how many entries could not be read. */
export interface Syncz {
  proxies: ProxySync[];
  skipped: number;
}

function text(v: unknown): string {
  if (typeof v !== "string") return "";
  return v.length > MAX_FIELD ? v.slice(0, MAX_FIELD) + "…" : v;
}

/** `v` with each run of whitespace holding a line break made one space, and trimmed. */
function oneLine(v: string): string {
  return v.replace(/\s*[\r\n]\s*/g, " ").trim();
}

function typeSync(entry: Json, typeUrl: string, sentKey: string, ackedKey: string): TypeSync {
  const res = isObject(entry.resources) && isObject(entry.resources[typeUrl])
    ? entry.resources[typeUrl] as Json
    : undefined;
  return {
    sent: text(res?.sent ?? entry[sentKey]),
    acked: text(res?.acked ?? entry[ackedKey]),
    sentTime: text(res?.sentTime),
    // Envoy's error details end in a newline and may span lines; a condition message is one line.
    lastError: oneLine(text(res?.lastError)),
  };
}

/** Reads a `/debug/syncz` body (already JSON-parsed). Anything but a list reads as no proxies. */
export function parseSyncz(body: unknown): Syncz {
  const proxies: ProxySync[] = [];
  let skipped = 0;
  if (!Array.isArray(body)) return { proxies, skipped: body === undefined ? 0 : 1 };
  for (const entry of body) {
    if (!isObject(entry) || typeof entry.proxy !== "string" || entry.proxy === "") {
      skipped++;
      continue;
    }
    proxies.push({
      id: text(entry.proxy),
      type: text(entry.proxy_type),
      istioVersion: text(entry.istio_version),
      listeners: typeSync(entry, LISTENER_TYPE, "listener_sent", "listener_acked"),
      routes: typeSync(entry, ROUTE_TYPE, "route_sent", "route_acked"),
    });
  }
  return { proxies, skipped };
}

/**
 * Where a proxy stands: `Rejected` when its last answer to the listeners or routes was a NACK
 * (listeners first), `Acked` when the listeners and the routes (if it asked for any) were
 * acknowledged at the nonce last sent, else `Pending` (sent, not yet answered, or no listeners
 * sent yet).
 */
export function verdictOf(p: ProxySync): ProxyVerdict {
  if (p.listeners.lastError !== "") {
    return { state: "Rejected", type: "listeners", error: p.listeners.lastError };
  }
  if (p.routes.lastError !== "") {
    return { state: "Rejected", type: "routes", error: p.routes.lastError };
  }
  const synced = (t: TypeSync) => t.sent !== "" && t.sent === t.acked;
  // A proxy asks for routes only once its listeners name some (a gateway without a Gateway
  // resource has none): routes never sent nor acknowledged are nothing to wait for.
  const unwatched = (t: TypeSync) => t.sent === "" && t.acked === "";
  return synced(p.listeners) && (synced(p.routes) || unwatched(p.routes))
    ? { state: "Acked" }
    : { state: "Pending" };
}

/** Length of the UUID istiod appends to the push version to make a nonce. */
const UUID_LENGTH = 36;

/**
 * The push counter of a nonce (`2026-11-28T11:00:00Z/17` + UUID → 17), undefined when the nonce
 * is not in that shape. Counters of one istiod only grow; they restart with istiod.
 */
export function pushNumber(nonce: string): number | undefined {
  if (nonce.length <= UUID_LENGTH) return undefined;
  const version = nonce.slice(0, nonce.length - UUID_LENGTH);
  const slash = version.lastIndexOf("/");
  if (slash < 0) return undefined;
  const digits = version.slice(slash + 1);
  if (!/^[0-9]{1,15}$/.test(digits)) return undefined;
  return Number(digits);
}

/** The proxy id istiod gives a Pod's proxy (`pod.namespace`). */
export function proxyId(pod: { name: string; namespace: string }): string {
  return `${pod.name}.${pod.namespace}`;
}

// What the operator keeps of istiod's answer, as objects of a type served inside the operator
// (src/runtime/local_types.ts): one ProxyStatus a proxy, named and namespaced as its Pod, and one
// for istiod itself, so that the runtime caches, indexes and watches them like Pods.

/** The type of the objects istiod's answers become; never served by the API server. */
export const PROXY_STATUS: ResourceType = {
  group: "mesh.platform-project.io",
  version: "v1",
  kind: "ProxyStatus",
  plural: "proxystatuses",
  namespaced: true,
};

/**
 * Name of the ProxyStatus that says whether istiod could be asked (in the operator's namespace):
 * no Pod can have it, since a Pod's name is a DNS subdomain and has no `_`.
 */
export const ISTIOD_STATUS_NAME = "_istiod";

/**
 * What istiod says a proxy holds of the operator's limits, for the push the proxy acknowledged
 * last: read from istiod's dump of its listeners and routes, or why that could not be read.
 * `confirmed` once an answer of istiod after the dump showed no push under way (a dump is
 * generated from the proxy's last push context, which a push being sent has already moved).
 */
export type HeldRecord =
  | { limits: HeldLimits[]; unreadable: number; confirmed: boolean }
  | { error: string; message: string };

/** What a proxy's ProxyStatus holds. */
export interface ProxyStatusFields {
  /** `sidecar` or `router`. */
  proxyType: string;
  istioVersion: string;
  /**
   * The Envoy `istioVersion` says the proxy runs; absent when it says nothing. Derived on reading
   * (`proxyStatusOf`), never stored: the Istio version is the one record.
   */
  envoy?: ProxyEnvoy;
  verdict: ProxyVerdict;
  /**
   * What it holds at the push it acknowledged last, when the operator has read it (only for
   * Acked proxies a RateLimit selects); absent while not read.
   */
  held?: HeldRecord;
}

/** The nonces that say which push a proxy last acknowledged: listeners and routes. */
export function ackedKey(p: ProxySync): string {
  return `${p.listeners.acked}|${p.routes.acked}`;
}

/** What istiod's own ProxyStatus holds: whether it was asked, and if not, why. */
export type IstiodStatusFields =
  | { reachable: true; proxies: number }
  | { reachable: false; reason: string; message: string };

const API_VERSION = `${PROXY_STATUS.group}/${PROXY_STATUS.version}`;

/** The Pod a proxy id names (`pod.namespace`: a namespace has no dot, a Pod's name may). */
export function podOfProxy(id: string): { name: string; namespace: string } | undefined {
  const dot = id.lastIndexOf(".");
  if (dot <= 0 || dot === id.length - 1) return undefined;
  return { name: id.slice(0, dot), namespace: id.slice(dot + 1) };
}

/** A proxy's ProxyStatus object; undefined when its id names no Pod. */
export function proxyStatusObject(p: ProxySync, held?: HeldRecord): KubeObject | undefined {
  const pod = podOfProxy(p.id);
  if (!pod) return undefined;
  const status: ProxyStatusFields = {
    proxyType: p.type,
    istioVersion: p.istioVersion,
    verdict: verdictOf(p),
    ...(held ? { held } : {}),
  };
  return { apiVersion: API_VERSION, kind: PROXY_STATUS.kind, metadata: pod, status: { ...status } };
}

/** istiod's own ProxyStatus object, in `namespace` (the operator's). */
export function istiodStatusObject(namespace: string, fields: IstiodStatusFields): KubeObject {
  return {
    apiVersion: API_VERSION,
    kind: PROXY_STATUS.kind,
    metadata: { namespace, name: ISTIOD_STATUS_NAME },
    status: { ...fields },
  };
}

/** The fields of a proxy's ProxyStatus as the runtime cached it; undefined when unreadable. */
export function proxyStatusOf(obj: KubeObject | undefined): ProxyStatusFields | undefined {
  const s = obj?.status;
  if (!isObject(s) || !isObject(s.verdict)) return undefined;
  const v = s.verdict;
  const verdict: ProxyVerdict | undefined = v.state === "Acked" || v.state === "Pending"
    ? { state: v.state }
    : v.state === "Rejected" && (v.type === "listeners" || v.type === "routes")
    ? { state: "Rejected", type: v.type, error: text(v.error) }
    : undefined;
  if (!verdict) return undefined;
  const held = heldRecordOf(s.held);
  const istioVersion = text(s.istioVersion);
  const envoy = envoyOfIstio(istioVersion);
  return {
    proxyType: text(s.proxyType),
    istioVersion,
    ...(envoy ? { envoy } : {}),
    verdict,
    ...(held ? { held } : {}),
  };
}

/** A HeldRecord as the poller wrote it (it is never from outside the operator). */
function heldRecordOf(h: unknown): HeldRecord | undefined {
  if (!isObject(h)) return undefined;
  if (typeof h.error === "string") return { error: h.error, message: text(h.message) };
  if (!Array.isArray(h.limits)) return undefined;
  return {
    limits: h.limits as HeldLimits[],
    unreadable: typeof h.unreadable === "number" ? h.unreadable : 0,
    confirmed: h.confirmed === true,
  };
}

/** The fields of istiod's own ProxyStatus; undefined when there is none (istiod is not asked). */
export function istiodStatusOf(obj: KubeObject | undefined): IstiodStatusFields | undefined {
  const s = obj?.status;
  if (!isObject(s)) return undefined;
  if (s.reachable === true) {
    return { reachable: true, proxies: typeof s.proxies === "number" ? s.proxies : 0 };
  }
  return { reachable: false, reason: text(s.reason), message: text(s.message) };
}

// What a proxy holds of the operator's limits, read from istiod's config dump of it (listeners
// and routes, protobuf JSON: camelCase names, zero values left out). A sidecar's inbound routes
// sit inside its virtualInbound listener, a gateway's in its route configurations: every route's
// per-filter config of the local rate limit filter with the operator's stat prefix is read.

/** One bucket as a proxy holds it. */
export interface HeldBucket {
  maxTokens: number;
  tokensPerFill: number;
  /** Protobuf Duration, as istiod writes it (`"30s"`). */
  fillInterval: string;
}

/** One local rate limit config of the operator's a proxy holds on some of its routes. */
export interface HeldLimits {
  /** True when it counts but does not reject (filter_enforced 0%, or absent: Envoy's default). */
  shadow: boolean;
  /** The default bucket, then each descriptor's, in order. */
  buckets: HeldBucket[];
  /**
   * The digest in the metadata of the route that holds it (`ROUTE_METADATA_KEY`, render.ts
   * `routeDigest`): which render of which RateLimit its route config is. Absent when the route
   * has none (a filter an operator before it wrote).
   */
  digest?: string;
}

/** Longest walk into a dump: a deeper object is not looked into (a dump is about 10 levels). */
const MAX_DEPTH = 64;

function field(o: unknown, camel: string, snake: string): unknown {
  if (!isObject(o)) return undefined;
  return o[camel] ?? o[snake];
}

function count(v: unknown): number | undefined {
  if (v === undefined) return 0; // protobuf JSON leaves a zero out
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : undefined;
}

function heldBucket(tb: unknown): HeldBucket | undefined {
  if (!isObject(tb)) return undefined;
  const maxTokens = count(field(tb, "maxTokens", "max_tokens"));
  const perFill = field(tb, "tokensPerFill", "tokens_per_fill");
  // tokens_per_fill is a UInt32Value: absent means 1.
  const tokensPerFill = perFill === undefined ? 1 : count(perFill);
  const fillInterval = field(tb, "fillInterval", "fill_interval");
  if (maxTokens === undefined || tokensPerFill === undefined || typeof fillInterval !== "string") {
    return undefined;
  }
  return { maxTokens, tokensPerFill, fillInterval };
}

function heldOf(config: unknown, statPrefix: string): HeldLimits | undefined | null {
  if (field(config, "statPrefix", "stat_prefix") !== statPrefix) return null; // not ours
  const enforced = field(
    field(field(config, "filterEnforced", "filter_enforced"), "defaultValue", "default_value"),
    "numerator",
    "numerator",
  );
  const numerator = count(enforced);
  const first = heldBucket(field(config, "tokenBucket", "token_bucket"));
  const descriptors = field(config, "descriptors", "descriptors") ?? [];
  if (numerator === undefined || !first || !Array.isArray(descriptors)) return undefined;
  const buckets = [first];
  for (const d of descriptors) {
    const b = heldBucket(field(d, "tokenBucket", "token_bucket"));
    if (!b) return undefined;
    buckets.push(b);
  }
  return { shadow: numerator === 0, buckets };
}

/** The operator's digest in a route's metadata (`ROUTE_METADATA_KEY`), if it has one. */
function routeDigestOf(route: Record<string, unknown>): string | undefined {
  const byFilter = field(field(route, "metadata", "metadata"), "filterMetadata", "filter_metadata");
  const digest = field(
    isObject(byFilter) ? byFilter[ROUTE_METADATA_KEY] : undefined,
    "digest",
    "digest",
  );
  return typeof digest === "string" ? digest : undefined;
}

/**
 * The distinct local rate limit configs with `statPrefix` that a dump's routes hold, each with
 * the operator's digest in its route's metadata, in the order first met; `unreadable` counts those whose buckets could not be read.
 */
export function heldLimitsOf(
  dump: unknown,
  filterName: string,
  statPrefix: string,
): { limits: HeldLimits[]; unreadable: number } {
  const seen = new Map<string, HeldLimits>();
  let unreadable = 0;
  const walk = (o: unknown, depth: number): void => {
    if (depth > MAX_DEPTH) return;
    if (Array.isArray(o)) {
      for (const v of o) walk(v, depth + 1);
      return;
    }
    if (!isObject(o)) return;
    const perFilter = field(o, "typedPerFilterConfig", "typed_per_filter_config");
    if (isObject(perFilter) && perFilter[filterName] !== undefined) {
      const held = heldOf(perFilter[filterName], statPrefix);
      if (held === undefined) unreadable++;
      else if (held !== null) {
        const digest = routeDigestOf(o);
        if (digest !== undefined) held.digest = digest;
        seen.set(JSON.stringify(held), held);
      }
    }
    for (const v of Object.values(o)) walk(v, depth + 1);
  };
  walk(dump, 0);
  return { limits: [...seen.values()], unreadable };
}

// How often the operator asks istiod (src/kube/istiod_source.ts, and the simulator's model of it).

/**
 * Default period between two rounds; also the longest wait between two tries while istiod cannot
 * be asked (the tries back off from {@link DEFAULT_FOLLOW_UP_MS}, doubling, up to the period).
 */
export const DEFAULT_PERIOD_MS = 15_000;
/** Default wait before a round that confirms what the last one read. */
export const DEFAULT_FOLLOW_UP_MS = 1_000;
/** Rounds a follow-up apart after the operator's EnvoyFilters changed: istiod debounces a push. */
export const SETTLE_ROUNDS = 5;

/**
 * The wait before the next try after `failures` rounds failed in a row (1 or more): `followUpMs`
 * after the first, twice as long after each next, never longer than `periodMs`.
 */
export function retryWaitMs(failures: number, followUpMs: number, periodMs: number): number {
  return Math.min(periodMs, followUpMs * 2 ** Math.min(failures - 1, 30));
}
