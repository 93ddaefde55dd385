/**
 * The route entries of the ingress gateway, from Istio VirtualServices. Istio gives each
 * VirtualService host a virtual host and, in it, one Envoy route entry for each match condition of
 * each `http` route (an `http` route without `match` is one catch-all entry). The EnvoyFilter's
 * per-route rate limit config is merged into every route entry, and Envoy builds it once for each
 * one, so each route entry (each host, each VirtualService route) has its own buckets.
 *
 * Modelled: `hosts` (exact, `*.suffix`, `*`), `gateways` (any name but `mesh` binds the
 * VirtualService to the ingress gateway; Gateway objects and ports are not modelled) and
 * `http[].match[].uri` with `exact` or `prefix`, matched on the path without its query string. A
 * match condition with any other matcher never matches. VirtualServices are taken oldest first
 * (creationTimestamp, then namespace/name), as Istio orders them; routes of one host from several
 * VirtualServices follow each other in that order.
 */
import { isObject, type JsonObject as Json } from "../api/json.ts";
import type { Request } from "./request.ts";

/** One route entry of the gateway. */
export interface GatewayRoute {
  /** Unique in the gateway: `<host> <namespace>/<name> http[i]`, plus ` match[j]` when it has several. */
  name: string;
  /** The virtual host (a VirtualService host, lower case). */
  host: string;
  /** The path condition; undefined matches every path. */
  uri?: { exact?: string; prefix?: string };
  /** A condition the model cannot evaluate: the entry never matches. */
  never?: boolean;
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
}

/** The entries of one match condition list of an `http` route. */
function entriesOf(host: string, base: string, match: unknown): GatewayRoute[] {
  const conditions = Array.isArray(match) && match.length > 0 ? match : [undefined];
  return conditions.map((m, j) => {
    const name = conditions.length > 1 ? `${base} match[${j}]` : base;
    if (m === undefined) return { name, host };
    if (!isObject(m)) return { name, host, never: true };
    const uri = m.uri;
    const others = Object.keys(m).some((k) => k !== "uri" && k !== "name");
    if (others || (uri !== undefined && !isObject(uri))) return { name, host, never: true };
    if (uri === undefined) return { name, host };
    const keys = Object.keys(uri);
    const exact = uri.exact;
    const prefix = uri.prefix;
    if (keys.length !== 1 || (typeof exact !== "string" && typeof prefix !== "string")) {
      return { name, host, never: true };
    }
    return typeof exact === "string" ? { name, host, uri: { exact } } : {
      name,
      host,
      uri: { prefix: prefix as string },
    };
  });
}

/** The gateway's route entries from the VirtualServices among `objects` (others are ignored). */
export function gatewayRoutes(objects: readonly unknown[]): GatewayRoute[] {
  const services = objects.filter((o): o is Json =>
    isObject(o) && o.kind === "VirtualService" &&
    typeof o.apiVersion === "string" && o.apiVersion.startsWith("networking.istio.io/") &&
    strings((o.spec as Json | undefined)?.gateways).some((g) => g !== "mesh")
  );
  const meta = (o: Json) => (isObject(o.metadata) ? o.metadata : {});
  const key = (o: Json) => [
    String(meta(o).creationTimestamp ?? ""),
    `${String(meta(o).namespace ?? "default")}/${String(meta(o).name ?? "")}`,
  ];
  services.sort((a, b) => {
    const [ta, na] = key(a);
    const [tb, nb] = key(b);
    return ta < tb ? -1 : ta > tb ? 1 : na < nb ? -1 : na > nb ? 1 : 0;
  });
  const out: GatewayRoute[] = [];
  for (const vs of services) {
    const spec = vs.spec as Json;
    const id = key(vs)[1];
    const http = Array.isArray(spec.http) ? spec.http : [];
    for (const host of strings(spec.hosts).map((h) => h.toLowerCase())) {
      http.forEach((h, i) => {
        out.push(...entriesOf(host, `${host} ${id} http[${i}]`, isObject(h) ? h.match : undefined));
      });
    }
  }
  return out;
}

/** The request's host as Envoy picks a virtual host by it: `host`, lower case, no port. */
function hostOf(req: Request): string {
  const headers = req.headers ?? {};
  const name = Object.keys(headers).find((k) => k.toLowerCase() === "host" || k === ":authority");
  const value = name === undefined ? "" : headers[name].toLowerCase();
  return value.replace(/:\d+$/, "");
}

/** Envoy's virtual host choice: the exact host, else the longest `*.suffix`, else `*`. */
function virtualHost(hosts: ReadonlySet<string>, host: string): string | undefined {
  if (hosts.has(host)) return host;
  let best: string | undefined;
  for (const h of hosts) {
    if (!h.startsWith("*.") || !host.endsWith(h.slice(1)) || host.length <= h.length - 1) continue;
    if (best === undefined || h.length > best.length) best = h;
  }
  return best ?? (hosts.has("*") ? "*" : undefined);
}

/** The route entry a request takes: its virtual host's first entry that matches; none: 404. */
export function routeOf(
  routes: readonly GatewayRoute[],
  req: Request,
): GatewayRoute | undefined {
  const vhost = virtualHost(new Set(routes.map((r) => r.host)), hostOf(req));
  if (vhost === undefined) return undefined;
  const q = req.path.search(/[?#]/);
  const path = q < 0 ? req.path : req.path.slice(0, q);
  return routes.find((r) =>
    r.host === vhost && !r.never &&
    (r.uri === undefined ||
      (r.uri.exact !== undefined ? path === r.uri.exact : path.startsWith(r.uri.prefix ?? "")))
  );
}
