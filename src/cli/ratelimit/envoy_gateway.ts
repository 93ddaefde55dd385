/**
 * Envoy Gateway's BackendTrafficPolicy (`gateway.envoyproxy.io/v1alpha1`) with global rate limit
 * rules as this project's RateLimit with `spec.global` (docs/migration-envoy-gateway.md): what maps
 * is converted, what does not is refused naming the field. The facts about Envoy Gateway come from
 * its API (envoyproxy/gateway `api/v1alpha1/ratelimit_types.go` and
 * `backendtrafficpolicy_types.go`, as of its main branch of 2026-08, after v1.7's query parameter
 * match) and its translator (`internal/xds/translator/ratelimit.go`). Pure: object in, object out.
 */
import { GATEWAY_GROUP } from "../../api/groups.ts";
import { show } from "../../api/issues.ts";
import { didYouMean } from "../../api/suggest.ts";
import { HTTP_METHODS } from "../../api/ratelimit_bounds.ts";
import { objectFieldProblems, unknownKeys } from "./fields.ts";

/** The apiVersion of Envoy Gateway's BackendTrafficPolicy. */
export const ENVOY_GATEWAY_API_VERSION = "gateway.envoyproxy.io/v1alpha1";
/** Its kind. */
export const BACKEND_TRAFFIC_POLICY = "BackendTrafficPolicy";

/**
 * The label Istio's Gateway API deployment controller puts on the Pods of the gateway it runs for
 * a Gateway (the Gateway's name), in the Gateway's namespace.
 */
export const GATEWAY_NAME_LABEL = "gateway.networking.k8s.io/gateway-name";

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => v !== null && typeof v === "object" && !Array.isArray(v);

/** The converted RateLimit and what behaves differently, or why it cannot be carried over. */
export type GatewayConversion =
  | { ok: true; rateLimit: Obj; differences: string[] }
  | { ok: false; problems: string[] };

/** True when `doc` is an Envoy Gateway BackendTrafficPolicy (its apiVersion and kind). */
export function isBackendTrafficPolicy(doc: unknown): boolean {
  return isObj(doc) && doc.apiVersion === ENVOY_GATEWAY_API_VERSION &&
    doc.kind === BACKEND_TRAFFIC_POLICY;
}

/** Envoy Gateway's units that the engine's windows here have (Month and Year do not). */
const UNITS = ["Second", "Minute", "Hour", "Day"];

/** A match on every client address: sourceCIDR Distinct over the whole IPv4 or IPv6 space. */
const EVERY_ADDRESS = ["0.0.0.0/0", "::/0"];

/** The fields of a policy's spec that are about rate limits (the others are refused). */
const SPEC_FIELDS = ["targetRef", "targetRefs", "targetSelectors", "rateLimit"];

/** The route kinds whose traffic is HTTP (rate limits here are HTTP's). */
const HTTP_ROUTES = ["HTTPRoute", "GRPCRoute"];

/** The values of a rule's `xRateLimitHeaders` (Envoy Gateway's XRateLimitHeadersOption). */
const X_RATELIMIT: unknown[] = ["Off", "DraftVersion03"];

/** The only group of a policy's targets (Envoy Gateway's CRD refuses any other). */
const GATEWAY_API_GROUP = "gateway.networking.k8s.io";

/** The fields of a client selector, of which Envoy Gateway's CRD requires at least one. */
const SELECTOR_FIELDS = ["headers", "methods", "path", "sourceCIDR", "queryParams"];

interface Match {
  path?: string;
  pathPrefix?: string;
  methods?: string[];
  headers?: Record<string, string>;
  perClient?: { header: string } | { clientIP: true };
}

/**
 * One rule's clientSelectors (all must hold) as one match, or problems naming fields; what
 * behaves differently goes to `notes`.
 */
function matchOf(selectors: unknown[], at: string, problems: string[], notes: string[]): Match {
  const m: Match = {};
  const setClient = (c: NonNullable<Match["perClient"]>, where: string) => {
    if (m.perClient) {
      problems.push(`${where}: a second distinct client key; a rule here has one (perClient)`);
    } else m.perClient = c;
  };
  selectors.forEach((s, j) => {
    const where = `${at}.clientSelectors[${j}]`;
    if (!isObj(s)) return void problems.push(`${where}: not an object`);
    problems.push(...unknownKeys(s, SELECTOR_FIELDS, where));
    if (!SELECTOR_FIELDS.some((f) => s[f] !== undefined)) {
      // Not every request: Envoy Gateway's CRD refuses such a selector, so it never held one.
      problems.push(
        `${where}: none of headers, methods, path, sourceCIDR or queryParams; Envoy Gateway refuses an empty client selector (a rule for every request has no clientSelectors)`,
      );
    }
    if (s.methods !== undefined) methodsOf(s.methods, `${where}.methods`, m, problems);
    if (s.queryParams !== undefined) {
      problems.push(
        `${where}.queryParams: no equivalent: a rule here does not match query parameters (an exact path ignores the query string; a path prefix takes it as characters)`,
      );
    }
    if (s.path !== undefined) {
      if (!isObj(s.path)) return void problems.push(`${where}.path: not an object`);
      const p = s.path;
      problems.push(...unknownKeys(p, ["type", "value", "invert"], `${where}.path`));
      const type = p.type ?? "PathPrefix";
      // Envoy Gateway's CRD defaults a path's value to /, every path, as the API server fills it.
      if (p.value !== undefined && typeof p.value !== "string") {
        return void problems.push(`${where}.path.value: not a string`);
      }
      const value = p.value ?? "/";
      if (p.invert === true) {
        problems.push(`${where}.path.invert: an inverted path has no match here`);
      } else if (type === "Exact" || (type === "PathPrefix" && value !== "/")) {
        const [key, other] = type === "Exact"
          ? ["path", "pathPrefix"] as const
          : ["pathPrefix", "path"] as const;
        if (m[other] !== undefined || (m[key] !== undefined && m[key] !== value)) {
          problems.push(`${where}.path: a second path; a rule here has one`);
        } else {
          m[key] = value;
          if (key === "pathPrefix") {
            notes.push(
              `${where}.path: PathPrefix ${value} becomes pathPrefix ${value}, which compares characters: ${
                value.endsWith("/")
                  ? `it does not take ${value.slice(0, -1)} itself`
                  : `it takes ${value}x too (write ${value}/ to keep to whole segments)`
              }; Envoy Gateway compares whole path segments`,
            );
          }
        }
      } else if (type === "PathPrefix") {
        // PathPrefix /: every path, no path match.
      } else {
        problems.push(
          `${where}.path: ${
            String(type)
          } ${value} has no equivalent: a path here is matched exactly (type Exact) or by its start (type PathPrefix)`,
        );
      }
    }
    if (s.headers !== undefined) {
      if (!Array.isArray(s.headers)) return void problems.push(`${where}.headers: not a list`);
      s.headers.forEach((h, k) => {
        const hw = `${where}.headers[${k}]`;
        if (!isObj(h)) return void problems.push(`${hw}: not an object`);
        problems.push(...unknownKeys(h, ["type", "name", "value", "invert"], hw));
        if (typeof h.name !== "string") return void problems.push(`${hw}.name: missing`);
        const type = h.type ?? "Exact";
        if (h.invert === true) {
          return void problems.push(`${hw}.invert: an inverted header has no match here`);
        }
        if (type === "Distinct") return setClient({ header: h.name }, `${hw}.type`);
        if (type !== "Exact") {
          return void problems.push(
            `${hw}.type: ${String(type)} has no equivalent: headers here match exact values`,
          );
        }
        if (typeof h.value !== "string") return void problems.push(`${hw}.value: missing`);
        m.headers = { ...m.headers, [h.name]: h.value };
      });
    }
    if (s.sourceCIDR !== undefined) {
      const c = isObj(s.sourceCIDR) ? s.sourceCIDR : {};
      problems.push(...unknownKeys(c, ["type", "value", "invert"], `${where}.sourceCIDR`));
      const type = c.type ?? "Exact";
      if (c.invert === true) {
        problems.push(`${where}.sourceCIDR.invert: an inverted address range has no match here`);
      } else if (type === "Distinct" && EVERY_ADDRESS.includes(String(c.value))) {
        setClient({ clientIP: true }, `${where}.sourceCIDR`);
      } else {
        problems.push(
          `${where}.sourceCIDR: ${String(type)} ${
            String(c.value)
          } has no equivalent: only Distinct over 0.0.0.0/0 or ::/0 (each client address counted apart: perClient.clientIP) maps`,
        );
      }
    }
  });
  return m;
}

/**
 * A selector's methods (any one of them) into `m.methods`: with methods from an earlier selector
 * of the rule, the methods both take, since all of a rule's selectors must hold.
 */
function methodsOf(methods: unknown, at: string, m: Match, problems: string[]): void {
  if (!Array.isArray(methods)) return void problems.push(`${at}: not a list`);
  const values = new Set<string>();
  methods.forEach((x, k) => {
    const mw = `${at}[${k}]`;
    if (!isObj(x)) return void problems.push(`${mw}: not an object`);
    problems.push(...unknownKeys(x, ["value", "invert"], mw));
    if (x.invert === true) {
      return void problems.push(`${mw}.invert: an inverted method has no match here`);
    }
    if (!(HTTP_METHODS as readonly unknown[]).includes(x.value)) {
      // Envoy Gateway's CRD takes Gateway API's HTTPMethod, the same nine.
      return void problems.push(
        `${mw}.value: ${show(x.value)} is not one of ${HTTP_METHODS.join(", ")}`,
      );
    }
    values.add(x.value as string);
  });
  if (values.size === 0) return;
  const listed = m.methods === undefined ? [...values] : m.methods.filter((x) => values.has(x));
  if (listed.length === 0) {
    return void problems.push(
      `${at}: no method in common with the rule's other selectors; the rule would match nothing`,
    );
  }
  m.methods = listed;
}

/** The RateLimit's selector for the policy's one target, or problems naming fields. */
function selectorOf(
  spec: Obj,
  problems: string[],
  notes: string[],
): Record<string, string> | undefined {
  if (spec.targetSelectors !== undefined) {
    problems.push("spec.targetSelectors: a RateLimit selects Pods by labels; name one target");
    return undefined;
  }
  if (spec.targetRef !== undefined && spec.targetRefs !== undefined) {
    problems.push(
      "spec.targetRef: given with spec.targetRefs; Envoy Gateway takes one of them (name the target in targetRefs)",
    );
    return undefined;
  }
  if (spec.targetRefs !== undefined && !Array.isArray(spec.targetRefs)) {
    problems.push("spec.targetRefs: not a list");
    return undefined;
  }
  const refs = Array.isArray(spec.targetRefs)
    ? spec.targetRefs.map((r, i) => ({ r, at: `spec.targetRefs[${i}]` }))
    : spec.targetRef !== undefined
    ? [{ r: spec.targetRef, at: "spec.targetRef" }]
    : [];
  if (refs.length !== 1) {
    problems.push(
      `spec.targetRefs: ${refs.length} targets; a RateLimit holds the limits of one workload: convert one policy a target`,
    );
    return undefined;
  }
  const { r, at } = refs[0];
  if (isObj(r)) {
    problems.push(...unknownKeys(r, ["group", "kind", "name", "sectionName"], at));
    if (r.sectionName !== undefined) {
      problems.push(
        `${at}.sectionName: not supported: a RateLimit limits all of a route's or gateway's Pods, not a section of it`,
      );
    }
    if (r.group !== GATEWAY_API_GROUP) {
      problems.push(
        `${at}.group: ${
          r.group === undefined ? "missing" : show(r.group)
        }: Envoy Gateway's policies target ${GATEWAY_API_GROUP}'s Gateways and routes only`,
      );
    }
  }
  const kind = isObj(r) ? r.kind : undefined;
  const name = isObj(r) && typeof r.name === "string" ? r.name : undefined;
  if (name === undefined) {
    problems.push(`${at}.name: missing`);
    return undefined;
  }
  if (kind === "Gateway") {
    notes.push(
      `${at}: Gateway ${name}: the RateLimit selects its Pods by the label ${GATEWAY_NAME_LABEL}: ${name} that Istio's Gateway API deployment gives them; each route of the gateway is counted apart, as under Envoy Gateway`,
    );
    return { [GATEWAY_NAME_LABEL]: name };
  }
  if (typeof kind === "string" && HTTP_ROUTES.includes(kind)) {
    notes.push(
      `${at}: ${kind} ${name}: a RateLimit limits the Pods behind a route, selected by labels; selectorLabels app: ${name} is a guess: set the labels of the Pods the route's backends run on`,
    );
    return { app: name };
  }
  problems.push(
    `${at}.kind: ${String(kind)}: rate limits here are HTTP's (Gateway, HTTPRoute, GRPCRoute)`,
  );
  return undefined;
}

/** Envoy Gateway's BackendTrafficPolicy `doc` as this project's RateLimit, or why it cannot be. */
export function fromBackendTrafficPolicy(doc: Obj): GatewayConversion {
  const problems: string[] = objectFieldProblems(doc);
  const notes: string[] = [];
  const spec = isObj(doc.spec) ? doc.spec : {};
  for (const k of Object.keys(spec)) {
    if (!SPEC_FIELDS.includes(k)) {
      problems.push(
        `spec.${k}: not a rate limit; a RateLimit carries rate limits only${
          didYouMean(k, SPEC_FIELDS.filter((f) => !Object.hasOwn(spec, f)))
        }`,
      );
    }
  }
  const rl = isObj(spec.rateLimit) ? spec.rateLimit : undefined;
  if (rl === undefined) {
    return { ok: false, problems: [...problems, "spec.rateLimit: missing: nothing to convert"] };
  }
  const selector = selectorOf(spec, problems, notes);
  problems.push(...unknownKeys(rl, ["type", "global", "local"], "spec.rateLimit"));
  if (rl.type !== undefined && rl.type !== "Global" && rl.type !== "Local") {
    problems.push(`spec.rateLimit.type: ${show(rl.type)} is not Global or Local`);
  }
  if (rl.local !== undefined || rl.type === "Local") {
    problems.push(
      "spec.rateLimit.local: local rules are not converted: write spec.local (token buckets, docs/ratelimit.md) by hand; Envoy Gateway applies the strictest matching local rule, this project the first",
    );
  }
  const global = isObj(rl.global) ? rl.global : undefined;
  if (global === undefined) {
    if (rl.local === undefined) problems.push("spec.rateLimit.global: missing: no global rules");
    return { ok: false, problems };
  }
  problems.push(...unknownKeys(global, ["rules"], "spec.rateLimit.global"));
  if (!Array.isArray(global.rules)) {
    problems.push("spec.rateLimit.global.rules: missing or not a list");
    return { ok: false, problems };
  }
  if (global.rules.length === 0) {
    problems.push("spec.rateLimit.global.rules: empty: no rules, nothing to convert");
    return { ok: false, problems };
  }
  const rules = global.rules;
  const out: Obj[] = [];
  let def: Obj | undefined;
  const shadow: boolean[] = [];
  const headers: unknown[] = [];
  rules.forEach((rule, i) => {
    const at = `spec.rateLimit.global.rules[${i}]`;
    if (!isObj(rule)) return void problems.push(`${at}: not an object`);
    problems.push(
      ...unknownKeys(
        rule,
        ["clientSelectors", "limit", "cost", "shared", "shadowMode", "xRateLimitHeaders"],
        at,
      ),
    );
    if (rule.cost !== undefined) {
      problems.push(`${at}.cost: every request counts 1 here; there is no cost`);
    }
    if (rule.shared !== undefined && rule.shared !== false) {
      problems.push(
        `${at}.shared: not supported: a RateLimit counts each route of a gateway apart; no counter is shared across targets`,
      );
    }
    shadow.push(rule.shadowMode === true);
    if (rule.xRateLimitHeaders !== undefined && !X_RATELIMIT.includes(rule.xRateLimitHeaders)) {
      problems.push(
        `${at}.xRateLimitHeaders: ${show(rule.xRateLimitHeaders)} is not Off or DraftVersion03`,
      );
    }
    headers.push(rule.xRateLimitHeaders);
    const limit = isObj(rule.limit) ? rule.limit : {};
    problems.push(...unknownKeys(limit, ["requests", "unit", "fromMetadata"], `${at}.limit`));
    if (limit.fromMetadata !== undefined) {
      problems.push(
        `${at}.limit.fromMetadata: not supported: a limit here is the RateLimit's, not read from each request's metadata`,
      );
    }
    if (limit.requests === 0) {
      problems.push(
        `${at}.limit.requests: 0 (every request refused) has no equivalent: a limit here admits at least 1 a window`,
      );
    }
    if (!UNITS.includes(String(limit.unit))) {
      problems.push(
        `${at}.limit.unit: ${
          String(limit.unit)
        } has no equivalent: windows here are a Second, Minute, Hour or Day`,
      );
    }
    const converted = { requests: limit.requests, unit: limit.unit };
    const selectors = rule.clientSelectors ?? [];
    if (!Array.isArray(selectors)) return void problems.push(`${at}.clientSelectors: not a list`);
    const before = problems.length;
    const m = matchOf(selectors, at, problems, notes);
    if (problems.length > before) return;
    if (
      m.path === undefined && m.pathPrefix === undefined && m.methods === undefined &&
      m.headers === undefined && m.perClient === undefined
    ) {
      // Every request of the target: the default, which here takes what no rule matches.
      if (def !== undefined) {
        problems.push(`${at}.clientSelectors: a second rule for every request; the default is one`);
      }
      def = { limit: converted };
      return;
    }
    out.push({ ...m, limit: converted });
  });
  if (shadow.some((s) => s) && !shadow.every((s) => s)) {
    problems.push(
      "spec.rateLimit.global.rules[].shadowMode: set on some rules only; shadow mode here is one switch for the whole RateLimit (spec.enforce)",
    );
  }
  const headersSet = new Set(headers);
  if (headersSet.size > 1) {
    problems.push(
      `spec.rateLimit.global.rules[].xRateLimitHeaders: ${
        [...headersSet].map((h) => h === undefined ? "unset" : show(h)).join(", ")
      } on different rules; X-RateLimit headers here are one switch for the whole RateLimit (spec.enableResponseHeaders)`,
    );
  }
  if (problems.length > 0) return { ok: false, problems };
  // Envoy Gateway's global filter sends X-RateLimit headers unless a rule or a ClientTrafficPolicy
  // turns them off; every rule says the same here (checked above).
  const responseHeaders = headers[0] !== "Off";
  if (headers[0] === undefined) {
    notes.push(
      "spec.enableResponseHeaders: true, as Envoy Gateway sends X-RateLimit headers by default; if a ClientTrafficPolicy of the gateway turns them off (headers.disableRateLimitHeaders), set it to false",
    );
  }
  if (out.length > 1) {
    notes.push(
      "a request that several rules match is counted by the first of them only; Envoy Gateway counts it by each (and refuses it when any is over)",
    );
  }
  if (def && out.length > 0) {
    notes.push(
      "the rule without clientSelectors becomes spec.global.default, which counts only the requests no other rule matches; Envoy Gateway counts every request by it",
    );
  }
  notes.push(
    "each RateLimit counts in its own engine domain (<namespace>/<name>); the engine unreachable admits requests (failureMode: Allow), as Envoy Gateway's default does",
  );
  const meta = isObj(doc.metadata) ? doc.metadata : {};
  const metadata: Obj = {};
  for (const k of ["name", "namespace", "labels"]) if (meta[k] !== undefined) metadata[k] = meta[k];
  return {
    ok: true,
    rateLimit: {
      apiVersion: `${GATEWAY_GROUP}/v1alpha1`,
      kind: "RateLimit",
      metadata,
      spec: {
        selectorLabels: selector,
        enableResponseHeaders: responseHeaders,
        ...(shadow.length > 0 && shadow.every((s) => s) ? { enforce: false } : {}),
        global: {
          ...(out.length > 0 ? { rules: out } : {}),
          ...(def ? { default: def } : {}),
        },
      },
    },
    differences: notes,
  };
}
