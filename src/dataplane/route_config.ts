/**
 * Whole route configurations (`envoy.config.route.v3.RouteConfiguration`, protobuf JSON): how
 * istiod applies the HTTP_ROUTE merges of EnvoyFilters to every route of every virtual host
 * (`pilot/pkg/networking/core/envoyfilter/rc_patch.go`: patchHTTPRoute, routeMatch), and the
 * checks Envoy makes of each route's action when it loads the configuration. A proxy model
 * request always takes a forwarding route; this is where redirect and direct-response routes,
 * which a gateway or sidecar also has, are looked at.
 */
import { isObject, type JsonObject as Json } from "../api/json.ts";
import type { FieldError } from "../api/issues.ts";
import type { ProxyContext } from "../api/mesh.ts";
import type { EnvoyFilterModel, RouteAction, RoutePatch } from "./envoyfilter.ts";

/** The members of Route's `action` oneof (route_components.proto). */
const ACTION_FIELDS = [
  "route",
  "redirect",
  "direct_response",
  "filter_action",
  "non_forwarding_action",
] as const;

/** The members of RouteAction's `cluster_specifier` oneof, one of which is required. */
const CLUSTER_SPECIFIERS = [
  "cluster",
  "cluster_header",
  "weighted_clusters",
  "cluster_specifier_plugin",
  "inline_cluster_specifier_plugin",
];

/** Proto map fields of Route: a merge replaces each key's value, it does not merge into it. */
const MAP_FIELDS = new Set(["typed_per_filter_config"]);

/**
 * Istio's routeMatch for an action restriction: a route whose action is `route`, `redirect` or
 * `direct_response` is reached only by that action (or ANY); a route with any other action is
 * reached by every restriction, as in istiod.
 */
export function routeReached(route: Json, action: RouteAction): boolean {
  if (action === "ANY") return true;
  if (route.route !== undefined) return action === "ROUTE";
  if (route.redirect !== undefined) return action === "REDIRECT";
  if (route.direct_response !== undefined) return action === "DIRECT_RESPONSE";
  return true;
}

/**
 * Protobuf merge in JSON form (what `proto.Merge` does to a Route): messages merge field by
 * field, repeated fields append, map fields replace per key, scalars replace. Setting one member
 * of the action oneof clears the others.
 */
function mergeMessage(dst: Json, src: Json, top: boolean): Json {
  const out: Json = { ...dst };
  for (const [k, v] of Object.entries(src)) {
    if (top && (ACTION_FIELDS as readonly string[]).includes(k)) {
      for (const other of ACTION_FIELDS) if (other !== k) delete out[other];
    }
    const cur = out[k];
    if (top && MAP_FIELDS.has(k) && isObject(cur) && isObject(v)) {
      out[k] = { ...cur, ...structuredClone(v) };
    } else if (Array.isArray(cur) && Array.isArray(v)) {
      out[k] = [...cur, ...structuredClone(v)];
    } else if (isObject(cur) && isObject(v)) {
      out[k] = mergeMessage(cur, v, false);
    } else {
      out[k] = structuredClone(v);
    }
  }
  return out;
}

/** The route merges of `filters` (in Istio's order of application) for one context. */
function patchesOf(filters: readonly EnvoyFilterModel[], context: ProxyContext): RoutePatch[] {
  return filters.flatMap((f) => f.contexts[context]?.routePatches ?? []);
}

/**
 * A copy of `routeConfiguration` with the local-rate-limit route merges of `filters` applied to
 * every route they reach, as istiod applies HTTP_ROUTE MERGE patches. The input is not changed.
 */
export function patchRouteConfiguration(
  filters: readonly EnvoyFilterModel[],
  context: ProxyContext,
  routeConfiguration: Json,
): Json {
  const patches = patchesOf(filters, context);
  const out = structuredClone(routeConfiguration);
  const vhosts = Array.isArray(out.virtual_hosts) ? out.virtual_hosts : [];
  for (const vh of vhosts) {
    if (!isObject(vh) || !Array.isArray(vh.routes)) continue;
    vh.routes = vh.routes.map((route: unknown) => {
      if (!isObject(route)) return route;
      let r = route;
      // Each patch is matched against the route as the previous patches left it (istiod's loop).
      for (const p of patches) if (routeReached(r, p.action)) r = mergeMessage(r, p.value, true);
      return r;
    });
  }
  return out;
}

/**
 * What Envoy refuses in the routes of a route configuration, as its config validation does
 * (`Route.action` is a required oneof, and a RouteAction needs a cluster specifier). One bad
 * route makes Envoy reject the whole configuration (a NACK), so every route is checked.
 */
export function routeConfigurationErrors(routeConfiguration: Json): FieldError[] {
  const errors: FieldError[] = [];
  const vhosts = Array.isArray(routeConfiguration.virtual_hosts)
    ? routeConfiguration.virtual_hosts
    : [];
  vhosts.forEach((vh: unknown, i: number) => {
    const routes = isObject(vh) && Array.isArray(vh.routes) ? vh.routes : [];
    routes.forEach((route: unknown, j: number) => {
      const path = `virtual_hosts[${i}].routes[${j}]`;
      if (!isObject(route)) {
        errors.push({ path, message: "expected a Route" });
        return;
      }
      const actions = ACTION_FIELDS.filter((f) => route[f] !== undefined);
      if (actions.length !== 1) {
        errors.push({
          path,
          message: actions.length === 0
            ? "a route needs an action (route, redirect, direct_response, ...)"
            : `a route has one action, this one has ${actions.join(" and ")}`,
        });
        return;
      }
      if (actions[0] === "route") {
        const action = route.route;
        if (!isObject(action) || !CLUSTER_SPECIFIERS.some((k) => action[k] !== undefined)) {
          errors.push({
            path: `${path}.route`,
            message: "a route action needs a cluster specifier (cluster, weighted_clusters, ...)",
          });
        }
      }
    });
  });
  return errors;
}
