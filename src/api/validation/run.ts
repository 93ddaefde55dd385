/**
 * Validates a value against a plan the way zod validates it against the schema the plan came from:
 * the same output (defaults filled, unknown fields stripped) and the same issues in the same order.
 * tests/api/validation_test.ts holds the two side by side on generated objects.
 */
import {
  type FieldError,
  type Issue,
  type ParseResult,
  toFieldErrors,
  withoutNulls,
} from "../issues.ts";
import type { Check, Message, Plan } from "./plan.ts";

/** An issue while it is collected: `continue: false` or absent stops later checks (zod's abort). */
type Found = Issue & { path: PropertyKey[]; continue?: boolean };

interface Result {
  value: unknown;
  issues: Found[];
}

const INPUT = "{input}";

/** A schema message with its `{input}` filled in. */
function render(message: Message, input: unknown): string {
  return message.includes(INPUT) ? message.split(INPUT).join(JSON.stringify(input)) : message;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (!isObject(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Any issue that does not say `continue: true` stops the checks after it. */
function aborted(issues: readonly Found[], from = 0): boolean {
  for (let i = from; i < issues.length; i++) if (issues[i].continue !== true) return true;
  return false;
}

function explicitlyAborted(issues: readonly Found[]): boolean {
  return issues.some((i) => i.continue === false);
}

function typeIssue(expected: string, message = ""): Found {
  return { code: "invalid_type", expected, path: [], message };
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
      if (patternOf(check.source).test(value as string)) return;
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
    case "anyOf": {
      const passes = check.check === "minProperties"
        ? Object.keys(value as object).length >= check.n
        : check.fields.some((f) => (value as Record<string, unknown>)[f] !== undefined);
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
function runChecks(checks: readonly Check[] | undefined, numeric: boolean, result: Result): void {
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

function prefixed(key: PropertyKey, issues: readonly Found[]): Found[] {
  return issues.map((i) => ({ ...i, path: [key, ...i.path] }));
}

function optionalIn(plan: Plan): "optional" | "defaulted" | undefined {
  if (plan.type === "default" || plan.type === "prefault") return "defaulted";
  if (plan.type === "optional") return optionalIn(plan.inner) ?? "optional";
  return undefined;
}

function runObject(
  plan: Extract<Plan, { type: "object" }>,
  input: Record<string, unknown>,
): Result {
  const out: Record<string, unknown> = {};
  const issues: Found[] = [];
  for (const [key, child] of Object.entries(plan.shape)) {
    if (key === "__proto__") continue;
    const present = key in input;
    const optin = optionalIn(child);
    const optout = child.type === "optional";
    if (!present && optout && optin === "optional") continue;
    const r = run(child, input[key]);
    // zod drops the issues of a key that is absent and may be.
    if (r.issues.length && optin !== undefined && optout && !present) continue;
    issues.push(...prefixed(key, r.issues));
    if (!present && optin === undefined) {
      if (!r.issues.length) {
        issues.push({ code: "invalid_type", expected: "nonoptional", path: [key], message: "" });
      }
      continue;
    }
    if (r.value === undefined) {
      if (present || (optin === "defaulted" && !optout)) out[key] = undefined;
    } else out[key] = r.value;
  }
  if (plan.unknown === "keep") {
    for (const key in input) {
      if (key in plan.shape || key === "__proto__") continue;
      out[key] = input[key];
    }
  }
  return { value: out, issues };
}

function runRecord(
  plan: Extract<Plan, { type: "record" }>,
  input: Record<string, unknown>,
): Result {
  const out: Record<string, unknown> = {};
  const issues: Found[] = [];
  for (const key of Object.keys(input)) {
    if (key === "__proto__") continue;
    const r = run(plan.value, input[key]);
    issues.push(...prefixed(key, r.issues));
    out[key] = r.value;
  }
  return { value: out, issues };
}

function runArray(plan: Extract<Plan, { type: "array" }>, input: unknown[]): Result {
  const out: unknown[] = [];
  const issues: Found[] = [];
  input.forEach((item, i) => {
    const r = run(plan.item, item);
    issues.push(...prefixed(i, r.issues));
    out[i] = r.value;
  });
  return { value: out, issues };
}

/** The type's own parse, before its checks. */
function parseType(plan: Plan, input: unknown): Result {
  switch (plan.type) {
    case "string":
      return { value: input, issues: typeof input === "string" ? [] : [typeIssue("string")] };
    case "boolean":
      return { value: input, issues: typeof input === "boolean" ? [] : [typeIssue("boolean")] };
    case "int": {
      const message = plan.typeMessage ?? "";
      if (typeof input !== "number" || !Number.isFinite(input)) {
        return { value: input, issues: [typeIssue("number", message)] };
      }
      if (!Number.isInteger(input)) {
        return { value: input, issues: [{ ...typeIssue("int", message), continue: false }] };
      }
      if (!Number.isSafeInteger(input)) {
        const bound = input > 0
          ? { code: "too_big", maximum: Number.MAX_SAFE_INTEGER }
          : { code: "too_small", minimum: Number.MIN_SAFE_INTEGER };
        return {
          value: input,
          issues: [{ ...bound, origin: "int", path: [], message: "", continue: true }],
        };
      }
      return { value: input, issues: [] };
    }
    case "enum":
      return plan.values.includes(input as string) ? { value: input, issues: [] } : {
        value: input,
        issues: [{ code: "invalid_value", values: plan.values, path: [], message: "" }],
      };
    case "object":
      return isObject(input)
        ? runObject(plan, input)
        : { value: input, issues: [typeIssue("object")] };
    case "record":
      return isPlainObject(input)
        ? runRecord(plan, input)
        : { value: input, issues: [typeIssue("record")] };
    case "array":
      return Array.isArray(input)
        ? runArray(plan, input)
        : { value: input, issues: [typeIssue("array")] };
    case "optional":
      return input === undefined ? { value: input, issues: [] } : run(plan.inner, input);
    case "default": {
      if (input === undefined) return { value: structuredClone(plan.value), issues: [] };
      const r = run(plan.inner, input);
      return r.value === undefined ? { ...r, value: structuredClone(plan.value) } : r;
    }
    case "prefault":
      return run(plan.inner, input === undefined ? structuredClone(plan.value) : input);
  }
}

function run(plan: Plan, input: unknown): Result {
  const result = parseType(plan, input);
  if ("checks" in plan) runChecks(plan.checks, plan.type === "int", result);
  return result;
}

/**
 * Validates `input` against `plan`: the typed value with defaults filled, or field errors. Null
 * fields are dropped first (unless `nulls` is "keep") and unknown fields stripped, as the API server
 * prunes both; `input` is not changed.
 */
export function validate<T>(
  plan: Plan,
  input: unknown,
  nulls: "drop" | "keep" = "drop",
): ParseResult<T> {
  const cleaned = nulls === "drop" ? withoutNulls(input) : input;
  const { value, issues } = run(plan, cleaned);
  if (issues.length === 0) return { ok: true, value: value as T };
  const errors: FieldError[] = toFieldErrors({ issues }, cleaned);
  return { ok: false, errors };
}
