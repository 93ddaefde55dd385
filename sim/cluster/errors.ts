/** The API server's errors, with the codes, reasons and messages kube-apiserver uses. */
import { ApiError } from "../../src/runtime/mod.ts";
import { type KubeObject, resourceName, type ResourceType } from "../../src/api/object.ts";

/** 404 NotFound for an object. */
export function notFound(type: ResourceType, name: string): ApiError {
  return new ApiError(404, "NotFound", `${resourceName(type)} "${name}" not found`);
}

/** 404 NotFound for a type the server does not serve (CRD not installed, version not served). */
export function noSuchType(type: ResourceType): ApiError {
  return new ApiError(
    404,
    "NotFound",
    `the server could not find the requested resource (${type.plural}${
      type.group ? `.${type.group}` : ""
    })`,
  );
}

/** 409 AlreadyExists on create. */
export function alreadyExists(type: ResourceType, name: string): ApiError {
  return new ApiError(409, "AlreadyExists", `${resourceName(type)} "${name}" already exists`);
}

/** 409 Conflict on a stale resourceVersion or a failed precondition. */
export function conflict(type: ResourceType, name: string, why?: string): ApiError {
  return new ApiError(
    409,
    "Conflict",
    `Operation cannot be fulfilled on ${resourceName(type)} "${name}": ${
      why ??
        "the object has been modified; please apply your changes to the latest version and try again"
    }`,
  );
}

/** 422 Invalid: `Kind.group "name" is invalid: field: message; ...`. */
export function invalid(type: ResourceType, name: string, causes: string[]): ApiError {
  const kind = type.group ? `${type.kind}.${type.group}` : type.kind;
  return new ApiError(422, "Invalid", `${kind} "${name}" is invalid: ${causes.join(", ")}`);
}

/** 400 BadRequest: a malformed request. */
export function badRequest(message: string): ApiError {
  return new ApiError(400, "BadRequest", message);
}

/** 410 Gone: a watch or continue token older than the retained history. */
export function gone(rv: string | number, oldest: number): ApiError {
  return new ApiError(410, "Expired", `too old resource version: ${rv} (${oldest})`);
}

/** 403 Forbidden: creating in a terminating namespace. */
export function namespaceTerminating(
  type: ResourceType,
  name: string,
  namespace: string,
): ApiError {
  return new ApiError(
    403,
    "Forbidden",
    `${
      resourceName(type)
    } "${name}" is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
  );
}

/** 404 for a missing namespace on create. */
export function namespaceNotFound(namespace: string): ApiError {
  return new ApiError(404, "NotFound", `namespaces "${namespace}" not found`);
}

/** The Status object an ERROR watch event carries. */
export function statusObject(err: ApiError): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Status",
    metadata: { name: "" },
    status: "Failure",
    message: err.message,
    reason: err.reason,
    code: err.code,
  };
}
