/**
 * Envoy's header matchers and rate limit actions, as the model evaluates them:
 * `config/route/v3/route_components.proto` (HeaderMatcher, RateLimit.Action) and
 * `type/matcher/v3/string.proto` (StringMatcher). Only what a local rate limit needs is modelled;
 * the parser (envoyconfig.ts) rejects the rest so a config the model cannot read is never guessed at.
 */
import { z } from "zod";

const StringMatcherSchema = z.strictObject({
  exact: z.string().optional(),
  prefix: z.string().min(1).optional(),
  suffix: z.string().min(1).optional(),
  contains: z.string().min(1).optional(),
  safe_regex: z.strictObject({ regex: z.string().min(1), google_re2: z.object({}).optional() })
    .optional(),
  ignore_case: z.boolean().optional(),
}).refine(
  (m) =>
    [m.exact, m.prefix, m.suffix, m.contains, m.safe_regex].filter((x) => x !== undefined)
      .length === 1,
  { error: "a StringMatcher needs exactly one of exact, prefix, suffix, contains, safe_regex" },
);

/** `envoy.config.route.v3.HeaderMatcher` (range_match is not modelled). */
export const HeaderMatcherSchema = z.strictObject({
  name: z.string().min(1),
  exact_match: z.string().optional(),
  prefix_match: z.string().min(1).optional(),
  suffix_match: z.string().min(1).optional(),
  contains_match: z.string().min(1).optional(),
  safe_regex_match: z.strictObject({ regex: z.string().min(1) }).optional(),
  present_match: z.boolean().optional(),
  string_match: StringMatcherSchema.optional(),
  invert_match: z.boolean().optional(),
  treat_missing_header_as_empty: z.boolean().optional(),
}).refine(
  (m) =>
    [
      m.exact_match,
      m.prefix_match,
      m.suffix_match,
      m.contains_match,
      m.safe_regex_match,
      m.present_match,
      m.string_match,
    ].filter((x) => x !== undefined).length <= 1,
  { error: "a HeaderMatcher takes at most one match specifier" },
);

/** A parsed header matcher. */
export type HeaderMatcher = z.output<typeof HeaderMatcherSchema>;

/** `RateLimit.Action`: the three kinds a local rate limit on request data uses. */
export const ActionSchema = z.strictObject({
  request_headers: z.strictObject({
    header_name: z.string().min(1),
    descriptor_key: z.string().min(1),
    skip_if_absent: z.boolean().optional(),
  }).optional(),
  generic_key: z.strictObject({
    descriptor_value: z.string().min(1),
    descriptor_key: z.string().min(1).optional(),
  }).optional(),
  header_value_match: z.strictObject({
    descriptor_key: z.string().min(1).optional(),
    descriptor_value: z.string().min(1),
    expect_match: z.boolean().optional(),
    headers: z.array(HeaderMatcherSchema).min(1),
  }).optional(),
}).refine((a) => Object.keys(a).length === 1, {
  error: "an action needs exactly one of request_headers, generic_key, header_value_match",
});

/** A parsed rate limit action. */
export type Action = z.output<typeof ActionSchema>;

/** One entry of a descriptor: `(key, value)`. */
export interface DescriptorEntry {
  key: string;
  value: string;
}

/** The StringMatcher an HeaderMatcher uses, normalised from its legacy one-field forms. */
function stringMatcherOf(m: HeaderMatcher): z.output<typeof StringMatcherSchema> | undefined {
  if (m.string_match) return m.string_match;
  if (m.exact_match !== undefined) return { exact: m.exact_match };
  if (m.prefix_match !== undefined) return { prefix: m.prefix_match };
  if (m.suffix_match !== undefined) return { suffix: m.suffix_match };
  if (m.contains_match !== undefined) return { contains: m.contains_match };
  if (m.safe_regex_match) return { safe_regex: m.safe_regex_match };
  return undefined;
}

/**
 * StringMatcher semantics. RE2 `safe_regex` matches the whole value (RE2::FullMatch); JavaScript's
 * RegExp stands in for RE2 here, which agrees on the literal-heavy patterns a rate limit uses.
 */
export function matchString(m: z.output<typeof StringMatcherSchema>, value: string): boolean {
  const fold = (s: string) => (m.ignore_case ? s.toLowerCase() : s);
  const v = fold(value);
  if (m.exact !== undefined) return v === fold(m.exact);
  if (m.prefix !== undefined) return v.startsWith(fold(m.prefix));
  if (m.suffix !== undefined) return v.endsWith(fold(m.suffix));
  if (m.contains !== undefined) return v.includes(fold(m.contains));
  if (m.safe_regex) return new RegExp(`^(?:${m.safe_regex.regex})$`, "s").test(value);
  return false;
}

/**
 * HeaderMatcher semantics (`HeaderUtility::HeaderData::matchesHeaders`): a missing header never
 * matches, inverted or not, except through `present_match` (present_match: false or an inverted
 * present_match: true match an absent header), unless `treat_missing_header_as_empty` makes it "".
 */
export function matchHeader(m: HeaderMatcher, headers: ReadonlyMap<string, string>): boolean {
  const found = headers.get(m.name.toLowerCase());
  const invert = m.invert_match === true;
  const value = found ?? (m.treat_missing_header_as_empty ? "" : undefined);
  if (value === undefined) {
    return m.present_match !== undefined && m.present_match === invert;
  }
  if (m.present_match !== undefined) return m.present_match !== invert;
  const sm = stringMatcherOf(m);
  const matched = sm === undefined ? true : matchString(sm, value);
  return matched !== invert;
}

/** All matchers match (the AND of `HeaderUtility::matchHeaders`). */
export function matchAllHeaders(
  matchers: readonly HeaderMatcher[],
  headers: ReadonlyMap<string, string>,
): boolean {
  return matchers.every((m) => matchHeader(m, headers));
}

/** The entry an action appends for a request; undefined when it appends none. */
export function actionEntry(
  action: Action,
  headers: ReadonlyMap<string, string>,
): DescriptorEntry | undefined {
  if (action.request_headers) {
    const a = action.request_headers;
    const value = headers.get(a.header_name.toLowerCase());
    return value === undefined ? undefined : { key: a.descriptor_key, value };
  }
  if (action.generic_key) {
    const a = action.generic_key;
    return { key: a.descriptor_key ?? "generic_key", value: a.descriptor_value };
  }
  if (action.header_value_match) {
    const a = action.header_value_match;
    const expect = a.expect_match ?? true;
    if (matchAllHeaders(a.headers, headers) !== expect) return undefined;
    return { key: a.descriptor_key ?? "header_match", value: a.descriptor_value };
  }
  return undefined;
}

/**
 * The descriptor one `rate_limits` entry produces: Envoy appends one entry per action in order and
 * produces the descriptor only if every action appended one (envoy PR #632), except that a
 * `request_headers` action with `skip_if_absent` is skipped instead of cancelling the descriptor.
 */
export function descriptorOf(
  actions: readonly Action[],
  headers: ReadonlyMap<string, string>,
): DescriptorEntry[] | undefined {
  const entries: DescriptorEntry[] = [];
  for (const action of actions) {
    const entry = actionEntry(action, headers);
    if (entry) entries.push(entry);
    else if (!action.request_headers?.skip_if_absent) return undefined;
  }
  return entries.length > 0 ? entries : undefined;
}

/** Ordered equality of two descriptors (`LocalDescriptorEqual`: no partial or unordered match). */
export function sameDescriptor(
  a: readonly DescriptorEntry[],
  b: readonly DescriptorEntry[],
): boolean {
  return a.length === b.length && a.every((e, i) => e.key === b[i].key && e.value === b[i].value);
}
