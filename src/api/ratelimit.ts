/**
 * The RateLimit resource (gateway.platform-project.io/v1alpha1), docs/design.md "RateLimit": its
 * constants, types and validation. The zod schema is in schema/ratelimit.ts.
 */
import type { z } from "zod";
import type { ParseResult } from "./issues.ts";
import type * as S from "./schema/ratelimit.ts";
import { PLANS } from "./validation/plans.ts";
import { validate } from "./validation/run.ts";

/** API group of RateLimit. */
export const GATEWAY_GROUP = "gateway.platform-project.io";
/** Largest token count Envoy accepts (uint32). */
export const MAX_TOKENS_LIMIT = 4294967295;
/** A bucket rule's path: absolute, without query or fragment (matching ignores the query string). */
export const BUCKET_PATH_PATTERN = "^/[^?#]*$";
/** The message of a bucket rule with neither path nor headers (zod and the CRD's CEL rule). */
export const BUCKET_RULE_NEEDS_MATCH = "a bucket rule needs a path, headers or both";

/** A parsed RateLimit, defaults filled. */
export type RateLimit = z.output<typeof S.RateLimitSchema>;
/** RateLimit spec with defaults filled. */
export type RateLimitSpec = z.output<typeof S.RateLimitSpecSchema>;
/** A token bucket. */
export type Bucket = z.output<typeof S.BucketSchema>;
/** An additional bucket rule. */
export type BucketRule = z.output<typeof S.BucketRuleSchema>;
/** RateLimit status. */
export type RateLimitStatus = z.output<typeof S.RateLimitStatusSchema>;

/** Parses a RateLimit object; returns it with defaults filled, or field errors. */
export function parseRateLimit(input: unknown): ParseResult<RateLimit> {
  return validate(PLANS.RateLimit, input);
}
