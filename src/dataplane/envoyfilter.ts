/**
 * Reads an Istio EnvoyFilter (networking.istio.io/v1alpha3) the way istiod and Envoy would apply it
 * to a proxy, keeping only what concerns the local rate limit: the `envoy.filters.http.local_ratelimit`
 * filters it inserts into the HTTP connection manager, the per-route config it merges into routes
 * (`typed_per_filter_config`) and the route `rate_limits` it appends. Patches that do not touch the
 * local rate limit are ignored; patches that do, in ways the model cannot follow, are errors.
 */
import { at, isObject, type JsonObject as Json } from "../api/json.ts";
import type { FieldError } from "../api/issues.ts";
import { PROXY_CONTEXTS, type ProxyContext } from "../api/mesh.ts";
import { RATELIMIT_FILTER, RATELIMIT_TYPE } from "../api/global_engine.ts";
import { HCM_TYPE, RATE_LIMITED_FLAG } from "../api/envoy.ts";
import { type GlobalRateLimit, loadGlobalRateLimit } from "./global_filter.ts";
import { DEFAULT_BEHAVIOUR, type EnvoyBehaviour } from "./envoy.ts";
import {
  loadLocalRateLimit,
  loadRouteRateLimits,
  LOCAL_RATELIMIT_FILTER,
  type LocalRateLimit,
  type RouteRateLimit,
  unwrapTyped,
} from "./envoyconfig.ts";

const HCM = "envoy.filters.network.http_connection_manager";
const ROUTER = "envoy.filters.http.router";

/** Which routes an HTTP_ROUTE patch reaches: Istio's `routeConfiguration.vhost.route.action`. */
export type RouteAction = "ANY" | "ROUTE" | "REDIRECT" | "DIRECT_RESPONSE";
const ROUTE_ACTIONS: readonly RouteAction[] = ["ANY", "ROUTE", "REDIRECT", "DIRECT_RESPONSE"];

/** One HTTP_ROUTE MERGE that touches the local rate limit. */
export interface RoutePatch {
  /** The route action it is restricted to; ANY (no route match) reaches every route. */
  action: RouteAction;
  /** The merge value as written: protobuf JSON of `envoy.config.route.v3.Route`. */
  value: Record<string, unknown>;
}

/** What an EnvoyFilter does to the local rate limit of proxies in one context. */
export interface ContextPatches {
  /** local_ratelimit filters inserted before the router, in order, with their listener-level config. */
  filters: LocalRateLimit[];
  /**
   * The per-route config merged into forwarding routes (the last merge wins, as proto map merges
   * do). Requests in the model take a forwarding route, so only merges that reach one count.
   */
  routeConfig?: LocalRateLimit;
  /** Route `rate_limits` entries appended to forwarding routes. */
  rateLimits: RouteRateLimit[];
  /** Every local-rate-limit route merge in order, for patching whole route configurations. */
  routePatches: RoutePatch[];
  /** Global rate limit filters (envoy.filters.http.ratelimit) inserted, in order. */
  globalFilters: GlobalRateLimit[];
  /**
   * The body the connection manager's local reply mapper gives a rate-limited local reply
   * (response flag RL), when a NETWORK_FILTER merge sets one: what a global refusal carries.
   */
  rateLimitedBody?: string;
}

/** An EnvoyFilter as the model reads it. */
export interface EnvoyFilterModel {
  namespace: string;
  name: string;
  creationTimestamp: string;
  priority: number;
  /** workloadSelector.labels; undefined selects every workload of the namespace. */
  selector?: Record<string, string>;
  contexts: Partial<Record<ProxyContext, ContextPatches>>;
}

/** An EnvoyFilter the model could read, or why a proxy would reject it. */
export type EnvoyFilterResult =
  | { ok: true; value: EnvoyFilterModel }
  | {
    ok: false;
    namespace: string;
    name: string;
    errors: FieldError[];
    /** The proxies it would reach: its selector, or null when it reaches none (not an EnvoyFilter). */
    selector: Record<string, string> | undefined | null;
  };

function contextsOf(context: unknown): ProxyContext[] {
  if (context === undefined || context === "ANY") return [...PROXY_CONTEXTS];
  return PROXY_CONTEXTS.filter((c) => c === context);
}

/** Where an HTTP_FILTER patch puts the filter relative to the router, or an error. */
function placement(patch: Json, match: unknown, path: string): FieldError | undefined {
  const listenerKeys = Object.keys(
    isObject(at(match, "listener")) ? at(match, "listener") as Json : {},
  );
  const filterName = at(match, "listener", "filterChain", "filter", "name");
  const subFilter = at(match, "listener", "filterChain", "filter", "subFilter", "name");
  if (
    listenerKeys.some((k) => k !== "filterChain") ||
    (filterName !== undefined && filterName !== HCM)
  ) {
    return {
      path: `${path}.match.listener`,
      message: "only a match on the HTTP connection manager is modelled",
    };
  }
  const op = patch.operation;
  if (op === "INSERT_FIRST" || op === "INSERT_BEFORE") return undefined;
  if (op === "INSERT_AFTER" && subFilter !== undefined && subFilter !== ROUTER) return undefined;
  if (op === "ADD" || op === "INSERT_AFTER") {
    return {
      path: `${path}.patch.operation`,
      message: `${String(op)} puts the filter after ${ROUTER}, which must be the last filter`,
    };
  }
  return {
    path: `${path}.patch.operation`,
    message: `${String(op)} of ${LOCAL_RATELIMIT_FILTER} is not modelled`,
  };
}

function emptyPatches(): ContextPatches {
  return { filters: [], rateLimits: [], routePatches: [], globalFilters: [] };
}

/**
 * The route action an HTTP_ROUTE match restricts to, or an error. Only the context and
 * `routeConfiguration.vhost.route.action` are modelled; a name or port match would need the
 * model to know route and listener names.
 */
function routeActionOf(match: unknown, path: string): RouteAction | FieldError {
  const unmodelled = (where: string): FieldError => ({
    path: `${path}.match${where}`,
    message:
      "only a context and a route action (routeConfiguration.vhost.route.action) match are modelled",
  });
  if (match === undefined) return "ANY";
  if (!isObject(match)) return unmodelled("");
  if (Object.keys(match).some((k) => k !== "context" && k !== "routeConfiguration")) {
    return unmodelled("");
  }
  const rc = match.routeConfiguration;
  if (rc === undefined) return "ANY";
  const only = (v: unknown, key: string) => isObject(v) && Object.keys(v).every((k) => k === key);
  if (!only(rc, "vhost")) return unmodelled(".routeConfiguration");
  const vhost = at(rc, "vhost");
  if (vhost === undefined) return "ANY";
  if (!only(vhost, "route")) return unmodelled(".routeConfiguration.vhost");
  const route = at(vhost, "route");
  if (route === undefined) return "ANY";
  if (!only(route, "action")) return unmodelled(".routeConfiguration.vhost.route");
  const action = at(route, "action") ?? "ANY";
  if (!ROUTE_ACTIONS.includes(action as RouteAction)) {
    return {
      path: `${path}.match.routeConfiguration.vhost.route.action`,
      message: `expected one of ${ROUTE_ACTIONS.join(", ")}`,
    };
  }
  return action as RouteAction;
}

/**
 * The body a connection manager merge's local reply mapper writes for a reply with response flag
 * RL (the first such mapper wins, as Envoy tries mappers in order); undefined when none.
 */
function rateLimitedBodyOf(typedConfig: unknown): string | undefined {
  if (at(typedConfig, "@type") !== HCM_TYPE) return undefined;
  const mappers = at(typedConfig, "local_reply_config", "mappers");
  if (!Array.isArray(mappers)) return undefined;
  for (const m of mappers) {
    const flags = at(m, "filter", "response_flag_filter", "flags");
    const body = at(m, "body", "inline_string");
    if (Array.isArray(flags) && flags.includes(RATE_LIMITED_FLAG) && typeof body === "string") {
      return body;
    }
  }
  return undefined;
}

/** Reads one configPatch into `out`; returns its errors. */
function readPatch(
  cp: unknown,
  path: string,
  out: Partial<Record<ProxyContext, ContextPatches>>,
  envoy: EnvoyBehaviour,
): FieldError[] {
  if (!isObject(cp)) return [{ path, message: "expected an object" }];
  const match = cp.match;
  const patch = isObject(cp.patch) ? cp.patch : {};
  const value = patch.value;
  const targets = contextsOf(at(match, "context"));
  const add = (f: (p: ContextPatches) => void) => {
    for (const c of targets) f(out[c] ??= emptyPatches());
  };
  if (cp.applyTo === "HTTP_FILTER" && at(value, "name") === LOCAL_RATELIMIT_FILTER) {
    const where = placement(patch, match, path);
    if (where) return [where];
    const typed = unwrapTyped(at(value, "typed_config"), `${path}.patch.value.typed_config`);
    if (!typed.ok) return typed.errors;
    const cfg = loadLocalRateLimit(typed.value, `${path}.patch.value.typed_config`, false, envoy);
    if (!cfg.ok) return cfg.errors;
    add((p) => p.filters.push(cfg.value));
    return [];
  }
  if (cp.applyTo === "HTTP_FILTER" && at(value, "name") === RATELIMIT_FILTER) {
    const where = placement(patch, match, path);
    if (where) return [where];
    const typedPath = `${path}.patch.value.typed_config`;
    const typed = unwrapTyped(at(value, "typed_config"), typedPath, RATELIMIT_TYPE);
    if (!typed.ok) return typed.errors;
    const errors: FieldError[] = [];
    // Inserted before the router: after the local filters inserted so far in its context.
    add((p) => {
      const cfg = loadGlobalRateLimit(typed.value, typedPath, p.filters.length);
      if (cfg.ok) p.globalFilters.push(cfg.value);
      else if (errors.length === 0) errors.push(...cfg.errors);
    });
    return errors;
  }
  if (cp.applyTo === "NETWORK_FILTER" && patch.operation === "MERGE") {
    const body = rateLimitedBodyOf(at(value, "typed_config"));
    if (body !== undefined) add((p) => (p.rateLimitedBody = body));
    return [];
  }
  if (cp.applyTo !== "HTTP_ROUTE") return [];
  const perFilter = at(value, "typed_per_filter_config", LOCAL_RATELIMIT_FILTER);
  if (at(value, "typed_per_filter_config", RATELIMIT_FILTER) !== undefined) {
    return [{
      path: `${path}.patch.value.typed_per_filter_config["${RATELIMIT_FILTER}"]`,
      message: "a per-route config of the global rate limit filter is not modelled",
    }];
  }
  const rateLimits = at(value, "route", "rate_limits");
  if (perFilter === undefined && rateLimits === undefined) return [];
  if (patch.operation !== "MERGE") {
    return [{
      path: `${path}.patch.operation`,
      message: "only MERGE of route rate limits is modelled",
    }];
  }
  const action = routeActionOf(match, path);
  if (typeof action !== "string") return [action];
  // A model request takes a forwarding route (action `route`): what reaches only redirect or
  // direct-response routes does not limit it (see route_config.ts for whole route configurations).
  const forwarding = action === "ANY" || action === "ROUTE";
  const errors: FieldError[] = [];
  if (perFilter !== undefined) {
    const cfgPath = `${path}.patch.value.typed_per_filter_config["${LOCAL_RATELIMIT_FILTER}"]`;
    const typed = unwrapTyped(perFilter, cfgPath);
    const cfg = typed.ok ? loadLocalRateLimit(typed.value, cfgPath, true, envoy) : typed;
    if (cfg.ok) {
      if (forwarding) add((p) => (p.routeConfig = cfg.value));
    } else errors.push(...cfg.errors);
  }
  if (rateLimits !== undefined) {
    const list = loadRouteRateLimits(rateLimits, `${path}.patch.value.route.rate_limits`);
    if (list.ok) {
      if (forwarding) add((p) => p.rateLimits.push(...list.value));
    } else errors.push(...list.errors);
  }
  if (errors.length === 0 && isObject(value)) add((p) => p.routePatches.push({ action, value }));
  return errors;
}

/** Reads an EnvoyFilter object as a proxy running `envoy` would; never throws. */
export function readEnvoyFilter(
  obj: unknown,
  envoy: EnvoyBehaviour = DEFAULT_BEHAVIOUR,
): EnvoyFilterResult {
  const namespace = String(at(obj, "metadata", "namespace") ?? "");
  const name = String(at(obj, "metadata", "name") ?? "");
  let reach: Record<string, string> | undefined | null = null;
  const fail = (errors: FieldError[]): EnvoyFilterResult => ({
    ok: false,
    namespace,
    name,
    errors,
    selector: reach,
  });
  if (
    at(obj, "kind") !== "EnvoyFilter" || at(obj, "apiVersion") !== "networking.istio.io/v1alpha3"
  ) {
    return fail([{
      path: "kind",
      message: "expected an EnvoyFilter of networking.istio.io/v1alpha3",
    }]);
  }
  const spec = at(obj, "spec");
  const selector = at(spec, "workloadSelector", "labels");
  if (
    selector !== undefined &&
    (!isObject(selector) || Object.values(selector).some((v) => typeof v !== "string"))
  ) {
    return fail([{ path: "spec.workloadSelector.labels", message: "expected a map of strings" }]);
  }
  reach = selector as Record<string, string> | undefined;
  if (at(spec, "targetRefs") !== undefined) {
    return fail([{ path: "spec.targetRefs", message: "targetRefs are not modelled" }]);
  }
  const patches = at(spec, "configPatches");
  const contexts: Partial<Record<ProxyContext, ContextPatches>> = {};
  const errors: FieldError[] = [];
  (Array.isArray(patches) ? patches : []).forEach((cp, i) => {
    errors.push(...readPatch(cp, `spec.configPatches[${i}]`, contexts, envoy));
  });
  if (errors.length > 0) return fail(errors);
  const priority = at(spec, "priority");
  return {
    ok: true,
    value: {
      namespace,
      name,
      creationTimestamp: String(at(obj, "metadata", "creationTimestamp") ?? ""),
      priority: typeof priority === "number" ? priority : 0,
      selector: selector as Record<string, string> | undefined,
      contexts,
    },
  };
}

/** What `readEnvoyFilterOnce` read, by frozen object and Envoy. */
const readFilters = new WeakMap<object, Map<EnvoyBehaviour, EnvoyFilterResult>>();

/**
 * `readEnvoyFilter`, read once for a frozen object (which cannot change): the mesh reads every
 * filter at every sync, and most syncs follow a Pod change. The result is shared: do not change it.
 */
export function readEnvoyFilterOnce(
  obj: unknown,
  envoy: EnvoyBehaviour = DEFAULT_BEHAVIOUR,
): EnvoyFilterResult {
  if (obj === null || typeof obj !== "object" || !Object.isFrozen(obj)) {
    return readEnvoyFilter(obj, envoy);
  }
  let byEnvoy = readFilters.get(obj);
  if (!byEnvoy) readFilters.set(obj, byEnvoy = new Map());
  let r = byEnvoy.get(envoy);
  if (!r) byEnvoy.set(envoy, r = readEnvoyFilter(obj, envoy));
  return r;
}
