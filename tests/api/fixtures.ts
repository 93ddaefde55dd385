/** Minimal valid objects of each kind and a helper that renders parse errors as `path: message`. */
import assert from "node:assert/strict";
import type { ParseResult } from "../../src/api/issues.ts";

/** The errors of a failed parse as `path: message` lines; fails the test when the parse succeeded. */
export function errorsOf<T>(result: ParseResult<T>): string[] {
  assert.ok(!result.ok, "expected the parse to fail");
  return result.errors.map((e) => `${e.path}: ${e.message}`);
}

/** The value of a successful parse; fails the test with the errors otherwise. */
export function valueOf<T>(result: ParseResult<T>): T {
  assert.ok(result.ok, result.ok ? "" : JSON.stringify(result.errors));
  return result.value;
}

/** A Serverless with nothing but what is required. */
export function serverless(spec?: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return {
    apiVersion: "operator.platform-project.io/v1alpha1",
    kind: "Serverless",
    metadata: { name: "default", namespace: "platform-system" },
    ...(spec === undefined ? {} : { spec }),
    ...extra,
  };
}

/** A Scaler with nothing but what is required. */
export function scaler(spec?: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return {
    apiVersion: "operator.platform-project.io/v1alpha1",
    kind: "Scaler",
    metadata: { name: "default", namespace: "platform-system" },
    ...(spec === undefined ? {} : { spec }),
    ...extra,
  };
}

/** A valid bucket. */
export function bucket(fillInterval = "30s", maxTokens: unknown = 5, tokensPerFill: unknown = 5) {
  return { maxTokens, tokensPerFill, fillInterval };
}

/** A RateLimit with one default bucket and the given additional rules. */
export function rateLimit(buckets?: unknown[], specExtra: Record<string, unknown> = {}) {
  return {
    apiVersion: "gateway.platform-project.io/v1alpha1",
    kind: "RateLimit",
    metadata: { name: "httpbin", namespace: "demo" },
    spec: {
      selectorLabels: { app: "httpbin" },
      local: { defaultBucket: bucket(), ...(buckets === undefined ? {} : { buckets }) },
      ...specExtra,
    },
  };
}
