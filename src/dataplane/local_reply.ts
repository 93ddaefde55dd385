/**
 * What a local_ratelimit filter adds around its decision: how a gRPC call is recognised and
 * answered, and the request headers a rejection not enforced (shadow mode) adds.
 */
import type { LocalRateLimit } from "./envoyconfig.ts";
import { type Request, requestHeaders } from "./request.ts";

/** Envoy's `Grpc::Common::hasGrpcContentType`: `application/grpc`, or it followed by `+`. */
export function isGrpcRequest(request: Request): boolean {
  const type = requestHeaders(request).get("content-type");
  return type !== undefined &&
    (type === GRPC_CONTENT_TYPE || type.startsWith(`${GRPC_CONTENT_TYPE}+`));
}

/**
 * Whether Envoy answers the request with headers only: a `HEAD` request (the method compared
 * exactly, as `is_head_request_` is set). `Http::Utility::sendLocalReply` (source/common/http/
 * utility.cc) keeps the body's content-type (and content-length) but sends no body, and leaves a
 * gRPC reply without its `grpc-message`.
 */
export function isHeadRequest(request: Request): boolean {
  return request.method === "HEAD";
}

/** The content type of a gRPC call and of its local reply. */
export const GRPC_CONTENT_TYPE = "application/grpc";
/** gRPC's RESOURCE_EXHAUSTED (`rate_limited_as_resource_exhausted`). */
export const RESOURCE_EXHAUSTED = 8;
/** gRPC's UNAVAILABLE: what Envoy's `httpToGrpcStatus` makes of a 429. */
export const UNAVAILABLE = 14;

/** `request_headers_to_add_when_not_enforced`, applied as each header's append_action says. */
export function addRequestHeaders(
  set: Record<string, string>,
  cfg: LocalRateLimit,
  original: { get(name: string): string | undefined },
): void {
  for (const h of cfg.requestHeadersWhenNotEnforced) {
    const key = h.key.toLowerCase();
    const current = set[key] ?? original.get(key);
    if (h.appendAction === "OVERWRITE_IF_EXISTS_OR_ADD") set[key] = h.value;
    else if (h.appendAction === "OVERWRITE_IF_EXISTS") {
      if (current !== undefined) set[key] = h.value;
    } else if (h.appendAction === "ADD_IF_ABSENT") {
      if (current === undefined) set[key] = h.value;
    } else set[key] = current === undefined ? h.value : `${current},${h.value}`;
  }
}
