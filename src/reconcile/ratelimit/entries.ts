/**
 * How rules become a route's `rate_limits` entries and the descriptor entries each sends: the local
 * bucket rules' (`ruleEntries`) and the global part's (`globalEntries`). The EnvoyFilter
 * (render.ts) puts them on the routes; the engine's configuration of a domain
 * (engine_config.ts) is derived from the same entries, so it holds exactly what the proxies send.
 */
import type { GlobalSpec, RuleMatch } from "../../api/ratelimit.ts";
import type { DescriptorEntry } from "../../api/envoy.ts";
import { hostsMeet, hostTakes, HTTP_METHODS } from "../../api/ratelimit_bounds.ts";

// How bucket rules become a route's `rate_limits` entries: each rule's actions and the descriptor
// entries they produce, so that at most one entry (the first matching rule's) yields a descriptor.
// The EnvoyFilter (`renderEnvoyFilter` below) puts the entries on the routes and the descriptors beside the
// token buckets.

/** A JSON object of Envoy's config. */
export type Json = Record<string, unknown>;

type Matcher = Json;

/**
 * A rule as the entries read it, made once a filter: its headers with names in lower case
 * (Envoy's form, and how rules are compared), and the header matchers it needs, sorted by name.
 */
interface RuleView {
  rule: RuleMatch;
  /** Its methods, in HTTP_METHODS' order (so the order a rule lists them in changes nothing). */
  methods: string[] | undefined;
  /** Its hosts, sorted (so the order a rule lists them in changes nothing). */
  hosts: string[] | undefined;
  /** `[name, value]`, names lower-cased, in the rule's order. */
  headers: [string, string][];
  /** Each header matcher's name and exact value (undefined: present), sorted by name. */
  matchers: [string, string | undefined][];
  /** Its query parameters, `[name, value]` sorted by name. */
  query: [string, string][];
}

function viewOf(rule: RuleMatch): RuleView {
  const headers: [string, string][] = [];
  const matchers: [string, string | undefined][] = [];
  for (const [name, value] of Object.entries(rule.headers ?? {})) {
    const lower = name.toLowerCase();
    headers.push([lower, value]);
    matchers.push([lower, value]);
  }
  const key = rule.perClient?.header?.toLowerCase();
  if (key !== undefined && !matchers.some(([name]) => name === key)) {
    matchers.push([key, undefined]);
  }
  matchers.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const listed = rule.methods;
  const methods = listed === undefined ? undefined : HTTP_METHODS.filter((m) => listed.includes(m));
  const hosts = rule.hosts === undefined ? undefined : [...rule.hosts].sort();
  const query = Object.entries(rule.queryParams ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
  return { rule, methods, hosts, headers, matchers, query };
}

/**
 * `:method` is one of the rule's methods: exactly the one, or a RE2 alternation of several, which
 * Envoy matches whole. Its program is small: all nine methods compile to 47 instructions
 * (`RE2::ProgramSize()`, RE2 2022-06-01 from Debian's libre2, in
 * tests/dataplane/re2_agreement_test.ts), under Envoy's default error level of 100
 * (`re2.max_program_size.error_level`), so no rule's regex can leave the filter NACKed.
 */
function methodMatcher(methods: readonly string[]): Matcher {
  return methods.length === 1
    ? { name: ":method", string_match: { exact: methods[0] } }
    : { name: ":method", string_match: { safe_regex: { regex: methods.join("|") } } };
}

/**
 * `:authority` (HTTP/1's Host, which Envoy keeps as `:authority`) names one of the rule's hosts, as
 * Envoy picks a virtual host by it: letters in either case, and any port and trailing dot
 * ignored; `*.d` takes any name that ends with `.d`. One RE2 matcher, so that a rule stays one
 * clause (an OR of exact and prefix matchers for each host would multiply the clauses that every
 * later rule's entry repeats). RE2's `(?i)` folds more than ASCII (U+212A, the Kelvin sign, is a
 * `k`), but Envoy's connection manager answers 400 to an authority with anything but ASCII
 * (`HeaderUtility::requestHeadersValid`), so no request the filter sees tells them apart. Hosts
 * of 512 characters together compile to at most 2,067 instructions (all `k` and `s`, which fold to
 * three characters each; `RE2::ProgramSize()`, Debian's libre2, in
 * tests/dataplane/re2_agreement_test.ts), above Envoy's default error level of 100 (one long host
 * alone is) and far under the 32,768 Istio's pilot-agent sets for
 * every proxy (`re2.max_program_size.error_level`, pkg/bootstrap/config.go); a proxy that refuses
 * it says so (Accepted False in the RateLimit's status).
 */
function hostMatcher(hosts: readonly string[]): Matcher {
  const terms = hosts.map((h) =>
    h.startsWith("*.") ? `[^:]+${h.slice(1).replaceAll(".", "\\.")}` : h.replaceAll(".", "\\.")
  );
  return {
    name: ":authority",
    string_match: { safe_regex: { regex: `(?i:${terms.join("|")})\\.?(?::[0-9]+)?` } },
  };
}

/**
 * RE2 for one character of a query parameter's name or value as Envoy's query parser reads it: the
 * character itself, or `%` and its code in hex digits of either case (`(?:\.|%2[eE])`). Names and
 * values hold only ASCII (QUERY_NAME_PATTERN, QUERY_VALUE_PATTERN).
 */
function queryChar(c: string): string {
  const hex = c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")
    .replace(/[A-F]/g, (d) => `[${d}${d.toLowerCase()}]`);
  const literal = /[A-Za-z0-9_~\-!'",:;=@/]/.test(c) ? c : `\\${c}`;
  return `(?:${literal}|%${hex})`;
}

/**
 * `:path` has a query parameter `name` with `value`: in the query (after the first `?`), a
 * parameter (between `&`s) whose name and value, percent-decoded, are these; an empty value takes
 * `name` and `name=`. Any occurrence, where Envoy's own query matchers compare the first only (a
 * client repeating the parameter does not slip past). One `:path` matcher, so that the rule stays
 * one clause, beside its path matchers. Within the bounds (32 and 40 characters) it is no longer,
 * escaped as etcd stores it, than the longest header matcher
 * (tests/reconcile/ratelimit_bounds_test.ts), and compiles to at most 323 RE2 instructions
 * (`format=csv`: 71; `RE2::ProgramSize()`, Debian's libre2, in
 * tests/dataplane/re2_agreement_test.ts): over Envoy's default error level of 100 for the
 * longest, far under the 32,768 Istio sets for every proxy (see `hostMatcher`).
 */
function queryMatcher(name: string, value: string): Matcher {
  const encoded = (s: string) => [...s].map(queryChar).join("");
  const rest = value === "" ? "=?" : `=${encoded(value)}`;
  return {
    name: ":path",
    string_match: {
      safe_regex: { regex: `[^?]*\\?(?:[^&]*&)*${encoded(name)}${rest}(?:&.*)?` },
    },
  };
}

/** The value of header `name` (lower-cased) in a view, the last if it is given twice. */
function headerValue(view: RuleView, name: string): string | undefined {
  for (let i = view.headers.length - 1; i >= 0; i--) {
    if (view.headers[i][0] === name) return view.headers[i][1];
  }
  return undefined;
}

/**
 * Header matchers of a rule's methods (`:method`, first), hosts (`:authority`) and headers: names
 * in lower case (Envoy's form), values exact; and a per-client header must be present, so that a
 * request without it is not the rule's and goes on to later rules (its `request_headers` action
 * would yield no descriptor). New objects each call.
 */
function headerMatchers(view: RuleView): Matcher[] {
  const out: Matcher[] = view.methods === undefined ? [] : [methodMatcher(view.methods)];
  if (view.hosts !== undefined) out.push(hostMatcher(view.hosts));
  for (const [name, exact] of view.matchers) {
    out.push(
      exact === undefined ? { name, present_match: true } : { name, string_match: { exact } },
    );
  }
  for (const [name, value] of view.query) out.push(queryMatcher(name, value));
  return out;
}

/**
 * The action that names a per-client rule's client, and its config entry: the empty value is
 * Envoy's wildcard (dynamic descriptors), one bucket for each distinct value.
 */
function clientAction(rule: RuleMatch): { action: Json; entry: DescriptorEntry } | undefined {
  const header = rule.perClient?.header;
  if (header !== undefined) {
    return {
      action: { request_headers: { header_name: header.toLowerCase(), descriptor_key: "client" } },
      entry: { key: "client", value: "" },
    };
  }
  if (rule.perClient?.clientIP) {
    return { action: { remote_address: {} }, entry: { key: "remote_address", value: "" } };
  }
  return undefined;
}

/**
 * `:path` carries the query string, and the rule's path must match with or without one. So "path
 * matches" is a disjunction: `:path` is exactly P, or starts with `P?`. (A RE2 `safe_regex` could say
 * it in one matcher, but Envoy rejects regexes above `re2.max_program_size.error_level`, default 100,
 * so a long path would leave the filter NACKed while the RateLimit says Ready.)
 */
function pathMatchers(path: string, invert = false): Matcher[] {
  const exact = { exact: path };
  const prefix = { prefix: `${path}?` };
  // Literals, not a spread of the plain ones: this runs for every rule of every reconcile.
  return invert
    ? [
      { name: ":path", string_match: exact, invert_match: true },
      { name: ":path", string_match: prefix, invert_match: true },
    ]
    : [{ name: ":path", string_match: exact }, { name: ":path", string_match: prefix }];
}

/**
 * `pathPrefix`: `:path` starts with P, query string and all, as Istio's uri prefix compares
 * (character by character: /api starts /apiary too). One matcher.
 */
function prefixMatcher(prefix: string): Matcher {
  return { name: ":path", string_match: { prefix } };
}

/** A rule as an OR of clauses, each an AND of header matchers. */
function clauses(view: RuleView): Matcher[][] {
  const { path, pathPrefix } = view.rule;
  if (pathPrefix !== undefined) return [[prefixMatcher(pathPrefix), ...headerMatchers(view)]];
  if (path === undefined) return [headerMatchers(view)];
  return pathMatchers(path).map((p) => [p, ...headerMatchers(view)]);
}

/**
 * True when some request's path both rules take: unless both have an exact path and they differ,
 * or an exact path and a prefix that does not start it, or two prefixes neither of which starts the
 * other. (A prefix has no `?`, so it starts `P?x` only if it starts `P`.)
 */
function pathsMeet(a: RuleMatch, b: RuleMatch): boolean {
  const [p, q] = [a.pathPrefix, b.pathPrefix];
  if (p !== undefined && q !== undefined) return p.startsWith(q) || q.startsWith(p);
  if (p !== undefined) return b.path === undefined || b.path.startsWith(p);
  if (q !== undefined) return a.path === undefined || a.path.startsWith(q);
  return a.path === undefined || b.path === undefined || a.path === b.path;
}

/**
 * True when `view` names its Host as a header (compared exactly) with a value none of `hosts`
 * takes, so no request matches both. Only for a value in printable ASCII: RE2's `(?i)` folds a few
 * other letters into ASCII ones (the Kelvin sign), which `hostTakes` does not, so another value
 * may be taken after all.
 */
function hostHeaderMissed(hosts: readonly string[] | undefined, view: RuleView): boolean {
  const sent = headerValue(view, "host");
  return hosts !== undefined && sent !== undefined && /^[\x20-\x7e]*$/.test(sent) &&
    !hosts.some((h) => hostTakes(h, sent));
}

/**
 * True when some request matches both rules: unless their paths never meet (`pathsMeet`), or both
 * list methods and none in common, or both list hosts and none meet, or both require one header
 * (names compared case-insensitively) with different values, a request with a path both take, a
 * method both take, a host both take and the headers of both matches both (a Host named as a
 * header is a host too: `hostHeaderMissed`). Skipping disjoint rules keeps the filter small:
 * with distinct paths (or methods, or hosts), no rule needs to exclude another.
 */
export function canOverlap(a: RuleMatch, b: RuleMatch): boolean {
  return overlap(viewOf(a), viewOf(b));
}

function overlap(a: RuleView, b: RuleView): boolean {
  if (!pathsMeet(a.rule, b.rule)) return false;
  const [m, n] = [a.methods, b.methods];
  if (m !== undefined && n !== undefined && !m.some((x) => n.includes(x))) return false;
  const [g, h] = [a.hosts, b.hosts];
  if (g !== undefined && h !== undefined && !g.some((x) => h.some((y) => hostsMeet(x, y)))) {
    return false;
  }
  if (hostHeaderMissed(g, b) || hostHeaderMissed(h, a)) return false;
  return a.headers.every(([k, v]) => {
    const other = headerValue(b, k);
    return other === undefined || other === v;
  });
}

/**
 * The actions of each rule's `rate_limits` entry and the descriptor they produce (rule i's at i).
 *
 * Envoy builds one request descriptor per `rate_limits` entry, and only when every action of the
 * entry appends an entry; it then matches config descriptors verbatim (ordered, no partial match).
 * A `header_value_match` action appends its entry when all its matchers match (expect_match true)
 * or when they do not all match (expect_match false). So entry i requires:
 *   - rule i matches: its path, as `expect_match: false` over the two path matchers inverted
 *     (NOT(NOT exact AND NOT prefix) = exact OR prefix), and its methods, hosts and headers, as
 *     one `expect_match: true`;
 *   - no earlier rule j matches: rule j is an OR of clauses, so NOT rule j = AND over its clauses of
 *     NOT clause, one `expect_match: false` action a clause. Only earlier rules that can match a
 *     request rule i matches need this (see `canOverlap`); for the others it always holds.
 * Hence at most one entry yields a descriptor, that of the first matching rule, and with
 * `always_consume_default_token_bucket: false` the default bucket is charged only when none does.
 */
export function ruleEntries(
  rules: readonly RuleMatch[],
): { actions: Json[]; entries: DescriptorEntry[] }[] {
  const views = rules.map(viewOf);
  return views.map((_, i) => ruleEntry(views, i));
}

/** Rule i's entry (see `ruleEntries`). */
function ruleEntry(
  views: readonly RuleView[],
  i: number,
): { actions: Json[]; entries: DescriptorEntry[] } {
  const view = views[i];
  const rule = view.rule;
  const actions: Json[] = [];
  const entries: DescriptorEntry[] = [];
  const action = (key: string, value: string, headers: Matcher[], expectMatch: boolean) => {
    actions.push({
      header_value_match: expectMatch
        ? { descriptor_key: key, descriptor_value: value, headers }
        : { descriptor_key: key, descriptor_value: value, expect_match: false, headers },
    });
    entries.push({ key, value });
  };
  const own = headerMatchers(view);
  if (rule.path !== undefined) {
    action("rule", String(i), pathMatchers(rule.path, true), false);
    if (own.length > 0) action("rule_headers", String(i), own, true);
  } else if (rule.pathPrefix !== undefined) {
    // One matcher: the prefix and the headers all hold.
    action("rule", String(i), [prefixMatcher(rule.pathPrefix), ...own], true);
  } else if (own.length > 0) {
    action("rule", String(i), own, true);
  } else {
    // Every request (a per-client rule by address alone): a fixed entry names the rule.
    actions.push({ generic_key: { descriptor_key: "rule", descriptor_value: String(i) } });
    entries.push({ key: "rule", value: String(i) });
  }
  for (let j = 0; j < i; j++) {
    if (!overlap(views[j], view)) continue;
    for (const clause of clauses(views[j])) action("not_rule", String(j), clause, false);
  }
  const client = clientAction(rule);
  if (client) {
    actions.push(client.action);
    entries.push(client.entry);
  }
  return { actions, entries };
}

/** The descriptor value that names the global default in its entry (rules are named by index). */
export const GLOBAL_DEFAULT_RULE = "default";

/**
 * The route `rate_limits` entries of a global part (stage GLOBAL_STAGE) and the descriptor each
 * sends: the rules' as `ruleEntries` makes them (at most one yields a descriptor, the first
 * matching rule's), then the default's, which yields one only when no rule matches.
 */
export function globalEntries(
  global: GlobalSpec,
): { actions: Json[]; entries: DescriptorEntry[] }[] {
  const rules: RuleMatch[] = [...(global.rules ?? [])];
  if (global.default === undefined) return ruleEntries(rules);
  // A rule that matches every request, after the others: its entry is the default's.
  const all = ruleEntries([...rules, {}]);
  const last = all[all.length - 1];
  const named = {
    actions: last.actions.map((a, i) =>
      i === 0
        ? { generic_key: { descriptor_key: "rule", descriptor_value: GLOBAL_DEFAULT_RULE } }
        : a
    ),
    entries: last.entries.map((e, i) => i === 0 ? { key: "rule", value: GLOBAL_DEFAULT_RULE } : e),
  };
  return [...all.slice(0, -1), named];
}
