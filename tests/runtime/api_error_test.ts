import assert from "node:assert/strict";
import { ApiError, isApiError } from "../../src/runtime/cluster.ts";

Deno.test("an ApiError keeps its code, reason, message and Retry-After, captures no frames, and leaves other errors' stacks alone", () => {
  const limit = Error.stackTraceLimit;
  const err = new ApiError(429, "TooManyRequests", "slow down", 3);
  assert.deepEqual(
    [err.code, err.reason, err.message, err.retryAfterSeconds, err.name],
    [429, "TooManyRequests", "slow down", 3, "ApiError"],
  );
  assert.ok(err instanceof Error && isApiError(err, 429));
  assert.equal(err.stack, "ApiError: slow down");
  assert.equal(Error.stackTraceLimit, limit, "the limit is restored");
  assert.match(new Error("other").stack ?? "", /\n\s+at /, "other errors still have frames");
  assert.equal(new ApiError(404, "NotFound", "gone").retryAfterSeconds, undefined);
});
