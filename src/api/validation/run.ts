/**
 * Validates a value against a plan the way zod validates it against the schema the plan came from:
 * the same output (defaults filled, unknown fields stripped) and the same issues in the same order.
 * tests/api/validation_test.ts holds the two side by side on generated objects.
 */
import { type FieldError, type ParseResult, toFieldErrors, withoutNulls } from "../issues.ts";
import { type Found, oversized, type Result, runChecks } from "./checks.ts";
import type { ValidationPlan } from "./plan.ts";
import { isObject } from "../json.ts";
import { unknownFields, unknownSpecFields } from "./unknown.ts";

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (!isObject(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function typeIssue(expected: string, message = ""): Found {
  return { code: "invalid_type", expected, path: [], message };
}

function prefixed(key: PropertyKey, issues: readonly Found[]): Found[] {
  return issues.map((i) => ({ ...i, path: [key, ...i.path] }));
}

function optionalIn(plan: ValidationPlan): "optional" | "defaulted" | undefined {
  if (plan.type === "default" || plan.type === "prefault") return "defaulted";
  if (plan.type === "optional") return optionalIn(plan.inner) ?? "optional";
  return undefined;
}

/** A field of an object plan, with what `runObject` asks of it. */
interface ShapeField {
  key: string;
  child: ValidationPlan;
  optin: "optional" | "defaulted" | undefined;
  optout: boolean;
}

/** The fields of each object plan (plans are constants): listed once, not on every parse. */
const shapes = new WeakMap<object, ShapeField[]>();

function shapeOf(plan: Extract<ValidationPlan, { type: "object" }>): ShapeField[] {
  let fields = shapes.get(plan.shape);
  if (!fields) {
    fields = Object.entries(plan.shape).map(([key, child]) => ({
      key,
      child,
      optin: optionalIn(child),
      optout: child.type === "optional",
    }));
    shapes.set(plan.shape, fields);
  }
  return fields;
}

function runObject(
  plan: Extract<ValidationPlan, { type: "object" }>,
  input: Record<string, unknown>,
): Result {
  const out: Record<string, unknown> = {};
  const issues: Found[] = [];
  for (const { key, child, optin, optout } of shapeOf(plan)) {
    if (key === "__proto__") continue;
    const present = key in input;
    if (!present && optout && optin === "optional") continue;
    const r = run(child, input[key]);
    // zod drops the issues of a key that is absent and may be.
    if (r.issues.length && optin !== undefined && optout && !present) continue;
    if (r.issues.length) issues.push(...prefixed(key, r.issues));
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
  plan: Extract<ValidationPlan, { type: "record" }>,
  input: Record<string, unknown>,
): Result {
  const out: Record<string, unknown> = {};
  const issues: Found[] = [];
  for (const key of Object.keys(input)) {
    if (key === "__proto__") continue;
    const r = run(plan.value, input[key]);
    if (r.issues.length) issues.push(...prefixed(key, r.issues));
    out[key] = r.value;
  }
  return { value: out, issues };
}

function runArray(plan: Extract<ValidationPlan, { type: "array" }>, input: unknown[]): Result {
  const out: unknown[] = [];
  const issues: Found[] = [];
  input.forEach((item, i) => {
    const r = run(plan.item, item);
    if (r.issues.length) issues.push(...prefixed(i, r.issues));
    out[i] = r.value;
  });
  return { value: out, issues };
}

/**
 * `structuredClone(value)` without its serialization for the usual defaults: a primitive is its
 * own clone, and an empty plain object or array clones to a new empty one.
 */
function copyOfDefault(value: unknown): unknown {
  const t = typeof value;
  if (value === null || (t !== "object" && t !== "function" && t !== "symbol")) return value;
  const empty = t === "object" && Object.keys(value as object).length === 0;
  if (empty && Array.isArray(value) && value.length === 0) return [];
  if (empty && Object.getPrototypeOf(value) === Object.prototype) return {};
  return structuredClone(value);
}

/** The type's own parse, before its checks. */
function parseType(plan: ValidationPlan, input: unknown): Result {
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
      if (input === undefined) return { value: copyOfDefault(plan.value), issues: [] };
      const r = run(plan.inner, input);
      return r.value === undefined ? { ...r, value: copyOfDefault(plan.value) } : r;
    }
    case "prefault":
      return run(plan.inner, input === undefined ? copyOfDefault(plan.value) : input);
  }
}

function run(plan: ValidationPlan, input: unknown): Result {
  const big = plan.type === "array" ? oversized(plan, input) : undefined;
  if (big) return { value: input, issues: [big] };
  const result = parseType(plan, input);
  if ("checks" in plan) runChecks(plan.checks, plan.type === "int", result);
  return result;
}

/** How `validate` treats what the API server would prune or refuse. */
export interface ValidateOptions {
  /** Null fields: dropped first ("drop", the default, as pruning does) or validated as they are. */
  nulls?: "drop" | "keep";
  /**
   * Fields the schema does not know: stripped ("strip", the default), refused ("refuse": a file
   * before it is applied, as kubectl's strict field validation refuses it; the unknown fields are
   * then the only errors, since the API server stops there too), or refused in `spec` only
   * ("spec": the operator reading what the API server stored, which pruned what the CRD does not
   * know; a field there that this schema does not know comes from a CRD newer than the operator,
   * and ignoring it could apply a broader limit than meant. Metadata is the API server's and
   * status the operator's own).
   */
  unknown?: "strip" | "refuse" | "spec";
}

/**
 * Validates `input` against `plan`: the typed value with defaults filled, or field errors. Null
 * fields are dropped first and unknown fields stripped, as the API server prunes both, unless
 * `options` say otherwise; `input` is not changed.
 */
export function validate<T>(
  plan: ValidationPlan,
  input: unknown,
  options: ValidateOptions = {},
): ParseResult<T> {
  const cleaned = options.nulls === "keep" ? input : withoutNulls(input);
  if (options.unknown === "refuse") {
    const unknown = unknownFields(plan, cleaned);
    if (unknown.length > 0) return { ok: false, errors: unknown };
  } else if (options.unknown === "spec") {
    const unknown = unknownSpecFields(plan, cleaned);
    if (unknown.length > 0) return { ok: false, errors: unknown };
  }
  const { value, issues } = run(plan, cleaned);
  if (issues.length === 0) return { ok: true, value: value as T };
  const errors: FieldError[] = toFieldErrors({ issues }, cleaned);
  return { ok: false, errors };
}
