/** Targeted faults: which objects they hit, and the errors the API server would answer with. */
import { ApiError } from "../src/runtime/mod.ts";
import type { RequestVerb } from "./cluster/mod.ts";

/** Which object a targeted fault hits; absent fields match anything. */
export interface Target {
  kind?: string;
  namespace?: string;
  name?: string;
}

/** A targeted API error: the next `count` matching requests fail with `code`. */
export interface ApiErrorRule {
  verb?: RequestVerb;
  target: Target;
  code: number;
  count: number;
  retryAfterSeconds?: number;
  message?: string;
}

const REASONS: Record<number, string> = {
  400: "BadRequest",
  403: "Forbidden",
  404: "NotFound",
  409: "Conflict",
  410: "Expired",
  422: "Invalid",
  429: "TooManyRequests",
  500: "InternalError",
  503: "ServiceUnavailable",
  504: "Timeout",
};

/** An ApiError as the API server would send it for `code`. */
export function injectedError(
  code: number,
  what: string,
  retryAfterSeconds?: number,
  message?: string,
): ApiError {
  const text = message ??
    (code === 409
      ? `Operation cannot be fulfilled on ${what}: the object has been modified; please apply your changes to the latest version and try again`
      : code === 429
      ? "the server has received too many requests and has asked us to try again later"
      : `Internal error occurred: injected fault on ${what}`);
  return new ApiError(code, REASONS[code] ?? "InternalError", text, retryAfterSeconds);
}

/** Matches a target against an object's kind, namespace and name. */
export function matchesTarget(
  t: Target,
  kind: string,
  namespace: string | undefined,
  name: string | undefined,
): boolean {
  return (t.kind === undefined || t.kind === kind) &&
    (t.namespace === undefined || t.namespace === namespace) &&
    (t.name === undefined || t.name === name);
}

/** True when two targets name the same objects. */
export function sameTarget(a: Target, b: Target): boolean {
  return a.kind === b.kind && a.namespace === b.namespace && a.name === b.name;
}
