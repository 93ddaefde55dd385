/**
 * The Serverless module resource (operator.platform-project.io/v1alpha1), docs/design.md
 * "Serverless": its types and validation. The zod schema is in schema/serverless.ts.
 */
import type { z } from "zod";
import type { ParseResult } from "./issues.ts";
import type * as S from "./schema/serverless.ts";
import { PLANS } from "./validation/plans.ts";
import { validate, type ValidateOptions } from "./validation/run.ts";

/** A parsed Serverless, defaults filled. */
export type Serverless = z.output<typeof S.ServerlessSchema>;
/** Serverless spec with defaults filled. */
export type ServerlessSpec = z.output<typeof S.ServerlessSpecSchema>;
/** Serverless status. */
export type ServerlessStatus = z.output<typeof S.ServerlessStatusSchema>;

/**
 * Parses a Serverless object; returns it with defaults filled, or field errors. Unknown fields are
 * stripped unless `options.unknown` says otherwise (`ValidateOptions`).
 */
export function parseServerless(
  input: unknown,
  options: Pick<ValidateOptions, "unknown"> = {},
): ParseResult<Serverless> {
  return validate(PLANS.Serverless, input, options);
}
