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
import {
  hasControlCharacter,
  HTTP_METHODS,
  type HttpMethod,
  isHttpToken,
  isQueryName,
  isQueryValue,
  isRulePath,
  MAX_QUERY_NAME_LENGTH,
  MAX_QUERY_VALUE_LENGTH,
  MAX_RULE_HEADERS_AND_QUERY,
  MAX_TOKENS_LIMIT,
} from "../../api/ratelimit_bounds.ts";
import { parseFillInterval } from "../../api/duration.ts";
import { isLabelValue } from "../../api/selector.ts";
import { objectFieldProblems, unknownKeys } from "./fields.ts";
import { covers } from "../../reconcile/ratelimit/validate.ts";

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

/** The longest name of a Kubernetes object (a DNS subdomain). */
const MAX_NAME_LENGTH = 253;

const isObj = (v: unknown): v is Obj => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * The converted RateLimits, one a target of the policy (`rateLimit`: the first, the only one for a
 * policy of one target), and what behaves differently; or why it cannot be carried over.
 */
export type GatewayConversion =
  | { ok: true; rateLimit: Obj; rateLimits: Obj[]; differences: string[] }
  | { ok: false; problems: string[] };

/** A target of the policy as a RateLimit selects it: its name and the Pods' labels. */
interface Target {
  name: string;
  selector: Record<string, string>;
}

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
  methods?: HttpMethod[];
  headers?: Record<string, string>;
  queryParams?: Record<string, string>;
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
    if (s.queryParams !== undefined) {
      queryParamsOf(s.queryParams, `${where}.queryParams`, m, problems, notes);
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
      } else if ((type === "Exact" || type === "PathPrefix") && !isRulePath(value)) {
        problems.push(
          `${where}.path.value: ${
            show(value)
          } is not a path here (it starts with /, and has no ?, #, space or control character)`,
        );
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
    if (s.methods !== undefined) methodsOf(s.methods, `${where}.methods`, m, problems);
    if (s.headers !== undefined) {
      if (!Array.isArray(s.headers)) return void problems.push(`${where}.headers: not a list`);
      s.headers.forEach((h, k) => {
        const hw = `${where}.headers[${k}]`;
        if (!isObj(h)) return void problems.push(`${hw}: not an object`);
        problems.push(...unknownKeys(h, ["type", "name", "value", "invert"], hw));
        if (typeof h.name !== "string") return void problems.push(`${hw}.name: missing`);
        if (!isHttpToken(h.name)) {
          return void problems.push(`${hw}.name: ${show(h.name)} is not an HTTP header name`);
        }
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
        if (hasControlCharacter(h.value)) {
          return void problems.push(`${hw}.value: ${show(h.value)} has a control character`);
        }
        // All of a rule's header matches must hold, names in any case: the same one twice is
        // once, with two values the rule matches nothing.
        const lower = h.name.toLowerCase();
        const same = Object.keys(m.headers ?? {}).find((k) => k.toLowerCase() === lower);
        if (same !== undefined) {
          if (m.headers![same] !== h.value) {
            problems.push(
              `${hw}: header ${same} must also be ${
                show(m.headers![same])
              }; the rule would match nothing`,
            );
          }
          return;
        }
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
  const count = Object.keys(m.headers ?? {}).length + Object.keys(m.queryParams ?? {}).length;
  if (count > MAX_RULE_HEADERS_AND_QUERY) {
    problems.push(
      `${at}.clientSelectors: ${count} headers and query parameters; a rule here matches at most ${MAX_RULE_HEADERS_AND_QUERY} together`,
    );
  }
  return m;
}

/**
 * A selector's query parameters (all must hold) into `m.queryParams`: Exact ones whose name and
 * value a rule here can hold. Envoy Gateway compares a parameter's first occurrence, a rule here
 * any (a note says so).
 */
function queryParamsOf(
  params: unknown,
  at: string,
  m: Match,
  problems: string[],
  notes: string[],
): void {
  if (!Array.isArray(params)) return void problems.push(`${at}: not a list`);
  params.forEach((q, k) => {
    const qw = `${at}[${k}]`;
    if (!isObj(q)) return void problems.push(`${qw}: not an object`);
    problems.push(...unknownKeys(q, ["type", "name", "value", "invert"], qw));
    if (typeof q.name !== "string") return void problems.push(`${qw}.name: missing`);
    if (!isQueryName(q.name) || [...q.name].length > MAX_QUERY_NAME_LENGTH) {
      return void problems.push(
        `${qw}.name: ${
          show(q.name)
        } is not a query parameter's name here (at most ${MAX_QUERY_NAME_LENGTH} characters: letters, digits and -._~[])`,
      );
    }
    if (q.invert === true) {
      return void problems.push(`${qw}.invert: an inverted query parameter has no match here`);
    }
    const type = q.type ?? "Exact";
    if (type !== "Exact") {
      return void problems.push(
        `${qw}.type: ${String(type)} has no equivalent: query parameters here match exact values`,
      );
    }
    if (typeof q.value !== "string") return void problems.push(`${qw}.value: missing`);
    if (
      !isQueryValue(q.value) || [...q.value].length > MAX_QUERY_VALUE_LENGTH
    ) {
      return void problems.push(
        `${qw}.value: ${
          show(q.value)
        } is not a query parameter's value here (at most ${MAX_QUERY_VALUE_LENGTH} characters, decoded: letters, digits and -._~!$'()*,/:;=?@[], no &, +, %, # or spaces)`,
      );
    }
    const other = m.queryParams?.[q.name];
    if (other !== undefined && Object.hasOwn(m.queryParams!, q.name)) {
      if (other !== q.value) {
        problems.push(
          `${qw}: query parameter ${q.name} is also ${
            show(other)
          }; a rule here holds one value a parameter`,
        );
      }
      return;
    }
    m.queryParams = { ...m.queryParams, [q.name]: q.value };
  });
  if (m.queryParams !== undefined) {
    notes.push(
      `${at}: a parameter a request repeats is taken here when any occurrence has the value; Envoy Gateway compares the first`,
    );
  }
}

/**
 * A selector's methods (any one of them) into `m.methods`: with methods from an earlier selector
 * of the rule, the methods both take, since all of a rule's selectors must hold.
 */
function methodsOf(methods: unknown, at: string, m: Match, problems: string[]): void {
  if (!Array.isArray(methods)) return void problems.push(`${at}: not a list`);
  const values = new Set<HttpMethod>();
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
    values.add(x.value as HttpMethod);
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

/**
 * The policy's targets as RateLimits select them, or problems naming fields. Several targets are
 * several RateLimits with the same limits; a Gateway beside routes is refused, since a request
 * through the gateway to one of the routes would pass both RateLimits' limits here.
 */
function targetsOf(spec: Obj, problems: string[], notes: string[]): Target[] | undefined {
  if (spec.targetSelectors !== undefined) {
    problems.push("spec.targetSelectors: a RateLimit selects Pods by labels; name the targets");
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
  if (refs.length === 0) {
    problems.push("spec.targetRefs: no target; a RateLimit needs one to select Pods by");
    return undefined;
  }
  const targets: Target[] = [];
  const kinds = new Set<string>();
  for (const { r, at } of refs) {
    const target = targetOf(r, at, problems, notes);
    if (target === undefined) continue;
    const twice = targets.findIndex((t) => t.name === target.name);
    if (twice >= 0) {
      problems.push(
        `${at}.name: ${target.name} again (as ${
          refs[twice].at
        }); one RateLimit a target, named after it, cannot be two`,
      );
    }
    targets.push(target);
    kinds.add(isObj(r) && r.kind === "Gateway" ? "Gateway" : "route");
  }
  if (kinds.size > 1) {
    problems.push(
      "spec.targetRefs: a Gateway and routes together; here a request through the gateway to one of the routes would pass both RateLimits' limits: convert one policy for the Gateway and one for the routes",
    );
  }
  return targets.length === refs.length ? targets : undefined;
}

/** One target as a RateLimit selects it, or problems naming fields. */
function targetOf(r: unknown, at: string, problems: string[], notes: string[]): Target | undefined {
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
  // The RateLimit selects the target's Pods by a label whose value is the target's name.
  if (!isLabelValue(name)) {
    problems.push(
      `${at}.name: ${
        show(name)
      } cannot be a label's value (at most 63 characters), which the RateLimit's selector would need: convert it with a shorter name and set the labels`,
    );
    return undefined;
  }
  if (kind === "Gateway") {
    notes.push(
      `${at}: Gateway ${name}: the RateLimit selects its Pods by the label ${GATEWAY_NAME_LABEL}: ${name} that Istio's Gateway API deployment gives them; each route of the gateway is counted apart, as under Envoy Gateway`,
    );
    return { name, selector: { [GATEWAY_NAME_LABEL]: name } };
  }
  if (typeof kind === "string" && HTTP_ROUTES.includes(kind)) {
    notes.push(
      `${at}: ${kind} ${name}: a RateLimit limits the Pods behind a route, selected by labels; selectorLabels app: ${name} is a guess: set the labels of the Pods the route's backends run on`,
    );
    return { name, selector: { app: name } };
  }
  problems.push(
    `${at}.kind: ${String(kind)}: rate limits here are HTTP's (Gateway, HTTPRoute, GRPCRoute)`,
  );
  return undefined;
}

/** A rule of either part, read: what it matches (none: every request) and its limit. */
interface RuleRead {
  match: Match | undefined;
  requests: unknown;
  unit: unknown;
}

/** What the rules of both parts must agree on: one switch each here. */
interface Switches {
  shadow: boolean[];
  headers: unknown[];
}

/**
 * One rule of either part (`at`: `spec.rateLimit.global.rules[0]`), or undefined with problems:
 * the fields both parts share; the part checks its units.
 */
function ruleOf(
  rule: unknown,
  at: string,
  problems: string[],
  notes: string[],
  switches: Switches,
): RuleRead | undefined {
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
  switches.shadow.push(rule.shadowMode === true);
  if (rule.xRateLimitHeaders !== undefined && !X_RATELIMIT.includes(rule.xRateLimitHeaders)) {
    problems.push(
      `${at}.xRateLimitHeaders: ${show(rule.xRateLimitHeaders)} is not Off or DraftVersion03`,
    );
  }
  switches.headers.push(rule.xRateLimitHeaders);
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
  const selectors = rule.clientSelectors ?? [];
  if (!Array.isArray(selectors)) return void problems.push(`${at}.clientSelectors: not a list`);
  const before = problems.length;
  const m = matchOf(selectors, at, problems, notes);
  if (problems.length > before) return undefined;
  const every = m.path === undefined && m.pathPrefix === undefined && m.methods === undefined &&
    m.headers === undefined && m.queryParams === undefined && m.perClient === undefined;
  return { match: every ? undefined : m, requests: limit.requests, unit: limit.unit };
}

/**
 * Rules (converted, each from the rule at `from`) that an earlier one always wins over: here the
 * first matching rule takes a request, so such a rule would never take one, where Envoy Gateway
 * applies every rule a request matches. Refused naming both, rather than converted to a RateLimit
 * the operator refuses.
 */
function shadowed(rules: readonly Match[], from: readonly string[]): string[] {
  const out: string[] = [];
  rules.forEach((rule, i) => {
    const first = rules.slice(0, i).findIndex((e) => covers(e, rule));
    if (first >= 0) {
      out.push(
        `${from[i]}: every request it matches, ${
          from[first]
        } matches too; here only the first matching rule applies, so it would never apply (Envoy Gateway applies both): merge them, or put the narrower first`,
      );
    }
  });
  return out;
}

/** A part's `rules`, or undefined with a problem naming `at` (`spec.rateLimit.global`). */
function rulesOf(part: Obj, at: string, problems: string[]): unknown[] | undefined {
  problems.push(...unknownKeys(part, ["rules"], at));
  if (!Array.isArray(part.rules)) {
    return void problems.push(`${at}.rules: missing or not a list`);
  }
  if (part.rules.length === 0) {
    return void problems.push(`${at}.rules: empty: no rules, nothing to convert`);
  }
  return part.rules;
}

/** The global part: rules, and the rule for every request as the default. */
function globalPart(
  global: Obj,
  problems: string[],
  notes: string[],
  switches: Switches,
): Obj | undefined {
  const rules = rulesOf(global, "spec.rateLimit.global", problems);
  if (rules === undefined) return undefined;
  const out: Obj[] = [];
  const from: string[] = [];
  let def: Obj | undefined;
  rules.forEach((rule, i) => {
    const at = `spec.rateLimit.global.rules[${i}]`;
    const r = ruleOf(rule, at, problems, notes, switches);
    if (r === undefined) return;
    if (!UNITS.includes(String(r.unit))) {
      problems.push(
        `${at}.limit.unit: ${
          String(r.unit)
        } has no equivalent: windows here are a Second, Minute, Hour or Day`,
      );
    }
    const limit = { requests: r.requests, unit: r.unit };
    if (r.match === undefined) {
      // Every request of the target: the default, which here takes what no rule matches.
      if (def !== undefined) {
        problems.push(`${at}.clientSelectors: a second rule for every request; the default is one`);
      }
      def = { limit };
      return;
    }
    out.push({ ...r.match, limit });
    from.push(at);
  });
  problems.push(...shadowed(out as Match[], from));
  if (out.length > 1) {
    notes.push(
      "a request that several global rules match is counted by the first of them only; Envoy Gateway counts it by each (and refuses it when any is over)",
    );
  }
  if (def && out.length > 0) {
    notes.push(
      "the global rule without clientSelectors becomes spec.global.default, which counts only the requests no other rule matches; Envoy Gateway counts every request by it",
    );
  }
  notes.push(
    "each RateLimit counts in its own engine domain (<namespace>/<name>); the engine unreachable admits requests (failureMode: Allow), as Envoy Gateway's default does",
  );
  return { ...(out.length > 0 ? { rules: out } : {}), ...(def ? { default: def } : {}) };
}

/**
 * A local limit's window as a fillInterval: Envoy Gateway fills a rule's bucket with all its
 * requests once a unit (internal/utils/ratelimit/unit.go: a Month is 30 days, a Year 365).
 */
const LOCAL_INTERVALS: Record<string, string> = {
  Second: "1s",
  Minute: "1m",
  Hour: "60m",
  Day: "1440m",
  Week: "10080m",
  Month: "43200m",
  Year: "525600m",
};

/** How many clients Envoy Gateway keeps a bucket for (its max_dynamic_descriptors). */
const GATEWAY_MAX_CLIENTS = 10000;

/**
 * The local part: Envoy Gateway's local rules as token buckets, each filled with its requests once
 * a unit (internal/xds/translator/local_ratelimit.go), the rule for every request as the default
 * bucket (without one, Envoy Gateway's uint32 max a second).
 */
function localPart(
  local: Obj,
  problems: string[],
  notes: string[],
  switches: Switches,
): Obj | undefined {
  const rules = rulesOf(local, "spec.rateLimit.local", problems);
  if (rules === undefined) return undefined;
  const buckets: Obj[] = [];
  const from: string[] = [];
  let def: { bucket: Obj; at: string; unit: string } | undefined;
  const units: [string, string][] = [];
  rules.forEach((rule, i) => {
    const at = `spec.rateLimit.local.rules[${i}]`;
    const r = ruleOf(rule, at, problems, notes, switches);
    if (r === undefined) return;
    const fillInterval = LOCAL_INTERVALS[String(r.unit)];
    if (fillInterval === undefined) {
      return void problems.push(
        `${at}.limit.unit: ${show(r.unit)} is not one of ${
          Object.keys(LOCAL_INTERVALS).join(", ")
        }`,
      );
    }
    const bucket = { maxTokens: r.requests, tokensPerFill: r.requests, fillInterval };
    if (r.match === undefined) {
      if (def !== undefined) {
        problems.push(
          `${at}.clientSelectors: a second local rule for every request; the default bucket is one`,
        );
      } else def = { bucket, at, unit: String(r.unit) };
      return;
    }
    units.push([at, String(r.unit)]);
    buckets.push({ ...r.match, bucket });
    from.push(at);
  });
  // Envoy Gateway refuses a rule whose unit is not a multiple of the default's, as Envoy does.
  const ms = (unit: string) => parseFillInterval(LOCAL_INTERVALS[unit])!;
  if (def !== undefined) {
    for (const [at, unit] of units) {
      if (ms(unit) % ms(def.unit) !== 0) {
        problems.push(
          `${at}.limit.unit: ${unit} is not a multiple of the default rule's ${def.unit} (${def.at}); Envoy Gateway refuses such a policy, as Envoy does`,
        );
      }
    }
  }
  problems.push(...shadowed(buckets as Match[], from));
  if (buckets.length > 1) {
    notes.push(
      "a request that several local rules match takes a token from the first rule's bucket only; Envoy Gateway takes one from each, and refuses it when any is empty",
    );
  }
  if (def === undefined) {
    notes.push(
      `spec.local.defaultBucket: ${MAX_TOKENS_LIMIT} requests a second, as Envoy Gateway's default when no local rule is for every request: no limit on the rest`,
    );
  }
  const perClient = buckets.some((b) => b.perClient !== undefined);
  if (perClient) {
    notes.push(
      `spec.local.maxClients: ${GATEWAY_MAX_CLIENTS}, as Envoy Gateway keeps (max_dynamic_descriptors); a client beyond them shares the rule's bucket with the other unkept ones`,
    );
  }
  return {
    defaultBucket: def?.bucket ??
      { maxTokens: MAX_TOKENS_LIMIT, tokensPerFill: MAX_TOKENS_LIMIT, fillInterval: "1s" },
    ...(buckets.length > 0 ? { buckets } : {}),
    ...(perClient ? { maxClients: GATEWAY_MAX_CLIENTS } : {}),
  };
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
  const targets = targetsOf(spec, problems, notes);
  const afterSelector = notes.length;
  problems.push(...unknownKeys(rl, ["type", "global", "local"], "spec.rateLimit"));
  if (rl.type !== undefined && rl.type !== "Global" && rl.type !== "Local") {
    problems.push(`spec.rateLimit.type: ${show(rl.type)} is not Global or Local`);
  }
  const switches: Switches = { shadow: [], headers: [] };
  const globalIn = isObj(rl.global) ? rl.global : undefined;
  const localIn = isObj(rl.local) ? rl.local : undefined;
  if (rl.global !== undefined && globalIn === undefined) {
    problems.push("spec.rateLimit.global: not an object");
  }
  if (rl.local !== undefined && localIn === undefined) {
    problems.push("spec.rateLimit.local: not an object");
  }
  if (rl.global === undefined && rl.local === undefined) {
    problems.push("spec.rateLimit: neither global nor local rules: nothing to convert");
  }
  // The deprecated `type`, when set, makes Envoy Gateway build that part alone and ignore the
  // other (internal/gatewayapi/backendtrafficpolicy.go buildRateLimit); the other is not converted.
  const only = rl.type === "Global" ? "global" : rl.type === "Local" ? "local" : undefined;
  if (only !== undefined && rl[only] === undefined) {
    problems.push(`spec.rateLimit.${only}: missing, and spec.rateLimit.type is ${rl.type}`);
  }
  for (const part of ["global", "local"] as const) {
    if (only !== undefined && part !== only && rl[part] !== undefined) {
      notes.push(
        `spec.rateLimit.${part}: not converted: with spec.rateLimit.type ${rl.type}, Envoy Gateway ignores it`,
      );
    }
  }
  const local = only !== "global" && localIn
    ? localPart(localIn, problems, notes, switches)
    : undefined;
  const global = only !== "local" && globalIn
    ? globalPart(globalIn, problems, notes, switches)
    : undefined;
  const { shadow, headers } = switches;
  if (shadow.some((s) => s) && !shadow.every((s) => s)) {
    problems.push(
      "spec.rateLimit.*.rules[].shadowMode: set on some rules only; shadow mode here is one switch for the whole RateLimit (spec.enforce)",
    );
  }
  const headersSet = new Set(headers);
  if (headersSet.size > 1) {
    problems.push(
      `spec.rateLimit.*.rules[].xRateLimitHeaders: ${
        [...headersSet].map((h) => h === undefined ? "unset" : show(h)).join(", ")
      } on different rules; X-RateLimit headers here are one switch for the whole RateLimit (spec.enableResponseHeaders)`,
    );
  }
  const meta = isObj(doc.metadata) ? doc.metadata : {};
  // With several targets, a RateLimit each, named after the policy and the target; with one, the
  // RateLimit keeps the policy's metadata.
  const several = targets !== undefined && targets.length > 1;
  const names = several
    ? targets.map((t) => typeof meta.name === "string" ? `${meta.name}-${t.name}` : t.name)
    : [];
  names.forEach((n, i) => {
    if (n.length > MAX_NAME_LENGTH) {
      problems.push(
        `spec.targetRefs[${i}].name: its RateLimit's name would have ${n.length} characters, over Kubernetes' ${MAX_NAME_LENGTH}: give the policy or the target a shorter name`,
      );
    }
  });
  if (problems.length > 0) return { ok: false, problems };
  // Envoy Gateway's rate limit filters send X-RateLimit headers unless a rule or a
  // ClientTrafficPolicy turns them off; every rule says the same here (checked above).
  const responseHeaders = headers[0] !== "Off";
  if (headers[0] === undefined) {
    notes.splice(
      afterSelector,
      0,
      "spec.enableResponseHeaders: true, as Envoy Gateway sends X-RateLimit headers by default; if a ClientTrafficPolicy of the gateway turns them off (headers.disableRateLimitHeaders), set it to false",
    );
  }
  const metadata: Obj = {};
  for (const k of ["name", "namespace", "labels"]) if (meta[k] !== undefined) metadata[k] = meta[k];
  const rateLimits = targets!.map((t, i): Obj => ({
    apiVersion: `${GATEWAY_GROUP}/v1alpha1`,
    kind: "RateLimit",
    metadata: several ? { ...metadata, name: names[i] } : metadata,
    spec: {
      selectorLabels: t.selector,
      enableResponseHeaders: responseHeaders,
      ...(shadow.length > 0 && shadow.every((s) => s) ? { enforce: false } : {}),
      ...(local ? { local } : {}),
      ...(global ? { global } : {}),
    },
  }));
  if (several) {
    notes.splice(
      afterSelector,
      0,
      `spec.targetRefs: ${targets!.length} targets: one RateLimit each (${
        rateLimits.map((r) => (r.metadata as Obj).name).join(", ")
      }), with the same limits, each target's counted apart as under Envoy Gateway; the preview runs the first`,
    );
  }
  return { ok: true, rateLimit: rateLimits[0], rateLimits, differences: notes };
}
