/**
 * RFC 6902 JSON Patch (add, remove, replace, test) as kube-apiserver applies it: a malformed patch
 * is 400 BadRequest; a patch that does not apply (a failed `test`, a missing path) is 422 Invalid.
 */
import { ApiError } from "../../src/runtime/mod.ts";
import { badRequest } from "./errors.ts";
import { cloneJson } from "./json.ts";
import type { JsonPatchOp } from "../../src/api/object.ts";
import { deepEqual } from "../../src/api/json.ts";

type Json = unknown;

function unprocessable(message: string): ApiError {
  return new ApiError(
    422,
    "Invalid",
    `the server rejected our request due to an error in our request: ${message}`,
  );
}

function pointer(path: string): string[] {
  if (path === "") return [];
  if (!path.startsWith("/")) throw badRequest(`invalid JSON pointer ${JSON.stringify(path)}`);
  return path.slice(1).split("/").map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function isContainer(v: Json): v is Record<string, Json> | Json[] {
  return v !== null && typeof v === "object";
}

function child(parent: Json, key: string, path: string): Json {
  if (Array.isArray(parent)) {
    const i = Number(key);
    if (!/^(0|[1-9][0-9]*)$/.test(key) || i >= parent.length) {
      throw unprocessable(`doc is missing path: ${JSON.stringify(path)}`);
    }
    return parent[i];
  }
  if (isContainer(parent) && Object.hasOwn(parent, key)) {
    return (parent as Record<string, Json>)[key];
  }
  throw unprocessable(`doc is missing path: ${JSON.stringify(path)}`);
}

/** Applies `ops` to a deep copy of `doc`; throws ApiError(400|422) when the patch cannot apply. */
export function applyJsonPatch<T>(doc: T, ops: readonly JsonPatchOp[]): T {
  if (!Array.isArray(ops)) throw badRequest("json patch must be an array of operations");
  let root: Json = cloneJson(doc);
  for (const op of ops) {
    const keys = pointer(op.path);
    if (op.op === "test") {
      // As evanphx/json-patch (the API server's): a missing member of an existing object reads as null.
      const parent = keys.slice(0, -1).reduce((cur, k) => child(cur, k, op.path), root);
      const last = keys[keys.length - 1];
      const absent = keys.length > 0 && isContainer(parent) && !Array.isArray(parent) &&
        !Object.hasOwn(parent, last);
      const actual = absent ? null : keys.length === 0 ? root : child(parent, last, op.path);
      if (!deepEqual(actual, op.value)) throw unprocessable(`Testing value ${op.path} failed`);
      continue;
    }
    if (keys.length === 0) {
      if (op.op === "remove") throw unprocessable("cannot remove the document root");
      root = cloneJson(op.value);
      continue;
    }
    const last = keys[keys.length - 1];
    const parent = keys.slice(0, -1).reduce((cur, k) => child(cur, k, op.path), root);
    if (!isContainer(parent)) {
      throw unprocessable(`doc is missing path: ${JSON.stringify(op.path)}`);
    }
    if (Array.isArray(parent)) {
      const i = last === "-" ? parent.length : Number(last);
      const inRange = /^(0|[1-9][0-9]*)$/.test(last) || last === "-";
      if (op.op === "add") {
        if (!inRange || i > parent.length) {
          throw unprocessable(`add index out of range: ${op.path}`);
        }
        parent.splice(i, 0, cloneJson(op.value));
      } else {
        if (!inRange || i >= parent.length) {
          throw unprocessable(`doc is missing path: ${JSON.stringify(op.path)}`);
        }
        if (op.op === "remove") parent.splice(i, 1);
        else parent[i] = cloneJson(op.value);
      }
      continue;
    }
    const obj = parent as Record<string, Json>;
    if (op.op === "add") obj[last] = cloneJson(op.value);
    else if (!Object.hasOwn(obj, last)) {
      throw unprocessable(`doc is missing path: ${JSON.stringify(op.path)}`);
    } else if (op.op === "remove") delete obj[last];
    else obj[last] = cloneJson(op.value);
  }
  return root as T;
}
