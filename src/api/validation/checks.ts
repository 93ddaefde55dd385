/**
 * Running a plan node's own checks (lengths, bounds, patterns, refinements) the way zod runs them:
 * the same issues, in the same order, with zod's rules for which checks an earlier issue stops.
 */
import type { Issue } from "../issues.ts";
import type { Check, Message, ValidationPlan } from "./plan.ts";

/** An issue while it is collected: `continue: false` or absent stops later checks (zod's abort). */
export type Found = Issue & { path: PropertyKey[]; continue?: boolean };

/** A node's value and issues, as its parse leaves them. */
export interface Result {
  value: unknown;
  issues: Found[];
}

const INPUT = "{input}";

/** A schema message with its `{input}` filled in. */
function render(message: Message, input: unknown): string {
  return message.includes(INPUT) ? message.split(INPUT).join(JSON.stringify(input)) : message;
}

/** Any issue that does not say `continue: true` stops the checks after it. */
function aborted(issues: readonly Found[], from = 0): boolean {
  for (let i = from; i < issues.length; i++) if (issues[i].continue !== true) return true;
  return false;
}

function explicitlyAborted(issues: readonly Found[]): boolean {
  return issues.some((i) => i.continue === false);
}

/** zod's `when` of a length check: the value has a `length`. */
function hasLength(value: unknown): boolean {
  return value !== null && value !== undefined &&
    (value as { length?: unknown }).length !== undefined;
}

/**
 * Whether a length check passes, strings measured in code points as zod measures them. A code point
 * is one or two UTF-16 units, so the units decide unless they fall where the two measures differ;
 * only then are code points counted (this runs on every string of every reconciled object).
 */
function lengthPasses(value: unknown, check: "min" | "max", n: number): boolean {
  const units = (value as { length: number }).length;
  if (typeof value !== "string") return check === "min" ? units >= n : units <= n;
  if (check === "max" ? units <= n : units >= 2 * n) return true;
  if (check === "min" && units < n) return false;
  const points = [...value].length;
  return check === "min" ? points >= n : points <= n;
}

function lengthOrigin(value: unknown): string {
  return typeof value === "string" ? "string" : Array.isArray(value) ? "array" : "unknown";
}

const patterns = new Map<string, RegExp>();

function patternOf(source: string): RegExp {
  let re = patterns.get(source);
  if (!re) patterns.set(source, re = new RegExp(source));
  return re;
}

/**
 * Answers of each pattern by string, bounded: every parse tests the same names, labels and
 * images again (the patterns have no flags, so a test depends on the string alone).
 */
const answers = new Map<string, Map<string, boolean>>();
const ANSWERS_MAX = 4096;

function matches(source: string, value: unknown): boolean {
  if (typeof value !== "string") return patternOf(source).test(value as string);
  let known = answers.get(source);
  if (!known) answers.set(source, known = new Map());
  let answer = known.get(value);
  if (answer === undefined) {
    answer = patternOf(source).test(value);
    if (known.size >= ANSWERS_MAX) known.clear();
    known.set(value, answer);
  }
  return answer;
}

/** Whether an object, map or list passes a refinement check. */
function refinementPasses(
  check: Exclude<Check, { check: "min" | "max" | "regex" }>,
  value: Record<string, unknown>,
): boolean {
  switch (check.check) {
    case "unique": {
      const items = value as unknown as unknown[];
      return new Set(items).size === items.length;
    }
    case "minProperties":
      return Object.keys(value).length >= check.n;
    case "maxProperties":
      return Object.keys(value).length <= check.n;
    case "maxKeyLength":
      return Object.keys(value).every((k) => lengthPasses(k, "max", check.n));
    case "maxTotalLength": {
      const items = value as unknown as unknown[];
      return items.reduce<number>((n, s) => n + (typeof s === "string" ? [...s].length : 0), 0) <=
        check.n;
    }
    case "maxEntriesTogether":
      return check.fields.reduce((n, f) => {
        const m = value[f];
        return n + (m !== null && typeof m === "object" ? Object.keys(m).length : 0);
      }, 0) <= check.n;
    case "anyOf":
      return check.fields.some((f) => value[f] !== undefined);
    case "notBoth":
      return check.fields.some((f) => value[f] === undefined);
  }
}

/** Runs one check; pushes its issue when it fails. `numeric`: min and max bound the value. */
function runCheck(check: Check, value: unknown, numeric: boolean, issues: Found[]): void {
  switch (check.check) {
    case "min":
    case "max": {
      const passes = numeric
        ? (check.check === "min" ? (value as number) >= check.n : (value as number) <= check.n)
        : lengthPasses(value, check.check, check.n);
      if (passes) return;
      issues.push({
        code: check.check === "min" ? "too_small" : "too_big",
        origin: numeric ? "number" : lengthOrigin(value),
        ...(check.check === "min" ? { minimum: check.n } : { maximum: check.n }),
        path: [],
        message: "",
        continue: !check.abort,
      });
      return;
    }
    case "regex":
      if (matches(check.source, value)) return;
      issues.push({
        code: "invalid_format",
        format: "regex",
        pattern: `/${check.source}/`,
        path: [],
        message: check.message === undefined ? "" : render(check.message, value),
        continue: true,
      });
      return;
    case "minProperties":
    case "maxProperties":
    case "maxKeyLength":
    case "maxTotalLength":
    case "maxEntriesTogether":
    case "anyOf":
    case "notBoth":
    case "unique": {
      const passes = refinementPasses(check, value as Record<string, unknown>);
      if (passes) return;
      issues.push({
        code: "custom",
        path: [],
        message: render(check.message, value),
        continue: true,
      });
      return;
    }
  }
}

/**
 * Runs a node's checks after its type's own parse. A length check still runs after an issue that
 * does not say stop outright (zod's `when`); the others skip once any issue aborts.
 */
export function runChecks(
  checks: readonly Check[] | undefined,
  numeric: boolean,
  result: Result,
): void {
  if (!checks) return;
  let stop = aborted(result.issues);
  for (const check of checks) {
    const lengthCheck = !numeric && (check.check === "min" || check.check === "max");
    if (lengthCheck) {
      if (explicitlyAborted(result.issues) || !hasLength(result.value)) continue;
    } else if (stop) continue;
    const before = result.issues.length;
    runCheck(check, result.value, numeric, result.issues);
    if (!stop) stop = aborted(result.issues, before);
  }
}

/**
 * zod parses no item of a list longer than a leading `max` check allows: it reports that bound
 * alone and stops there (a guard against huge inputs), so the plan does the same.
 */
export function oversized(
  plan: Extract<ValidationPlan, { type: "array" }>,
  input: unknown,
): Found | undefined {
  if (!Array.isArray(input)) return undefined;
  for (const check of plan.checks ?? []) {
    if (check.check !== "min" && check.check !== "max") break;
    if (check.check === "max" && input.length > check.n) {
      return {
        code: "too_big",
        origin: "array",
        maximum: check.n,
        path: [],
        message: "",
        continue: false,
      };
    }
  }
  return undefined;
}
