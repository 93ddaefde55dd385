/**
 * Label selectors in the API's string syntax: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`,
 * `a`, `!a`, comma-separated, all must hold.
 */
import { badRequest } from "./errors.ts";

type Requirement =
  | { op: "eq" | "ne"; key: string; value: string }
  | { op: "in" | "notin"; key: string; values: string[] }
  | { op: "exists" | "absent"; key: string };

/** A parsed selector: a predicate on a label map. */
export type Selector = (labels: Readonly<Record<string, string>> | undefined) => boolean;

const KEY = String.raw`[A-Za-z0-9][-A-Za-z0-9_./]*`;
const VALUE = String.raw`[-A-Za-z0-9_.]*`;
const SET = new RegExp(String.raw`^(${KEY})\s+(in|notin)\s+\(([^)]*)\)$`);
const EQ = new RegExp(String.raw`^(${KEY})\s*(==|=|!=)\s*(${VALUE})$`);
const EXISTS = new RegExp(String.raw`^(!?)\s*(${KEY})$`);

/** Splits on commas outside parentheses. */
function clauses(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = "";
  for (const ch of text) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      out.push(cur.trim());
      cur = "";
    } else cur += ch;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

function parseClause(clause: string): Requirement {
  let m = SET.exec(clause);
  if (m) {
    const values = m[3].split(",").map((v) => v.trim()).filter((v) => v !== "");
    return { op: m[2] as "in" | "notin", key: m[1], values };
  }
  m = EQ.exec(clause);
  if (m) return { op: m[2] === "!=" ? "ne" : "eq", key: m[1], value: m[3] };
  m = EXISTS.exec(clause);
  if (m) return { op: m[1] ? "absent" : "exists", key: m[2] };
  throw badRequest(`unable to parse requirement: ${JSON.stringify(clause)}`);
}

function holds(r: Requirement, labels: Readonly<Record<string, string>>): boolean {
  const has = Object.hasOwn(labels, r.key);
  const v = labels[r.key];
  switch (r.op) {
    case "eq":
      return has && v === r.value;
    case "ne":
      return !has || v !== r.value;
    case "in":
      return has && r.values.includes(v);
    case "notin":
      return !has || !r.values.includes(v);
    case "exists":
      return has;
    case "absent":
      return !has;
  }
}

/** Parses a selector string (400 BadRequest when malformed); empty or undefined selects all. */
export function parseSelector(text: string | undefined): Selector {
  if (!text || !text.trim()) return () => true;
  const reqs = clauses(text).map(parseClause);
  return (labels) => reqs.every((r) => holds(r, labels ?? {}));
}

/** True when every key/value of `wanted` is in `labels` (a map selector such as matchLabels). */
export function matchesLabels(
  wanted: Readonly<Record<string, string>>,
  labels: Readonly<Record<string, string>> | undefined,
): boolean {
  return Object.entries(wanted).every(([k, v]) => labels?.[k] === v);
}
