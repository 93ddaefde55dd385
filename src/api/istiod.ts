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
  /** The Istio version the proxy's agent reports (its Envoy's version follows from it). */
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

function typeSync(entry: Json, typeUrl: string, sentKey: string, ackedKey: string): TypeSync {
  const res = isObject(entry.resources) && isObject(entry.resources[typeUrl])
    ? entry.resources[typeUrl] as Json
    : undefined;
  return {
    sent: text(res?.sent ?? entry[sentKey]),
    acked: text(res?.acked ?? entry[ackedKey]),
    sentTime: text(res?.sentTime),
    lastError: text(res?.lastError),
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
 * (listeners first), `Acked` when both were acknowledged at the nonce last sent, else `Pending`
 * (sent, not yet answered, or nothing sent yet).
 */
export function verdictOf(p: ProxySync): ProxyVerdict {
  if (p.listeners.lastError !== "") {
    return { state: "Rejected", type: "listeners", error: p.listeners.lastError };
  }
  if (p.routes.lastError !== "") {
    return { state: "Rejected", type: "routes", error: p.routes.lastError };
  }
  const synced = (t: TypeSync) => t.sent !== "" && t.sent === t.acked;
  return synced(p.listeners) && synced(p.routes) ? { state: "Acked" } : { state: "Pending" };
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
