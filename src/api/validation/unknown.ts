/**
 * Fields a plan does not know, found where its schema prunes them: what the API server's strict
 * field validation (kubectl's default) refuses with `unknown field`, read from the same plan that
 * validates, so it follows the schema. Objects that keep unknown fields have none, but for an
 * object's metadata: the schema names only the fields the operator reads and keeps the rest, and
 * the API server refuses any field Kubernetes' ObjectMeta does not have.
 */
import { type FieldError, formatPath } from "../issues.ts";
import { isObject } from "../json.ts";
import { didYouMean } from "../suggest.ts";
import type { ValidationPlan } from "./plan.ts";

/** The message of an unknown field, before its guess. */
export const UNKNOWN_FIELD = "unknown field";

/** Whether a field error is an unknown field's. */
export function isUnknownField(error: FieldError): boolean {
  return error.message.startsWith(UNKNOWN_FIELD);
}

/** The fields of Kubernetes' ObjectMeta (k8s.io/apimachinery/pkg/apis/meta/v1, its JSON names). */
export const OBJECT_META_FIELDS: ReadonlySet<string> = new Set([
  "name",
  "generateName",
  "namespace",
  "selfLink",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
  "labels",
  "annotations",
  "ownerReferences",
  "finalizers",
  "managedFields",
]);

/**
 * The fields of the entries of ObjectMeta's lists, by the list: `ownerReferences` (OwnerReference)
 * and `managedFields` (ManagedFieldsEntry, whose `fieldsV1` is free-form). The API server decodes
 * metadata strictly into ObjectMeta, so a field these lack is unknown there too.
 */
const OBJECT_META_ENTRY_FIELDS: Readonly<Record<string, ReadonlySet<string>>> = {
  ownerReferences: new Set([
    "apiVersion",
    "kind",
    "name",
    "uid",
    "controller",
    "blockOwnerDeletion",
  ]),
  managedFields: new Set([
    "manager",
    "operation",
    "apiVersion",
    "time",
    "fieldsType",
    "fieldsV1",
    "subresource",
  ]),
};

/** The unknown field `key` of the object at `path`, with a guess among `known` not in `input`. */
function unknownField(
  path: PropertyKey[],
  key: string,
  known: Iterable<string>,
  input: Record<string, unknown>,
): FieldError {
  return {
    path: formatPath([...path, key]),
    message: `${UNKNOWN_FIELD}${didYouMean(key, [...known].filter((k) => !(k in input)))}`,
  };
}

/**
 * The unknown fields of the entries of an object's `metadata` lists (`ownerReferences`,
 * `managedFields`), `path` being the metadata's: what Kubernetes' ObjectMeta does not have inside
 * them.
 */
export function metadataEntryUnknownFields(
  metadata: Record<string, unknown>,
  path: PropertyKey[],
): FieldError[] {
  const out: FieldError[] = [];
  for (const [list, fields] of Object.entries(OBJECT_META_ENTRY_FIELDS)) {
    const entries = metadata[list];
    if (!Array.isArray(entries)) continue;
    entries.forEach((entry, i) => {
      if (!isObject(entry)) return;
      for (const key of Object.keys(entry)) {
        if (!fields.has(key)) out.push(unknownField([...path, list, i], key, fields, entry));
      }
    });
  }
  return out;
}

function walk(
  plan: ValidationPlan,
  input: unknown,
  path: PropertyKey[],
  out: FieldError[],
): void {
  switch (plan.type) {
    case "optional":
    case "default":
    case "prefault":
      return walk(plan.inner, input, path, out);
    case "array":
      if (Array.isArray(input)) {
        input.forEach((item, i) => walk(plan.item, item, [...path, i], out));
      }
      return;
    case "record":
      if (!isObject(input)) return;
      for (const key of Object.keys(input)) walk(plan.value, input[key], [...path, key], out);
      return;
    case "object": {
      if (!isObject(input)) return;
      // An object's own metadata (the top level's): what ObjectMeta has is known.
      const metadata = path.length === 1 && path[0] === "metadata";
      const known = metadata ? OBJECT_META_FIELDS : Object.keys(plan.shape);
      for (const key of Object.keys(input)) {
        if (Object.hasOwn(plan.shape, key)) walk(plan.shape[key], input[key], [...path, key], out);
        else if (plan.unknown === "strip" || (metadata && !OBJECT_META_FIELDS.has(key))) {
          out.push(unknownField(path, key, known, input));
        }
      }
      if (metadata) out.push(...metadataEntryUnknownFields(input, path));
      return;
    }
    default:
      return;
  }
}

/** What the operator adds to an unknown field's message in a stored object's spec. */
export const NEWER_CRD = " (this operator does not know it: is the CRD newer than the operator?)";

/**
 * The fields of a stored object's `spec` (its kind's `plan`) that the plan does not know, each
 * saying so (NEWER_CRD): the API server pruned what its CRD does not know, so such a field comes
 * from a CRD newer than the schema reading it.
 */
export function unknownSpecFields(plan: ValidationPlan, input: unknown): FieldError[] {
  if (plan.type !== "object" || !isObject(input) || plan.shape.spec === undefined) return [];
  const out: FieldError[] = [];
  walk(plan.shape.spec, input.spec, ["spec"], out);
  return out.map((e) => ({ ...e, message: `${e.message}${NEWER_CRD}` }));
}

/**
 * The fields of an object's `metadata`, of any kind, that Kubernetes' ObjectMeta does not have
 * (`metadata.lables`), with those of its lists' entries: what the API server refuses in every
 * kind, whatever its schema.
 */
export function metadataUnknownFields(input: unknown): FieldError[] {
  if (!isObject(input) || !isObject(input.metadata)) return [];
  const meta = input.metadata;
  return [
    ...unknownKeyErrors(meta, OBJECT_META_FIELDS, ["metadata"]),
    ...metadataEntryUnknownFields(meta, ["metadata"]),
  ];
}

/**
 * The keys of `input` (at `path`) that are not `known`, each an unknown field with a guess at the
 * one meant: `count: unknown field; did you mean count?` for `cuont`.
 */
export function unknownKeyErrors(
  input: Record<string, unknown>,
  known: ReadonlySet<string>,
  path: PropertyKey[] = [],
): FieldError[] {
  return Object.keys(input).filter((k) => !known.has(k)).map((k) =>
    unknownField(path, k, known, input)
  );
}

/** The fields of `input` that `plan` would prune, each with its path and a guess at the one meant. */
export function unknownFields(plan: ValidationPlan, input: unknown): FieldError[] {
  const out: FieldError[] = [];
  walk(plan, input, [], out);
  return out;
}
