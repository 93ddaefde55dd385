/**
 * Envoy's header matchers and rate limit actions, as the model evaluates them:
 * `config/route/v3/route_components.proto` (HeaderMatcher, RateLimit.Action) and
 * `type/matcher/v3/string.proto` (StringMatcher). Only what a local rate limit needs is modelled;
 * the parser (envoyconfig.ts) rejects the rest so a config the model cannot read is never guessed at.
 */
import { z } from "zod";
import type { DescriptorEntry } from "../api/envoy.ts";

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

/** `RateLimit.Action`: the kinds a local rate limit on request data uses. */
export const ActionSchema = z.strictObject({
  // `RemoteAddressAction`: the entry `remote_address` = the trusted client address (request.ts).
  remote_address: z.strictObject({}).optional(),
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
  error:
    "an action needs exactly one of request_headers, remote_address, generic_key, header_value_match",
});

/** A parsed rate limit action. */
export type Action = z.output<typeof ActionSchema>;

/** One entry of a descriptor: `(key, value)`. */
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

/** A request's headers by lower-case name (the lazy view of request.ts). */
export interface HeaderLookup {
  /**
   * Every value of the header joined with ",": what header matchers read
   * (`HeaderUtility::getAllOfHeaderAsString`, source/common/http/header_utility.cc).
   */
  get(name: string): string | undefined;
  /**
   * The first value of the header only: what a `request_headers` rate limit action reads
   * (`RequestHeadersAction::populateDescriptor`, source/common/router/router_ratelimit.cc).
   */
  first(name: string): string | undefined;
  /** The trusted client address the connection manager settled on (request.ts), if any. */
  readonly remoteAddress?: string;
}

/**
 * StringMatcher semantics, compiled once: the test of a value. RE2 `safe_regex` matches the whole
 * value (RE2::FullMatch); JavaScript's RegExp stands in for RE2 here, held to RE2 itself on every
 * regex the operator renders (tests/dataplane/re2_agreement_test.ts; printable ASCII values, as
 * Envoy admits in a path or authority). The RegExp is built on first use.
 */
export function compileStringMatcher(
  m: z.output<typeof StringMatcherSchema>,
): (value: string) => boolean {
  const ic = m.ignore_case === true;
  const fold = (s: string) => (ic ? s.toLowerCase() : s);
  if (m.exact !== undefined) {
    const want = fold(m.exact);
    return ic ? (v) => v.toLowerCase() === want : (v) => v === want;
  }
  if (m.prefix !== undefined) {
    const want = fold(m.prefix);
    return ic ? (v) => v.toLowerCase().startsWith(want) : (v) => v.startsWith(want);
  }
  if (m.suffix !== undefined) {
    const want = fold(m.suffix);
    return ic ? (v) => v.toLowerCase().endsWith(want) : (v) => v.endsWith(want);
  }
  if (m.contains !== undefined) {
    const want = fold(m.contains);
    return ic ? (v) => v.toLowerCase().includes(want) : (v) => v.includes(want);
  }
  if (m.safe_regex) {
    const source = `^(?:${m.safe_regex.regex})$`;
    let re: RegExp | undefined;
    return (v) => (re ??= new RegExp(source, "s")).test(v);
  }
  return () => false;
}

/** StringMatcher semantics (see {@link compileStringMatcher}). */
export function matchString(m: z.output<typeof StringMatcherSchema>, value: string): boolean {
  return compileStringMatcher(m)(value);
}

/**
 * HeaderMatcher semantics (`HeaderUtility::HeaderData::matchesHeaders`), compiled once: a missing
 * header never matches, inverted or not, except through `present_match` (present_match: false or
 * an inverted present_match: true match an absent header), unless `treat_missing_header_as_empty`
 * makes it "".
 */
export function compileHeaderMatcher(m: HeaderMatcher): (headers: HeaderLookup) => boolean {
  const name = m.name.toLowerCase();
  const invert = m.invert_match === true;
  const missingAsEmpty = m.treat_missing_header_as_empty === true;
  const present = m.present_match;
  const sm = stringMatcherOf(m);
  const test = sm === undefined ? undefined : compileStringMatcher(sm);
  return (headers) => {
    const found = headers.get(name);
    const value = found ?? (missingAsEmpty ? "" : undefined);
    if (value === undefined) return present !== undefined && present === invert;
    if (present !== undefined) return present !== invert;
    return (test === undefined ? true : test(value)) !== invert;
  };
}

/** HeaderMatcher semantics (see {@link compileHeaderMatcher}). */
export function matchHeader(m: HeaderMatcher, headers: HeaderLookup): boolean {
  return compileHeaderMatcher(m)(headers);
}

/** All matchers match (the AND of `HeaderUtility::matchHeaders`). */
export function matchAllHeaders(
  matchers: readonly HeaderMatcher[],
  headers: HeaderLookup,
): boolean {
  return matchers.every((m) => matchHeader(m, headers));
}

interface CompiledAction {
  /** The entry the action appends for a request; undefined when it appends none. */
  entry: (headers: HeaderLookup) => DescriptorEntry | undefined;
  skipIfAbsent: boolean;
  /** The entry it appends whenever it appends one, for actions that read no header value. */
  fixedEntry?: DescriptorEntry;
}

function compileAction(action: Action): CompiledAction {
  if (action.request_headers) {
    const a = action.request_headers;
    const name = a.header_name.toLowerCase();
    return {
      // Envoy takes the first value of a repeated header, where header matchers join them all:
      // `RequestHeadersAction::populateDescriptor` (source/common/router/router_ratelimit.cc)
      // reads `header_value[0]`, with "TODO(envoyproxy/envoy#13454): Potentially populate all
      // header values" (read at envoyproxy/envoy 0229e39d; older versions read `headers.get()`,
      // the first entry, too).
      entry: (headers) => {
        const value = headers.first(name);
        return value === undefined ? undefined : { key: a.descriptor_key, value };
      },
      skipIfAbsent: a.skip_if_absent === true,
    };
  }
  if (action.remote_address) {
    return {
      entry: (headers) =>
        headers.remoteAddress === undefined
          ? undefined
          : { key: "remote_address", value: headers.remoteAddress },
      skipIfAbsent: false,
    };
  }
  if (action.generic_key) {
    const a = action.generic_key;
    const e = { key: a.descriptor_key ?? "generic_key", value: a.descriptor_value };
    return { entry: () => e, skipIfAbsent: false, fixedEntry: e };
  }
  if (action.header_value_match) {
    const a = action.header_value_match;
    const expect = a.expect_match ?? true;
    const tests = a.headers.map(compileHeaderMatcher);
    const e = { key: a.descriptor_key ?? "header_match", value: a.descriptor_value };
    return {
      entry: (headers) => {
        let all = true;
        for (const t of tests) {
          if (!t(headers)) {
            all = false;
            break;
          }
        }
        return all === expect ? e : undefined;
      },
      skipIfAbsent: false,
      fixedEntry: e,
    };
  }
  return { entry: () => undefined, skipIfAbsent: false };
}

/** One `rate_limits` entry's actions, compiled: see {@link compileDescriptor}. */
export interface CompiledDescriptor {
  /** The entries of the descriptor whenever it is produced, when no action reads a header value. */
  readonly fixed?: readonly DescriptorEntry[];
  /** The descriptor for a request (the `fixed` array itself when fixed); undefined when none. */
  of(headers: HeaderLookup): readonly DescriptorEntry[] | undefined;
}

/**
 * The descriptor one `rate_limits` entry produces, compiled once: Envoy appends one entry per
 * action in order and produces the descriptor only if every action appended one (envoy PR #632),
 * except that a `request_headers` action with `skip_if_absent` is skipped instead of cancelling
 * the descriptor.
 */
export function compileDescriptor(actions: readonly Action[]): CompiledDescriptor {
  const compiled = actions.map(compileAction);
  if (compiled.length > 0 && compiled.every((a) => a.fixedEntry !== undefined)) {
    const fixed = compiled.map((a) => a.fixedEntry!);
    return {
      fixed,
      of: (headers) => {
        for (const a of compiled) if (a.entry(headers) === undefined) return undefined;
        return fixed;
      },
    };
  }
  return {
    of: (headers) => {
      const entries: DescriptorEntry[] = [];
      for (const a of compiled) {
        const entry = a.entry(headers);
        if (entry) entries.push(entry);
        else if (!a.skipIfAbsent) return undefined;
      }
      return entries.length > 0 ? entries : undefined;
    },
  };
}

/** The entry an action appends for a request; undefined when it appends none. */
export function actionEntry(
  action: Action,
  headers: HeaderLookup,
): DescriptorEntry | undefined {
  return compileAction(action).entry(headers);
}

/** The descriptor one `rate_limits` entry produces for a request (see {@link compileDescriptor}). */
export function descriptorOf(
  actions: readonly Action[],
  headers: HeaderLookup,
): DescriptorEntry[] | undefined {
  const d = compileDescriptor(actions).of(headers);
  return d && [...d];
}

/** Ordered equality of two descriptors (`LocalDescriptorEqual`: no partial or unordered match). */
export function sameDescriptor(
  a: readonly DescriptorEntry[],
  b: readonly DescriptorEntry[],
): boolean {
  return a.length === b.length && a.every((e, i) => e.key === b[i].key && e.value === b[i].value);
}
