/**
 * The RateLimit resource (gateway.platform-project.io/v1alpha1), docs/design.md "RateLimit": its
 * constants, types and validation. The zod schema is in schema/ratelimit.ts.
 */
import type { z } from "zod";
import type { ParseResult } from "./issues.ts";
import type * as S from "./schema/ratelimit.ts";
import { PLANS } from "./validation/plans.ts";
import { validate, type ValidateOptions } from "./validation/run.ts";

/** A parsed RateLimit, defaults filled. */
export type RateLimit = z.output<typeof S.RateLimitSchema>;
/** RateLimit spec with defaults filled. */
export type RateLimitSpec = z.output<typeof S.RateLimitSpecSchema>;
/** A token bucket. */
export type Bucket = z.output<typeof S.BucketSchema>;
/** An additional bucket rule. */
export type BucketRule = z.output<typeof S.BucketRuleSchema>;
/** A global rule. */
export type GlobalRule = z.output<typeof S.GlobalRuleSchema>;
/** A global limit: requests per unit. */
export type GlobalLimit = z.output<typeof S.GlobalLimitSchema>;
/** The global part of a RateLimit spec. */
export type GlobalSpec = z.output<typeof S.GlobalSchema>;
/** What a local bucket rule and a global rule share: which requests they take. */
export type RuleMatch = Pick<
  BucketRule,
  "path" | "pathPrefix" | "methods" | "hosts" | "headers" | "queryParams" | "perClient"
>;
/** RateLimit status. */
export type RateLimitStatus = z.output<typeof S.RateLimitStatusSchema>;

/**
 * Parses a RateLimit object; returns it with defaults filled, or field errors. Unknown fields are
 * stripped unless `options.unknown` is "refuse" (a file not yet applied, read as kubectl would).
 */
export function parseRateLimit(
  input: unknown,
  options: Pick<ValidateOptions, "unknown"> = {},
): ParseResult<RateLimit> {
  return validate(PLANS.RateLimit, input, options);
}
