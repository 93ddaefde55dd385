/**
 * Kubernetes label selectors in their string form (`a=b,c!=d,e,!f,g in (x,y),h notin (z)`), as a
 * predicate on labels: the cache needs it to know whether an object it wrote belongs to a watch.
 */

/** A parsed selector: true when `labels` match. */
export type LabelMatcher = (labels: Readonly<Record<string, string>>) => boolean;

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
  return out.map((t) => t.trim()).filter((t) => t !== "");
}

const KEY = String.raw`[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?`;
const VALUE = String.raw`([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?`;
const SET = new RegExp(`^(${KEY})\\s+(in|notin)\\s+\\(([^()]*)\\)$`);
const EQ = new RegExp(`^(${KEY})\\s*(==|=|!=)\\s*(${VALUE})$`);
const EXISTS = new RegExp(`^(!?)\\s*(${KEY})$`);

function term(text: string): LabelMatcher | undefined {
  const set = SET.exec(text);
  if (set) {
    const [, key, , op, list] = set;
    const values = new Set(list.split(",").map((v) => v.trim()));
    return op === "in"
      ? (l) => Object.hasOwn(l, key) && values.has(l[key])
      : (l) => !Object.hasOwn(l, key) || !values.has(l[key]);
  }
  const eq = EQ.exec(text);
  if (eq) {
    const [, key, , op, value] = eq;
    return op === "!=" ? (l) => l[key] !== value : (l) => Object.hasOwn(l, key) && l[key] === value;
  }
  const exists = EXISTS.exec(text);
  if (exists) {
    const [, not, key] = exists;
    return not ? (l) => !Object.hasOwn(l, key) : (l) => Object.hasOwn(l, key);
  }
  return undefined;
}

/**
 * The matcher of `selector` (every term must hold; empty or absent matches everything), or
 * undefined when it does not parse.
 */
export function parseSelector(selector: string | undefined): LabelMatcher | undefined {
  const matchers: LabelMatcher[] = [];
  for (const t of terms(selector ?? "")) {
    const m = term(t);
    if (!m) return undefined;
    matchers.push(m);
  }
  return (labels) => matchers.every((m) => m(labels));
}
