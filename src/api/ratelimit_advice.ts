/**
 * Advice on RateLimit rules that are valid and do what they say, but seldom what their author
 * means: a line each, naming the field. One definition for the preview (`deno task ratelimit
 * preview` prints the lines above its table) and for the admission policy that warns at `kubectl
 * apply` (src/deploy/advice_objects.ts turns each into a CEL check with the same message).
 *
 * Envoy's request header map answers `host` with `:authority` as the client sent it, so a rule's
 * `headers` compare the Host exactly (another letter case or a port escapes the rule, where `hosts`
 * would take it), and a per-client key on it gives each spelling a bucket of its own. And the
 * connection manager removes hop-by-hop headers before any filter, so a rule on one never sees it.
 */
import type { RateLimit, RuleMatch } from "./ratelimit.ts";
import { MAX_BUCKET_RULES, MAX_GLOBAL_RULES } from "./ratelimit_bounds.ts";
import { HOP_BY_HOP_HEADERS } from "./envoy.ts";

/** A list of rules in a RateLimit's spec that advice reads. */
export interface AdvisedRuleList {
  /** Its field path, as messages name it: `spec.local.buckets`. */
  field: string;
  /** The most rules it holds (its CRD bound). */
  max: number;
  /** Its rules in a parsed RateLimit. */
  of(rl: RateLimit): readonly RuleMatch[] | undefined;
}

/** The spec's lists of rules that advice reads: local buckets, then global rules. */
export const ADVISED_RULE_LISTS: readonly AdvisedRuleList[] = [
  { field: "spec.local.buckets", max: MAX_BUCKET_RULES, of: (rl) => rl.spec.local?.buckets },
  { field: "spec.global.rules", max: MAX_GLOBAL_RULES, of: (rl) => rl.spec.global?.rules },
];

/** Whether a header's name is Host (ASCII letters in any case, as header names compare). */
export function isHostHeader(name: string): boolean {
  return /^host$/i.test(name);
}

/** The advice on a rule (`at`, e.g. `spec.local.buckets[0]`) whose headers name Host. */
export function hostHeaderAdvice(at: string): string {
  return `${at}.headers names Host, which the proxy compares exactly: in other letters or with a port (API.example.com, api.example.com:443) a request escapes it; hosts takes a name in any case, with any port.`;
}

/** The advice on a rule (`at`) whose per-client key is the Host header. */
export function hostKeyAdvice(at: string): string {
  return `${at}.perClient keys on Host as sent: each spelling (API.example.com, api.example.com:443) is a client of its own, with its own bucket.`;
}

/** Whether a header's name is one the proxy removes from every request before any filter. */
export function isHopByHopHeader(name: string): boolean {
  return (HOP_BY_HOP_HEADERS as readonly string[]).includes(name.toLowerCase());
}

const HOP_BY_HOP_LIST = `${HOP_BY_HOP_HEADERS.slice(0, -1).join(", ")} or ${
  HOP_BY_HOP_HEADERS.at(-1)
}`;

/** The advice on a rule (`at`) whose headers name a hop-by-hop header. */
export function hopByHopHeaderAdvice(at: string): string {
  return `${at}.headers names a hop-by-hop header (${HOP_BY_HOP_LIST}), which the proxy removes before any filter: the rule matches no request.`;
}

/** The advice on a rule (`at`) whose per-client key is a hop-by-hop header. */
export function hopByHopKeyAdvice(at: string): string {
  return `${at}.perClient keys on a hop-by-hop header (${HOP_BY_HOP_LIST}), which the proxy removes before any filter: no request carries it to the rule.`;
}

/** The advice on one rule at `at`, in the order the admission policy checks it. */
export function ruleAdviceAt(rule: RuleMatch, at: string): string[] {
  const headers = Object.keys(rule.headers ?? {});
  const key = rule.perClient?.header;
  return [
    ...(headers.some(isHostHeader) ? [hostHeaderAdvice(at)] : []),
    ...(key !== undefined && isHostHeader(key) ? [hostKeyAdvice(at)] : []),
    ...(headers.some(isHopByHopHeader) ? [hopByHopHeaderAdvice(at)] : []),
    ...(key !== undefined && isHopByHopHeader(key) ? [hopByHopKeyAdvice(at)] : []),
  ];
}

/** The advice on a RateLimit's rules, local buckets first, each rule in order. */
export function ruleAdvice(rl: RateLimit): string[] {
  return ADVISED_RULE_LISTS.flatMap(({ field, of }) =>
    (of(rl) ?? []).flatMap((r, i) => ruleAdviceAt(r, `${field}[${i}]`))
  );
}
