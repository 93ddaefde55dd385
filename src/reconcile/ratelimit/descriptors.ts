/**
 * How bucket rules become a route's `rate_limits` entries: each rule's actions and the descriptor
 * entries they produce, so that at most one entry (the first matching rule's) yields a descriptor.
 * The EnvoyFilter (envoyfilter.ts) puts the entries on the routes and the descriptors beside the
 * token buckets.
 */
import type { BucketRule } from "../../api/ratelimit.ts";
import type { DescriptorEntry } from "../../api/envoy.ts";

/** A JSON object of Envoy's config. */
export type Json = Record<string, unknown>;
type Matcher = Json;

/**
 * Header matchers of a rule's headers: names in lower case (Envoy's form), values exact; and a
 * per-client header must be present, so that a request without it is not the rule's and goes on
 * to later rules (its `request_headers` action would yield no descriptor).
 */
function headerMatchers(rule: BucketRule): Matcher[] {
  const key = rule.perClient?.header?.toLowerCase();
  const own: (Matcher & { name: string })[] = Object.entries(rule.headers ?? {})
    .map(([name, value]) => ({ name: name.toLowerCase(), string_match: { exact: value } }));
  if (key !== undefined && !own.some((m) => m.name === key)) {
    own.push({ name: key, present_match: true });
  }
  return own.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * The action that names a per-client rule's client, and its config entry: the empty value is
 * Envoy's wildcard (dynamic descriptors), one bucket for each distinct value.
 */
function clientAction(rule: BucketRule): { action: Json; entry: DescriptorEntry } | undefined {
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
function pathMatchers(path: string): Matcher[] {
  return [
    { name: ":path", string_match: { exact: path } },
    { name: ":path", string_match: { prefix: `${path}?` } },
  ];
}

/** A rule as an OR of clauses, each an AND of header matchers. */
function clauses(rule: BucketRule): Matcher[][] {
  const headers = headerMatchers(rule);
  return rule.path === undefined ? [headers] : pathMatchers(rule.path).map((p) => [p, ...headers]);
}

/**
 * True when some request matches both rules: unless both have a path and the paths differ, or both
 * require one header (names compared case-insensitively) with different values, the request with
 * the path of either and the headers of both matches both. Skipping disjoint rules keeps the
 * filter small: with distinct paths, no rule needs to exclude another.
 */
export function canOverlap(a: BucketRule, b: BucketRule): boolean {
  if (a.path !== undefined && b.path !== undefined && a.path !== b.path) return false;
  const bHeaders = new Map(Object.entries(b.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  return Object.entries(a.headers ?? {}).every(([k, v]) => {
    const other = bHeaders.get(k.toLowerCase());
    return other === undefined || other === v;
  });
}

/**
 * The actions of rule i's `rate_limits` entry and the descriptor they produce.
 *
 * Envoy builds one request descriptor per `rate_limits` entry, and only when every action of the
 * entry appends an entry; it then matches config descriptors verbatim (ordered, no partial match).
 * A `header_value_match` action appends its entry when all its matchers match (expect_match true)
 * or when they do not all match (expect_match false). So entry i requires:
 *   - rule i matches: its path, as `expect_match: false` over the two path matchers inverted
 *     (NOT(NOT exact AND NOT prefix) = exact OR prefix), and its headers, as one `expect_match: true`;
 *   - no earlier rule j matches: rule j is an OR of clauses, so NOT rule j = AND over its clauses of
 *     NOT clause, one `expect_match: false` action a clause. Only earlier rules that can match a
 *     request rule i matches need this (see `canOverlap`); for the others it always holds.
 * Hence at most one entry yields a descriptor, that of the first matching rule, and with
 * `always_consume_default_token_bucket: false` the default bucket is charged only when none does.
 */
export function ruleEntry(
  rules: readonly BucketRule[],
  i: number,
): { actions: Json[]; entries: DescriptorEntry[] } {
  const rule = rules[i];
  const actions: Json[] = [];
  const entries: DescriptorEntry[] = [];
  const action = (key: string, value: string, headers: Matcher[], expectMatch: boolean) => {
    actions.push({
      header_value_match: {
        descriptor_key: key,
        descriptor_value: value,
        ...(expectMatch ? {} : { expect_match: false }),
        headers,
      },
    });
    entries.push({ key, value });
  };
  const own = headerMatchers(rule);
  if (rule.path !== undefined) {
    action(
      "rule",
      String(i),
      pathMatchers(rule.path).map((m) => ({ ...m, invert_match: true })),
      false,
    );
    if (own.length > 0) action("rule_headers", String(i), own, true);
  } else if (own.length > 0) {
    action("rule", String(i), own, true);
  } else {
    // Every request (a per-client rule by address alone): a fixed entry names the rule.
    actions.push({ generic_key: { descriptor_key: "rule", descriptor_value: String(i) } });
    entries.push({ key: "rule", value: String(i) });
  }
  for (let j = 0; j < i; j++) {
    if (!canOverlap(rules[j], rule)) continue;
    for (const clause of clauses(rules[j])) action("not_rule", String(j), clause, false);
  }
  const client = clientAction(rule);
  if (client) {
    actions.push(client.action);
    entries.push(client.entry);
  }
  return { actions, entries };
}
