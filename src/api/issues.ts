/** Turns zod issues into field errors: `spec.local.buckets[1].bucket.fillInterval: "10x" is not ...`. */
import type { z } from "zod";

/**
 * The message integer schemas give for a value of the wrong type (see `integer()` in common.ts):
 * zod's own issue only says "number", which is not what a CRD user needs to read.
 */
export const EXPECTED_INTEGER = "expected integer";

/** One problem with one field of an object. */
export interface FieldError {
  /** Dotted path with bracketed indexes, e.g. `spec.local.buckets[1].bucket.maxTokens`. */
  path: string;
  /** What was expected, in words. */
  message: string;
}

/** The result of parsing an object of a kind: the typed object with defaults filled, or the errors. */
export type ParseResult<T> = { ok: true; value: T } | { ok: false; errors: FieldError[] };

/** Formats a path the way kubectl and users write it: `a.b[1].c`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(String(key))) {
      out += out ? `.${String(key)}` : String(key);
    } else out += `[${JSON.stringify(String(key))}]`;
  }
  return out || "(root)";
}

/**
 * Renders a value for a message: strings quoted, objects as short JSON, and NaN and Infinity
 * (YAML's `.nan` and `.inf`) by their names, where JSON would write null.
 */
export function show(value: unknown): string {
  if (value === undefined) return "nothing";
  if (typeof value === "number" && !Number.isFinite(value)) return String(value);
  const text = JSON.stringify(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** The unit a size bound counts for an origin: `characters` of a string, `entries` of a list or map. */
function sizeUnit(origin: string): string | undefined {
  if (origin === "string") return "characters";
  if (origin === "array" || origin === "object" || origin === "record" || origin === "set") {
    return "entries";
  }
  return undefined;
}

/** zod's type names as a CRD user reads them (a record is a map, which the CRD calls an object). */
const TYPE_NAMES: Record<string, string> = { int: "integer", record: "object" };

/**
 * A validation problem as zod reports it, reduced to what a field error needs; the plan validator
 * (validation/run.ts) makes the same, so both read alike.
 */
export interface Issue {
  readonly code: string;
  readonly path: readonly PropertyKey[];
  /** A message written in the schema, or the library's own (which starts with "Invalid"). */
  readonly message: string;
  readonly expected?: string;
  readonly values?: readonly unknown[];
  readonly origin?: string;
  readonly minimum?: number | bigint;
  readonly maximum?: number | bigint;
  readonly format?: string;
  readonly pattern?: string;
  readonly keys?: readonly string[];
  readonly issues?: readonly { readonly message: string }[];
}

function describe(issue: Issue, input: unknown): string {
  switch (issue.code) {
    case "invalid_type": {
      const expected = issue.message === EXPECTED_INTEGER
        ? "integer"
        : TYPE_NAMES[issue.expected ?? ""] ?? issue.expected;
      return input === undefined
        ? `is required (expected ${expected})`
        : `expected ${expected}, got ${show(input)}`;
    }
    case "invalid_value": {
      const values = issue.values ?? [];
      if (input === undefined) return `is required (${values.map((v) => show(v)).join(" or ")})`;
      return values.length === 1
        ? `${show(input)} is not ${show(values[0])}`
        : `${show(input)} is not one of ${values.map((v) => String(v)).join(", ")}`;
    }
    case "too_small": {
      const unit = sizeUnit(issue.origin ?? "");
      if (unit === "characters" && Number(issue.minimum) === 1) return "must not be empty";
      return unit
        ? `must have at least ${issue.minimum} ${unit}`
        : `${show(input)} is below the minimum ${issue.minimum}`;
    }
    case "too_big": {
      const unit = sizeUnit(issue.origin ?? "");
      if (isSafeIntegerBound(issue)) {
        return `${
          show(input)
        } is above the largest whole number taken (${issue.maximum}, 2^53 - 1)`;
      }
      return unit
        ? `must have at most ${issue.maximum} ${unit}`
        : `${show(input)} is above the maximum ${issue.maximum}`;
    }
    case "invalid_format":
      return issue.format === "regex" && issue.pattern
        ? `${show(input)} does not match ${issue.pattern}`
        : `${show(input)} is not a valid ${issue.format}`;
    case "unrecognized_keys":
      // A key as a path segment: a plain name as it is, any other quoted (a newline in a key
      // must not split the message).
      return `unknown field(s) ${(issue.keys ?? []).map((k) => formatPath([k])).join(", ")}`;
    case "invalid_key":
      return `invalid key: ${(issue.issues ?? []).map((i) => i.message).join("; ")}`;
    default:
      return issue.message;
  }
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = root;
  for (const key of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

/** Converts the issues of a zod error on `input` into field errors; custom messages are kept. */
export function toFieldErrors(
  error: { readonly issues: readonly Issue[] },
  input: unknown,
): FieldError[] {
  // zod's own bound on an integer (2^53 - 1) says nothing when the field has a bound of its own,
  // which it reports beside: keep only the field's.
  const bounded = new Set(
    error.issues.filter((i) => !isSafeIntegerBound(i)).map((i) =>
      `${i.code}:${formatPath(i.path)}`
    ),
  );
  const issues = error.issues.filter((i) =>
    !isSafeIntegerBound(i) || !bounded.has(`${i.code}:${formatPath(i.path)}`)
  );
  return issues.map((issue) => {
    const input_ = valueAt(input, issue.path);
    // Messages written in a schema (refine, regex with `error`) already read as "value is not X".
    const custom = issue.code === "custom" ||
      (issue.code === "invalid_format" && issue.message && !issue.message.startsWith("Invalid"));
    return {
      path: formatPath(issue.path),
      message: custom ? issue.message : describe(issue, input_),
    };
  });
}

/** Whether an issue is zod's bound on any integer (beyond 2^53 - 1 a number is not exact). */
function isSafeIntegerBound(issue: Issue): boolean {
  return (issue.code === "too_big" && issue.maximum === Number.MAX_SAFE_INTEGER) ||
    (issue.code === "too_small" && issue.minimum === Number.MIN_SAFE_INTEGER);
}

/** Field errors as lines of a message: `path: message`. */
export function errorLines(errors: readonly FieldError[]): string[] {
  return errors.map((e) => `${e.path}: ${e.message}`);
}

/** Renders field errors on one line: `path: message; path: message`. */
export function formatErrors(errors: readonly FieldError[]): string {
  return errorLines(errors).join("; ");
}

/**
 * `value` without the object fields that are null, at any depth (list items are kept). The API
 * server prunes such fields of a structural schema that is not nullable before it validates, so a
 * null reads as "not set" here too.
 */
export function withoutNulls(value: unknown): unknown {
  // Most objects have no null field: find that out without copying them.
  return hasNull(value) ? copyWithoutNulls(value) : value;
}

function hasNull(value: unknown): boolean {
  if (value === null || typeof value !== "object") return false;
  if (Array.isArray(value)) return value.some(hasNull);
  for (const key in value) {
    const child = (value as Record<string, unknown>)[key];
    if (child === null || hasNull(child)) return true;
  }
  return false;
}

function copyWithoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(copyWithoutNulls);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    if (child !== null) out[key] = copyWithoutNulls(child);
  }
  return out;
}

/**
 * Parses `input` with `schema`, returning typed output or field errors. Null fields are dropped
 * first and unknown fields are stripped, as the API server prunes both; `input` is not changed.
 */
export function parseWith<S extends z.ZodType>(
  schema: S,
  input: unknown,
): ParseResult<z.output<S>> {
  const cleaned = withoutNulls(input);
  const result = schema.safeParse(cleaned);
  return result.success
    ? { ok: true, value: result.data }
    : { ok: false, errors: toFieldErrors(result.error, cleaned) };
}
