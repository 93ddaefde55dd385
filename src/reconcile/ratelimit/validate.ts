/**
 * Whether a parsed RateLimit's spec can be applied, beyond what its schema checks: intervals a
 * multiple of the default's, Envoy's floor, headers, query parameters' names, per-client rules,
 * rules that shadow others.
 */
import { parseFillInterval } from "../../api/duration.ts";
import { show } from "../../api/issues.ts";
import type { RateLimitSpec, RuleMatch } from "../../api/ratelimit.ts";
import { MIN_FILL_INTERVAL_MS } from "../../api/envoy.ts";
import { isLabelValue, isQualifiedName } from "../../api/selector.ts";
import {
  hasControlCharacter,
  hostCovers,
  hostTakes,
  isHttpToken,
  isQueryName,
  isRulePath,
  MAX_BUCKET_RULES,
} from "../../api/ratelimit_bounds.ts";

/** Renders a fillInterval with its value for a message: `fillInterval 45s`. */
function interval(text: string): string {
  return `fillInterval ${text}`;
}

function intervalProblems(local: NonNullable<RateLimitSpec["local"]>): string[] {
  const out: string[] = [];
  const defText = local.defaultBucket.fillInterval;
  const def = parseFillInterval(defText);
  // The schema has checked the form (FILL_INTERVAL_PATTERN): here only the value counts.
  const check = (path: string, text: string): number | undefined => {
    const ms = parseFillInterval(text);
    if (ms !== undefined && ms < MIN_FILL_INTERVAL_MS) {
      // Unreachable with today's syntax (whole seconds or minutes); kept so a finer syntax cannot
      // produce a filter Envoy rejects.
      out.push(`${path} ${text} is below Envoy's minimum of ${MIN_FILL_INTERVAL_MS}ms`);
    }
    return ms;
  };
  check("spec.local.defaultBucket.fillInterval", defText);
  local.buckets.forEach((rule, i) => {
    const path = `spec.local.buckets[${i}].bucket.fillInterval`;
    const ms = check(path, rule.bucket.fillInterval);
    if (ms !== undefined && def !== undefined && ms % def !== 0) {
      out.push(
        `${path} ${rule.bucket.fillInterval} is not a multiple of the default bucket's ${
          interval(defText)
        }`,
      );
    }
  });
  return out;
}

function headerProblems(rule: RuleMatch, at: string): string[] {
  const out: string[] = [];
  const seen = new Map<string, string>();
  for (const [name, value] of Object.entries(rule.headers ?? {})) {
    if (!isHttpToken(name)) out.push(`${at}.headers name ${show(name)} is not an HTTP header name`);
    const lower = name.toLowerCase();
    const other = seen.get(lower);
    if (other !== undefined) {
      out.push(
        `${at}.headers lists ${show(other)} and ${
          show(name)
        }, the same header (names are case-insensitive)`,
      );
    }
    seen.set(lower, name);
    if (hasControlCharacter(value)) {
      out.push(`${at}.headers[${show(name)}] value ${show(value)} has a control character`);
    }
  }
  return out;
}

/** Query parameters' names (their values the schema has checked). */
function queryProblems(rule: RuleMatch, at: string): string[] {
  return Object.keys(rule.queryParams ?? {}).filter((name) => !isQueryName(name)).map((name) =>
    `${at}.queryParams name ${
      show(name)
    } is not a query parameter's name as the workload reads it (letters, digits and -._~[])`
  );
}

/** A per-client rule names one client key: a header's name, or the client IP. */
function perClientProblems(rule: RuleMatch, at: string): string[] {
  const p = rule.perClient;
  if (p === undefined) return [];
  if (p.header !== undefined && p.clientIP !== undefined) {
    return [`${at}.perClient gives header and clientIP; a rule keys its clients on one of them`];
  }
  if (p.clientIP === false) {
    return [`${at}.perClient.clientIP is false; give clientIP: true or a header to key clients on`];
  }
  if (p.header !== undefined && !isHttpToken(p.header)) {
    return [`${at}.perClient.header ${show(p.header)} is not an HTTP header name`];
  }
  return [];
}

/** The headers of a rule, names lower-cased. */
function lowerHeaders(rule: RuleMatch): Map<string, string> {
  return new Map(Object.entries(rule.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
}

/** The header a per-client rule keys on, lower-cased: a request must carry it to match the rule. */
function clientHeader(rule: RuleMatch): string | undefined {
  return rule.perClient?.header?.toLowerCase();
}

/**
 * True when every path `later` takes is one `earlier` takes: `earlier` has no path; or the same
 * exact path; or `earlier`'s prefix starts `later`'s path or prefix. (An exact path takes its query
 * strings too, and a prefix without `?` starts `P?x` only if it starts `P`.)
 */
function pathsCovered(earlier: RuleMatch, later: RuleMatch): boolean {
  if (earlier.pathPrefix !== undefined) {
    const theirs = later.path ?? later.pathPrefix;
    return theirs !== undefined && theirs.startsWith(earlier.pathPrefix);
  }
  return earlier.path === undefined || earlier.path === later.path;
}

/** True when every method `later` takes is one `earlier` takes: `earlier` lists none, or more. */
function methodsCovered(earlier: RuleMatch, later: RuleMatch): boolean {
  const [mine, theirs] = [earlier.methods, later.methods];
  return mine === undefined || (theirs !== undefined && theirs.every((m) => mine.includes(m)));
}

/**
 * True when every host `later` takes is one `earlier` takes: `earlier` lists none, or covers each
 * of `later`'s, or `later` names its Host as a header (`headers: {host: …}`, compared exactly) with
 * a value one of `earlier`'s hosts takes.
 */
function hostsCovered(earlier: RuleMatch, later: RuleMatch): boolean {
  const [mine, theirs] = [earlier.hosts, later.hosts];
  if (mine === undefined) return true;
  if (theirs !== undefined && theirs.every((h) => mine.some((m) => hostCovers(m, h)))) return true;
  const sent = lowerHeaders(later).get("host");
  return sent !== undefined && mine.some((m) => hostTakes(m, sent));
}

/** True when every request `later` matches is matched by `earlier` (so `later` is never used). */
export function covers(earlier: RuleMatch, later: RuleMatch): boolean {
  if (!pathsCovered(earlier, later) || !methodsCovered(earlier, later)) return false;
  if (!hostsCovered(earlier, later)) return false;
  const need = lowerHeaders(earlier);
  const have = lowerHeaders(later);
  const present = clientHeader(earlier);
  if (present !== undefined && !have.has(present) && clientHeader(later) !== present) return false;
  // A query parameter compares by name and value, any occurrence: `later` must require each.
  const query = later.queryParams ?? {};
  if (
    !Object.entries(earlier.queryParams ?? {}).every(([k, v]) =>
      Object.hasOwn(query, k) && query[k] === v
    )
  ) {
    return false;
  }
  return [...need].every(([k, v]) => have.get(k) === v);
}

/**
 * What is wrong with a list of rules at `field` (`spec.local.buckets`, `spec.global.rules`): local
 * and global rules take requests the same way, first match wins.
 */
function ruleProblems(rules: readonly RuleMatch[], field: string): string[] {
  // How many rules there may be, and how long their paths and headers, the schema says.
  const out: string[] = [];
  rules.forEach((rule, i) => {
    const at = `${field}[${i}]`;
    const headers = Object.keys(rule.headers ?? {}).length;
    const query = Object.keys(rule.queryParams ?? {}).length;
    if (
      rule.path === undefined && rule.pathPrefix === undefined && rule.methods === undefined &&
      rule.hosts === undefined && headers === 0 && query === 0 && rule.perClient === undefined
    ) {
      out.push(
        `${at} has no path, pathPrefix, methods, hosts, headers, queryParams or perClient; a rule must say which requests it takes`,
      );
      return;
    }
    out.push(...perClientProblems(rule, at), ...queryProblems(rule, at));
    for (
      const [key, value, like] of [
        ["path", rule.path, "a path like /headers"],
        ["pathPrefix", rule.pathPrefix, "a path prefix like /api/"],
      ] as const
    ) {
      if (value !== undefined && !isRulePath(value)) {
        out.push(`${at}.${key} ${show(value)} is not ${like} (starts with /, no ?, # or spaces)`);
      }
    }
    out.push(...headerProblems(rule, at));
    const first = rules.slice(0, i).findIndex((e) => covers(e, rule));
    if (first >= 0) {
      out.push(
        `${at} is never used: every request it matches is matched first by ${field}[${first}]`,
      );
    }
  });
  return out;
}

function selectorProblems(labels: Record<string, string>): string[] {
  const out: string[] = [];
  if (Object.keys(labels).length === 0) {
    out.push("spec.selectorLabels must select at least one label");
  }
  for (const [k, v] of Object.entries(labels)) {
    if (!isQualifiedName(k)) {
      out.push(`spec.selectorLabels key ${show(k)} is not a valid label key`);
    }
    if (!isLabelValue(v)) {
      out.push(`spec.selectorLabels[${show(k)}] value ${show(v)} is not a valid label value`);
    }
  }
  return out;
}

/**
 * The rules of both parts together: each part's route entries repeat the matchers of its earlier
 * rules (and the global default those of every global rule), so the filter's size follows the
 * rules of both; at most MAX_BUCKET_RULES together, the global default counting as one, keeps the
 * largest filter as small as the largest local-only one (tests/reconcile/ratelimit_bounds_test.ts).
 * Each list's own bound is the CRD's.
 */
function totalRulesProblems(spec: RateLimitSpec): string[] {
  if (!spec.global) return [];
  const local = spec.local?.buckets.length ?? 0;
  const rules = spec.global.rules?.length ?? 0;
  const global = rules + (spec.global.default ? 1 : 0);
  if (local + global <= MAX_BUCKET_RULES) return [];
  return [
    `spec.global has ${rules} rule${rules === 1 ? "" : "s"}${
      spec.global.default ? " and a default" : ""
    } and spec.local.buckets ${local}: at most ${MAX_BUCKET_RULES} rules in both together (the global default counts as one)`,
  ];
}

/** Everything wrong with a parsed spec, one message a problem; empty when it can be applied. */
export function validateSpec(spec: RateLimitSpec): string[] {
  return [
    ...selectorProblems(spec.selectorLabels),
    ...(spec.local ? intervalProblems(spec.local) : []),
    ...(spec.local ? ruleProblems(spec.local.buckets, "spec.local.buckets") : []),
    ...(spec.global ? ruleProblems(spec.global.rules ?? [], "spec.global.rules") : []),
    ...totalRulesProblems(spec),
  ];
}
