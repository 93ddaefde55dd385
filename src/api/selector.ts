/**
 * Kubernetes label selectors: a map selector (`matchLabels`, a RateLimit's `selectorLabels`) and the
 * string form of the API (`a=b,c!=d,e,!f,g in (x,y),h notin (z)`), with Kubernetes' own grammar of
 * label keys and values (apimachinery's `validation.IsQualifiedName` and `IsValidLabelValue`). One
 * parser for the operator's cache and the simulator's API server, so a selector means the same in
 * both.
 */

/** A parsed selector: true when `labels` match. */
export type LabelMatcher = (labels: Readonly<Record<string, string>>) => boolean;

/** A label's name part (and a value): alphanumeric at both ends, `-`, `_`, `.` inside. */
const NAME = String.raw`[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`;
/** A DNS-1123 subdomain: the optional prefix of a key. */
const SUBDOMAIN = String.raw`[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`;
const NAME_RE = new RegExp(`^${NAME}$`);
const SUBDOMAIN_RE = new RegExp(`^${SUBDOMAIN}$`);

/**
 * True for a qualified name, the grammar of label and annotation keys: `[prefix/]name`, a prefix
 * of at most 253, a name of at most 63.
 */
export function isQualifiedName(key: string): boolean {
  const slash = key.indexOf("/");
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (name.length > 63 || !NAME_RE.test(name)) return false;
  if (slash < 0) return true;
  const prefix = key.slice(0, slash);
  return prefix.length <= 253 && SUBDOMAIN_RE.test(prefix);
}

/** True for a valid label value: empty, or at most 63 characters of a name's grammar. */
export function isLabelValue(value: string): boolean {
  return value === "" || (value.length <= 63 && NAME_RE.test(value));
}

/** True when every pair of `selector` is among `labels` (a map selector). */
export function selects(
  selector: Readonly<Record<string, string>>,
  labels: Readonly<Record<string, string>>,
): boolean {
  for (const k in selector) if (labels[k] !== selector[k]) return false;
  return true;
}

/** Splits on commas outside parentheses. */
function terms(selector: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < selector.length; i++) {
    const c = selector[i];
    if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "," && depth === 0) {
      out.push(selector.slice(start, i));
      start = i + 1;
    }
  }
  out.push(selector.slice(start));
  return out.map((t) => t.trim());
}

const SET = /^(\S+)\s+(in|notin)\s+\(([^()]*)\)$/;
const EQ = /^([^\s=!]+)\s*(==|=|!=)\s*(\S*)$/;
const EXISTS = /^(!?)\s*(\S+)$/;

function term(text: string): LabelMatcher | undefined {
  const set = SET.exec(text);
  if (set) {
    const [, key, op, list] = set;
    const values = list.split(",").map((v) => v.trim());
    if (!isQualifiedName(key) || !values.every(isLabelValue)) return undefined;
    const within = new Set(values);
    return op === "in"
      ? (l) => Object.hasOwn(l, key) && within.has(l[key])
      : (l) => !Object.hasOwn(l, key) || !within.has(l[key]);
  }
  const eq = EQ.exec(text);
  if (eq) {
    const [, key, op, value] = eq;
    if (!isQualifiedName(key) || !isLabelValue(value)) return undefined;
    return op === "!="
      ? (l) => !Object.hasOwn(l, key) || l[key] !== value
      : (l) => Object.hasOwn(l, key) && l[key] === value;
  }
  const exists = EXISTS.exec(text);
  if (exists) {
    const [, not, key] = exists;
    if (!isQualifiedName(key)) return undefined;
    return not ? (l) => !Object.hasOwn(l, key) : (l) => Object.hasOwn(l, key);
  }
  return undefined;
}

/**
 * The matcher of a selector in the API's string form (every term must hold; empty or absent
 * matches everything), or undefined when it does not parse: a bad term, an empty term between
 * commas, a key or value outside Kubernetes' grammar.
 */
export function parseSelector(selector: string | undefined): LabelMatcher | undefined {
  if (selector === undefined || selector.trim() === "") return () => true;
  const matchers: LabelMatcher[] = [];
  for (const t of terms(selector)) {
    const m = t === "" ? undefined : term(t);
    if (!m) return undefined;
    matchers.push(m);
  }
  return (labels) => matchers.every((m) => m(labels));
}
