/**
 * The RateLimit API's grammar and bounds: what the schema (schema/ratelimit.ts), the CRD and the
 * operator's own validation hold a RateLimit to. A leaf module, so the schema and the types read
 * the same values without importing each other.
 */
import { UINT32_MAX } from "./envoy.ts";

/** Largest token count Envoy accepts (uint32). */
export const MAX_TOKENS_LIMIT = UINT32_MAX;
/** A bucket rule's path: absolute, without query or fragment (matching ignores the query string). */
export const BUCKET_PATH_PATTERN = "^/[^?#]*$";

/** The characters of an HTTP token (RFC 9110): a header's name, a method. */
export const HTTP_TOKEN_CHARS = "[A-Za-z0-9!#$%&'*+.^_`|~-]";
const HTTP_TOKEN = new RegExp(`^${HTTP_TOKEN_CHARS}+$`);
// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Whether `s` is an HTTP token (RFC 9110), as a header's name must be. */
export function isHttpToken(s: string): boolean {
  return HTTP_TOKEN.test(s);
}

/** Whether `s` has a control character (U+0000 to U+001F, U+007F), which no header value may. */
export function hasControlCharacter(s: string): boolean {
  return CONTROL.test(s);
}

/**
 * Whether `s` is a rule's path or path prefix as the operator takes it: it starts with /, and has
 * no ?, #, whitespace or control character (the schema checks only the first three).
 */
export function isRulePath(s: string): boolean {
  return s.startsWith("/") && !/[?#\s]/.test(s) && !CONTROL.test(s);
}
/**
 * The message of a rule (local or global) with no path, pathPrefix, methods, hosts, headers,
 * queryParams or perClient (zod and the CRD's CEL rule).
 */
export const BUCKET_RULE_NEEDS_MATCH =
  "a rule needs a path, pathPrefix, methods, hosts, headers, queryParams or perClient";
/** The message of a rule with both a path and a pathPrefix (zod and the CRD's CEL rule). */
export const RULE_ONE_PATH = "a rule takes path or pathPrefix, not both";
/**
 * The HTTP methods a rule can take, as Gateway API's HTTPMethod names them (and Envoy Gateway's
 * rate limit client selectors take them), in its order: the order the filter lists a rule's methods.
 */
export const HTTP_METHODS = [
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "DELETE",
  "CONNECT",
  "OPTIONS",
  "TRACE",
  "PATCH",
] as const;
/** An HTTP method a rule can take. */
export type HttpMethod = (typeof HTTP_METHODS)[number];
/** The message of a rule that lists a method twice (zod; the CRD's list is a set). */
export const METHODS_TWICE = "lists a method twice";
/**
 * A rule's host, as Gateway API's Hostname is written: a DNS name in lower case, or `*.` and one,
 * which takes every name that ends with `.` and that one after one label or more
 * (`*.example.com` takes `a.example.com` and `a.b.example.com`, not `example.com`).
 */
export const HOST_PATTERN =
  "^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
/** The message of a rule that lists a host twice (zod; the CRD's list is a set). */
export const HOSTS_TWICE = "lists a host twice";

/**
 * Whether every request host `other` (a rule's host, `*.` for a wildcard) takes is one `host`
 * takes: the same name, or `host` is `*.d` and `other` ends with `.d` after one label or more
 * (`*.x.d` and `x.d` both do, and `*.d` itself).
 */
export function hostCovers(host: string, other: string): boolean {
  if (!host.startsWith("*.")) return host === other;
  const suffix = host.slice(1);
  return other.length > suffix.length && other.endsWith(suffix);
}

/**
 * Whether a rule's host takes a request whose Host (`:authority`) is `sent`, as the rule's
 * `:authority` matcher compares (reconcile/ratelimit/entries.ts): ASCII letters in either case, one
 * trailing dot and a port ignored; `*.d` takes a name that ends with `.d` after one label or more.
 * Sound, not complete: a request the matcher takes only by folding more than ASCII (RE2's `(?i)`
 * folds the Kelvin sign into `k`) is said not taken, and Envoy answers such a request 400 anyway.
 */
export function hostTakes(host: string, sent: string): boolean {
  const colon = sent.indexOf(":");
  if (colon >= 0 && !/^[0-9]+$/.test(sent.slice(colon + 1))) return false;
  let name = (colon >= 0 ? sent.slice(0, colon) : sent).replace(/[A-Z]/g, (c) => c.toLowerCase());
  if (name.endsWith(".")) name = name.slice(0, -1);
  if (!host.startsWith("*.")) return name === host;
  const suffix = host.slice(1);
  return name.length > suffix.length && name.endsWith(suffix);
}

/** Whether some request host is taken by both `a` and `b` (rules' hosts, `*.` for a wildcard). */
export function hostsMeet(a: string, b: string): boolean {
  return hostCovers(a, b) || hostCovers(b, a);
}

/** The message of a perClient without exactly one key (zod and the CRD's CEL rule). */
export const PER_CLIENT_NEEDS_KEY =
  "perClient needs one key: header (a request header's name) or clientIP: true";

/*
 * Bounds of what reaches the EnvoyFilter (docs/ratelimit.md "Bounds"). Selector labels take
 * Kubernetes' and Istio's own limits. The rules take what keeps the filter small: rule i's entry
 * repeats the matchers of every earlier rule it can overlap, so the filter grows with the square of
 * the rules times their text, and Go's JSON (what etcd stores) writes `<`, `>` and `&` in six bytes.
 * With these the largest valid RateLimit renders at most 0.94 MB, below the 1 MiB the operator
 * applies and etcd's 1.5 MiB; any rule fits in a request Envoy accepts (60 KiB of headers, 100).
 */

/** Selector labels: Istio's WorkloadSelector allows at most 256 (`MaxProperties=256`). */
export const MAX_SELECTOR_LABELS = 256;
/** A label key: a DNS subdomain prefix (253), `/` and a name (63), as Kubernetes allows. */
export const MAX_LABEL_KEY_LENGTH = 317;
/** A label value: 63 characters (Kubernetes; Istio's WorkloadSelector says the same). */
export const MAX_LABEL_VALUE_LENGTH = 63;
/** Bucket rules: the filter grows with the square of their number. */
export const MAX_BUCKET_RULES = 8;
/** Characters of a rule's path. */
export const MAX_PATH_LENGTH = 1024;
/** Headers a rule matches. */
export const MAX_RULE_HEADERS = 4;
/**
 * Hosts a rule takes. Each is a term of one RE2 alternation (entries.ts's `:authority` matcher),
 * which every later overlapping rule's entry repeats, so their length together is bounded too
 * (MAX_RULE_HOSTS_LENGTH), which keeps the largest filter under the budget above.
 */
export const MAX_RULE_HOSTS = 4;
/** Characters of a host: a DNS name's 253, as Gateway API's Hostname. */
export const MAX_HOST_LENGTH = 253;
/** Characters of a rule's hosts together: two of the longest, or four of 128. */
export const MAX_RULE_HOSTS_LENGTH = 512;
/** The message of a rule whose hosts are longer together than MAX_RULE_HOSTS_LENGTH. */
export const HOSTS_TOO_LONG =
  `hosts must have at most ${MAX_RULE_HOSTS_LENGTH} characters together`;
/** Characters of a header name. */
export const MAX_HEADER_NAME_LENGTH = 64;
/** Characters of a header value. */
export const MAX_HEADER_VALUE_LENGTH = 128;
/**
 * Headers and query parameters a rule matches, together: each query parameter is a `:path` regex
 * (entries.ts's `queryMatcher`), within the length bounds below no longer than the longest header
 * matcher, so the largest filter is no larger with any mix of the two.
 */
export const MAX_RULE_HEADERS_AND_QUERY = MAX_RULE_HEADERS;
/** The message of a rule with more headers and query parameters together than allowed. */
export const HEADERS_AND_QUERY_TOO_MANY =
  `headers and queryParams must have at most ${MAX_RULE_HEADERS_AND_QUERY} entries together`;
/** Characters of a query parameter's name. */
export const MAX_QUERY_NAME_LENGTH = 32;
/** Characters of a query parameter's value. */
export const MAX_QUERY_VALUE_LENGTH = 40;
/**
 * A query parameter's name as a rule takes it, written as the workload reads it (decoded): RFC
 * 3986's unreserved characters and brackets (`ids[]`). The operator checks it (a CEL rule on a
 * map's keys would cost more than the API server allows).
 */
export const QUERY_NAME_PATTERN = "^[A-Za-z0-9._~\\[\\]-]+$";
/**
 * A query parameter's value as a rule takes it, written decoded: RFC 3986's query characters but
 * `&` (which ends a parameter), `+` (a space to form decoding, a plus to Envoy), `%` (write the
 * character itself), `#` and spaces, so that one value has one meaning.
 */
export const QUERY_VALUE_PATTERN = "^[A-Za-z0-9._~!$'()*,/:;=?@\\[\\]-]*$";

const QUERY_NAME = new RegExp(QUERY_NAME_PATTERN);
const QUERY_VALUE = new RegExp(QUERY_VALUE_PATTERN);

/** Whether `s` is a query parameter's name a rule can take (QUERY_NAME_PATTERN). */
export function isQueryName(s: string): boolean {
  return QUERY_NAME.test(s);
}

/** Whether `s` is a query parameter's value a rule can take (QUERY_VALUE_PATTERN). */
export function isQueryValue(s: string): boolean {
  return QUERY_VALUE.test(s);
}
/**
 * Clients a per-client rule keeps a bucket for, on each proxy and route (Envoy's
 * `max_dynamic_descriptors`, a UInt32Value of at least 1, default 20). Envoy accepts up to
 * 4294967295; the bound is memory: a kept client costs its descriptor and bucket on every proxy
 * and route, so 100000 clients of 8 rules stay in tens of megabytes a route.
 */
export const MAX_CLIENTS = 100000;
/** Envoy's default of `max_dynamic_descriptors`. */
export const DEFAULT_MAX_CLIENTS = 20;

/**
 * Global rules. Their route entries repeat earlier rules' matchers like local rules' do, so the
 * operator also holds the rules of both parts together to MAX_BUCKET_RULES (the global default
 * counting as one; reconcile/ratelimit/validate.ts): the largest valid RateLimit with its global
 * part rendered is no larger than the largest local-only one but for the engine's configuration
 * of its domain, an annotation of a few kilobytes, and stays under the operator's budget
 * (tests/reconcile/ratelimit_bounds_test.ts).
 */
export const MAX_GLOBAL_RULES = 8;
/** Requests a global limit admits per unit: the engine's `requests_per_unit` is a uint32. */
export const MAX_GLOBAL_REQUESTS = UINT32_MAX;
/**
 * The units of a global limit and their length in seconds: the engine's fixed windows start at
 * multiples of it from the Unix epoch (envoyproxy/ratelimit src/utils/utilities.go
 * `UnitToDivider`; docs/global-engine.md "How the engine counts").
 */
export const GLOBAL_UNIT_SECONDS = { Second: 1, Minute: 60, Hour: 3600, Day: 86400 } as const;
/** A global limit's unit. */
export type GlobalUnit = keyof typeof GLOBAL_UNIT_SECONDS;
/** The units, in the order the API lists them. */
export const GLOBAL_UNITS = Object.keys(GLOBAL_UNIT_SECONDS) as [GlobalUnit, ...GlobalUnit[]];
/** The message of a spec with neither local nor global limits (zod and the CRD's CEL rule). */
export const SPEC_NEEDS_LIMITS = "a RateLimit needs spec.local, spec.global or both";
/** The message of a global part with neither rules nor a default (zod and the CRD's CEL rule). */
export const GLOBAL_NEEDS_LIMIT = "needs rules, a default or both";
