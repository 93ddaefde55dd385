/** Maps API server answers and transport failures to ApiError. */
import { isObject } from "../api/json.ts";
import { ApiError } from "../runtime/mod.ts";

/** The reason Kubernetes gives each HTTP code, for answers without a Status body. */
const REASONS: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  405: "MethodNotAllowed",
  406: "NotAcceptable",
  409: "Conflict",
  410: "Expired",
  413: "RequestEntityTooLarge",
  415: "UnsupportedMediaType",
  422: "Invalid",
  429: "TooManyRequests",
  500: "InternalError",
  503: "ServiceUnavailable",
  504: "Timeout",
};

/** A metav1.Status, as far as the operator reads it. */
interface StatusBody {
  kind?: unknown;
  code?: unknown;
  reason?: unknown;
  message?: unknown;
  details?: { retryAfterSeconds?: unknown };
}

/** Parses a Retry-After header given in seconds (the form the API server sends). */
export function parseRetryAfter(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header.trim());
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}

/**
 * The ApiError of a Status object (from an error answer or a watch ERROR event). `httpCode` is used
 * when the body has no code; the Retry-After header wins over details.retryAfterSeconds.
 */
export function apiErrorFromStatus(body: unknown, httpCode: number, retryAfter?: number): ApiError {
  const status: StatusBody = isObject(body) ? body : {};
  const code = typeof status.code === "number" && status.code > 0 ? status.code : httpCode;
  const reason = typeof status.reason === "string" && status.reason
    ? status.reason
    : REASONS[code] ?? (code >= 500 ? "InternalError" : "Unknown");
  const message = typeof status.message === "string" && status.message
    ? status.message
    : `the API server answered ${code} ${reason}`;
  const detailSeconds = status.details?.retryAfterSeconds;
  const seconds = retryAfter ?? (typeof detailSeconds === "number" ? detailSeconds : undefined);
  return new ApiError(code, reason, message, seconds);
}

/** Reads an error answer's body (a Status when the API server made it) into an ApiError. */
export async function apiErrorFromResponse(res: Response): Promise<ApiError> {
  const retryAfter = parseRetryAfter(res.headers.get("retry-after"));
  let text = "";
  try {
    text = await res.text();
  } catch {
    // The body is best effort: the code alone still classifies the error.
  }
  let body: unknown = undefined;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = { message: text.trim().slice(0, 500) || undefined };
  }
  return apiErrorFromStatus(body, res.status, retryAfter);
}

/**
 * What went wrong, with its cause: Deno's fetch says only "fetch failed" and puts the reason (a
 * refused connection, an untrusted certificate) in `cause`.
 */
/** An error's message with its causes' (`a: b: c`). */
export function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  return err.cause === undefined ? err.message : `${err.message}: ${describe(err.cause)}`;
}

/** The ApiError (code 0) of a request that never got an answer. */
export function transportError(err: unknown, what: string, timedOut: boolean): ApiError {
  if (err instanceof ApiError) return err;
  const detail = describe(err);
  if (timedOut) return new ApiError(0, "Timeout", `${what}: no answer in time (${detail})`);
  return new ApiError(0, "NetworkError", `${what}: ${detail}`);
}
