/**
 * The project's Envoy model (src/dataplane) run on the config a proxy RECEIVED from istiod, as the
 * proxy stand-in holds it (protobuf JSON with the protos' field names, like Envoy's config_dump),
 * not on the operator's own rendering: the listener a request enters, the local rate limit filters
 * of its HTTP connection manager, the route the request takes (the virtual host by its domains,
 * then the first route whose match matches) with the per-filter config in force there (route, else
 * virtual host, else route configuration, as Envoy takes the most specific) and the route's
 * `rate_limits`. Each piece is loaded by the model's own loaders (src/dataplane/envoyconfig.ts), as
 * strictly as the preview loads an EnvoyFilter.
 *
 * What would change an answer and is not read here (header or regex route matches, virtual host
 * rate limits, a per-filter config wrapped in a FilterConfig, several HTTP chains that differ) is
 * refused with an error naming it, never skipped.
 */
import { isObject, type JsonObject } from "../../src/api/json.ts";
import { errorLines } from "../../src/api/issues.ts";
import { LOCAL_RATELIMIT_FILTER } from "../../src/api/envoy.ts";
import {
  type Loaded,
  loadLocalRateLimit,
  loadRouteRateLimits,
  type LocalRateLimit,
  type RouteRateLimit,
  unwrapTyped,
} from "../../src/dataplane/envoyconfig.ts";
import {
  decide,
  type Decision,
  type EnvoyBehaviour,
  newProxyState,
  type ProxyConfig,
  type ProxyState,
  type Request,
} from "../../src/dataplane/mod.ts";
import type { ConfigView } from "../../tools/istio-check/proxy-standin/mod.ts";

const HCM = "envoy.filters.network.http_connection_manager";

/** What Envoy's router would do once the rate limit filters let a request through. */
export type RouteKind = "route" | "redirect" | "direct_response";

/** The model's answer on the received config, and the route that took the request. */
export interface ReceivedAnswer {
  /** The route's name (Istio names it after the VirtualService's http route, or `default`). */
  route: string;
  kind: RouteKind;
  /** The local rate limit decision; its status is the router's when nothing refused it. */
  decision: Decision;
}

/** Where requests enter: a listener, and for one of several HTTP chains, the destination port. */
export interface Entry {
  listener: string;
  port?: number;
}

const list = (v: unknown): unknown[] => Array.isArray(v) ? v : [];
const obj = (v: unknown): JsonObject => isObject(v) ? v : {};

function loaded<T>(r: Loaded<T>, what: string): T {
  if (!r.ok) {
    throw new Error(`the model cannot read ${what}: ${errorLines(r.errors).join("; ")}`);
  }
  return r.value;
}

/** The local rate limit config at `at` (a typed_per_filter_config or typed_config value). */
function localRateLimit(value: unknown, path: string, perRoute: boolean, envoy: EnvoyBehaviour) {
  const typed = loaded(unwrapTyped(value, path), path);
  return loaded(loadLocalRateLimit(typed, path, perRoute, envoy), path);
}

/** The plaintext HTTP/1.1 connection manager of `entry`; exactly one must match. */
function connectionManager(view: ConfigView, entry: Entry): JsonObject {
  const listener = view.listeners.find((l) => l.name === entry.listener);
  if (!listener) throw new Error(`the proxy holds no listener ${entry.listener}`);
  const chains = list(listener.filter_chains).map(obj).filter((fc) => {
    const m = obj(fc.filter_chain_match);
    const protocols = list(m.application_protocols);
    return list(fc.filters).some((f) => obj(f).name === HCM) &&
      (entry.port === undefined || m.destination_port === entry.port) &&
      (m.transport_protocol === undefined || m.transport_protocol === "raw_buffer") &&
      (protocols.length === 0 || protocols.includes("http/1.1"));
  });
  if (chains.length !== 1) {
    throw new Error(
      `${entry.listener}${entry.port ? ` port ${entry.port}` : ""}: ${chains.length} plaintext ` +
        `HTTP/1.1 chains, not one`,
    );
  }
  return obj(list(chains[0].filters).map(obj).find((f) => f.name === HCM)?.typed_config);
}

const MATCH_READ = new Set(["prefix", "path", "case_sensitive"]);
const REDIRECT_CODES: Record<string, number> = {
  MOVED_PERMANENTLY: 301,
  FOUND: 302,
  SEE_OTHER: 303,
  TEMPORARY_REDIRECT: 307,
  PERMANENT_REDIRECT: 308,
};

/** Envoy's route match on `prefix` or `path` (the path without its query). */
function matches(route: JsonObject, path: string): boolean {
  const m = obj(route.match);
  const unread = Object.keys(m).filter((k) => !MATCH_READ.has(k));
  if (unread.length > 0) throw new Error(`route ${route.name}: match on ${unread.join(", ")}`);
  const folded = m.case_sensitive === false;
  const p = folded ? path.toLowerCase() : path;
  const want = (s: unknown) => folded ? String(s).toLowerCase() : String(s);
  if (typeof m.path === "string") return p === want(m.path);
  if (typeof m.prefix === "string") return p.startsWith(want(m.prefix));
  throw new Error(`route ${route.name}: neither prefix nor path`);
}

/** The virtual host for `host`: an exact domain, else the longest `*.suffix`, else `*`. */
function virtualHost(routeConfig: JsonObject, host: string): JsonObject | undefined {
  const vhosts = list(routeConfig.virtual_hosts).map(obj);
  const h = host.toLowerCase().replace(/:\d+$/, "");
  const domains = (vh: JsonObject) => list(vh.domains).map((d) => String(d).toLowerCase());
  for (const vh of vhosts) {
    if (domains(vh).some((d) => d.endsWith("*") && d !== "*")) {
      throw new Error(`virtual host ${vh.name}: prefix wildcard domains are not read`);
    }
  }
  const exact = vhosts.find((vh) => domains(vh).includes(h));
  if (exact) return exact;
  let best: JsonObject | undefined;
  let length = 0;
  for (const vh of vhosts) {
    for (const d of domains(vh)) {
      if (d.startsWith("*") && d !== "*" && h.endsWith(d.slice(1)) && d.length > length) {
        best = vh;
        length = d.length;
      }
    }
  }
  return best ?? vhosts.find((vh) => domains(vh).includes("*"));
}

/**
 * One proxy's model on its received config. Routes with the same per-route config and rate
 * limits share a model state, each route entry with its own buckets (Envoy builds the per-route
 * config once a route entry); listener-level buckets would be shared by all routes, so routes
 * whose configs differ are refused while a listener-level config has a bucket.
 */
export class ReceivedProxy {
  readonly #filters: LocalRateLimit[];
  readonly #routeConfig: JsonObject;
  readonly #envoy: EnvoyBehaviour;
  readonly #router: boolean;
  readonly #states = new Map<string, ProxyState>();

  /**
   * The model of the proxy holding `view`, entered at `entry`, running `envoy`; `router`: a
   * gateway (it trusts the connection's peer as the client), else a sidecar.
   */
  constructor(view: ConfigView, entry: Entry, envoy: EnvoyBehaviour, router: boolean) {
    const hcm = connectionManager(view, entry);
    this.#envoy = envoy;
    this.#router = router;
    this.#filters = list(hcm.http_filters).map(obj).flatMap((f, i) =>
      f.name === LOCAL_RATELIMIT_FILTER
        ? [localRateLimit(f.typed_config, `http_filters[${i}].typed_config`, false, envoy)]
        : []
    );
    const inline = hcm.route_config;
    const rdsName = obj(hcm.rds).route_config_name;
    const routeConfig = isObject(inline)
      ? inline
      : view.routes.find((r) => typeof rdsName === "string" && r.name === rdsName);
    if (!routeConfig) throw new Error(`${entry.listener}: no route configuration ${rdsName}`);
    this.#routeConfig = routeConfig;
  }

  /** The local rate limit filters of the connection manager, as the model loaded them. */
  get filters(): readonly LocalRateLimit[] {
    return this.#filters;
  }

  /** The route `request` takes and the per-filter config and rate limits in force there. */
  route(request: Request): { route: JsonObject; config: ProxyConfig } {
    const headers = Object.entries(request.headers ?? {});
    const host = headers.find(([k]) => k.toLowerCase() === "host")?.[1] ?? "";
    const vh = virtualHost(this.#routeConfig, host);
    if (!vh) throw new Error(`no virtual host for ${JSON.stringify(host)}`);
    if (vh.rate_limits !== undefined) throw new Error(`virtual host ${vh.name}: rate_limits`);
    const path = request.path.replace(/[?#].*$/, "");
    const route = list(vh.routes).map(obj).find((r) => matches(r, path));
    if (!route) throw new Error(`no route of ${vh.name} for ${request.path}`);
    const at = [route, vh, this.#routeConfig].find((o) =>
      obj(o.typed_per_filter_config)[LOCAL_RATELIMIT_FILTER] !== undefined
    );
    const routeConfig = at &&
      localRateLimit(
        obj(at.typed_per_filter_config)[LOCAL_RATELIMIT_FILTER],
        `${at.name}.typed_per_filter_config`,
        true,
        this.#envoy,
      );
    const rateLimits: RouteRateLimit[] = route.route === undefined ? [] : loaded(
      loadRouteRateLimits(obj(route.route).rate_limits ?? [], `${route.name}.route.rate_limits`),
      `the rate_limits of route ${route.name}`,
    );
    return {
      route,
      config: {
        filters: this.#filters,
        ...(routeConfig ? { routeConfig } : {}),
        rateLimits,
        // What the proxies received is read for the local filter only: the samples it runs on
        // have no global part (the global filter's reading is tests/dataplane/global_test.ts's).
        globalFilters: [],
        sources: [`received ${route.name}`],
      },
    };
  }

  /** Sends `request` at `nowMs` (ms since the config was applied): the model's answer. */
  send(request: Request, nowMs: number): ReceivedAnswer {
    const { route, config } = this.route(request);
    const key = JSON.stringify([config.routeConfig ?? null, config.rateLimits]);
    let state = this.#states.get(key);
    if (!state) {
      if (this.#states.size > 0 && this.#filters.some((f) => f.tokenBucket)) {
        throw new Error("routes of different configs under a listener-level bucket");
      }
      state = newProxyState(config, 0, this.#envoy, this.#router);
      this.#states.set(key, state);
    }
    const name = String(route.name ?? "");
    const decision = decide(state, request, nowMs, name);
    const kind: RouteKind = route.route !== undefined
      ? "route"
      : route.redirect !== undefined
      ? "redirect"
      : route.direct_response !== undefined
      ? "direct_response"
      : (() => {
        throw new Error(`route ${name}: no action the model reads`);
      })();
    if (decision.rejected || kind === "route") return { route: name, kind, decision };
    // Nothing refused it: the router answers with the redirect or the direct response.
    const status = kind === "redirect"
      ? REDIRECT_CODES[String(obj(route.redirect).response_code ?? "MOVED_PERMANENTLY")]
      : Number(obj(route.direct_response).status);
    return { route: name, kind, decision: { ...decision, status } };
  }
}
