/**
 * zod for the simulator's inputs (scenario files, fault mixes): objects that refuse a field they do
 * not know, naming it with a guess at the one meant, as the API server's strict field validation
 * does for RateLimits (src/api/validation/unknown.ts); and field errors that report a failed union
 * inside the option the value was meant for, where zod says only "Invalid input".
 */
import { z } from "zod";
import { type FieldError, type Issue, show, toFieldErrors } from "../src/api/issues.ts";
import { isObject } from "../src/api/json.ts";
import { closest, didYouMean } from "../src/api/suggest.ts";
import { UNKNOWN_FIELD } from "../src/api/validation/unknown.ts";

/** How a strict object words its own mistakes. */
export interface StrictOptions {
  /** The message when the object is missing (`required for apiError`). */
  required?: string;
  /** The message for a field it does not know, given the known ones (default: unknownField). */
  unknown?: (key: string, known: readonly string[]) => string;
}

/**
 * `unknown field; did you mean X?`. The guess is among all known fields, given or not (a check
 * sees the object with its defaults filled, so it cannot tell which were given).
 */
function unknownField(key: string, known: readonly string[]): string {
  return `${UNKNOWN_FIELD}${didYouMean(key, known)}`;
}

/**
 * `unknown fault kind "x" (did you mean y?); known: a, b`: for a name none of `known` (of a
 * discriminator, of a map's key). Without `quoted` the name is left out: the path ends with it.
 */
export function unknownName(
  what: string,
  name: unknown,
  known: readonly string[],
  quoted = true,
): string {
  const guess = typeof name === "string" ? closest(name, known) : undefined;
  return `unknown ${what}${quoted ? ` ${show(name)}` : ""}${
    guess ? ` (did you mean ${guess}?)` : ""
  }; known: ${known.join(", ")}`;
}

/**
 * An object of `shape` that refuses every field the shape lacks, each at its own path
 * (`steps[0].expectResponse: unknown field; did you mean expectResponses?`). zod's strictObject
 * reports them in one issue at the object, with no guess; this one also reports them beside the
 * other mistakes of the object, so one run of the reader lists them all.
 */
export function strict<S extends z.core.$ZodLooseShape>(
  shape: S,
  opts: StrictOptions = {},
): z.ZodObject<S, z.core.$strict> {
  const known = Object.keys(shape);
  const message = opts.unknown ?? unknownField;
  const required = opts.required;
  const schema = z.looseObject(
    shape,
    required ? { error: (iss) => (iss.input === undefined ? required : undefined) } : undefined,
  ).superRefine((value, ctx) => {
    for (const key of Object.keys(value)) {
      if (Object.hasOwn(shape, key)) continue;
      ctx.addIssue({ code: "custom", path: [key], message: message(key, known) });
    }
  }, { when: (payload) => isObject(payload.value) });
  // A value with a field the shape lacks is refused: what passes has a strict object's fields.
  return schema as unknown as z.ZodObject<S, z.core.$strict>;
}

/** True when a union's option failed on the value's type alone: the value was meant for another. */
function notMeant(option: readonly z.core.$ZodIssue[]): boolean {
  return option.length === 1 && option[0].path.length === 0 &&
    (option[0].code === "invalid_type" || option[0].code === "invalid_value");
}

/**
 * `issues` with each failed union replaced by the issues of the one option the value was meant for
 * (the one that did not fail on its type alone), at their full path; a union with no such option,
 * or several, keeps its own message (give it one).
 */
function meant(issues: readonly z.core.$ZodIssue[], at: readonly PropertyKey[]): Issue[] {
  return issues.flatMap((issue): Issue[] => {
    const path = [...at, ...issue.path];
    if (issue.code === "invalid_union" && issue.errors.length > 0) {
      const options = issue.errors.filter((o) => !notMeant(o));
      if (options.length === 1) return meant(options[0], path);
    }
    // A missing field's message written in the schema (`required for apiError`) is kept.
    const written = issue.code === "invalid_type" && !issue.message.startsWith("Invalid");
    return [{ ...issue, path, ...(written ? { code: "custom" } : {}) }];
  });
}

/**
 * The field errors of a failed parse of `input` (found at `at` of what the user wrote): those of
 * issues.ts, with unions reported in the option meant and missing fields in the schema's words.
 */
export function fieldErrors(
  error: z.ZodError,
  input: unknown,
  at: readonly PropertyKey[] = [],
): FieldError[] {
  const root = at.reduceRight<unknown>((value, key) => ({ [key]: value }), input);
  return toFieldErrors({ issues: meant(error.issues, at) }, root);
}
