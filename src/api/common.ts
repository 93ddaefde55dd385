/**
 * What the three kinds share at run time: object metadata and the status Condition, their types and
 * validation. The zod schemas are in schema/common.ts; the operator validates with their plans.
 */
import type { z } from "zod";
import type { ParseResult } from "./issues.ts";
import type { ConditionSchema, ObjectMetaSchema } from "./schema/common.ts";
import { PLANS } from "./validation/plans.ts";
import { validate } from "./validation/run.ts";

/** A status Condition. */
export type Condition = z.infer<typeof ConditionSchema>;
/** Condition status values. */
export type ConditionStatus = Condition["status"];
/** Object metadata, unknown fields kept. */
export type ParsedObjectMeta = z.output<typeof ObjectMetaSchema>;

/** Parses one status Condition as it is (a null field is an error); returns it, or field errors. */
export function parseCondition(input: unknown): ParseResult<Condition> {
  return validate(PLANS.Condition, input, { nulls: "keep" });
}

/** Parses object metadata as it is, unknown fields kept; returns it, or field errors. */
export function parseObjectMeta(input: unknown): ParseResult<ParsedObjectMeta> {
  return validate(PLANS.ObjectMeta, input, { nulls: "keep" });
}
