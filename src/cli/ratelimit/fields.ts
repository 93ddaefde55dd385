/**
 * The fields a converted object (Kyma's RateLimit, Envoy Gateway's BackendTrafficPolicy) may have
 * beside its spec, and the check that refuses any other: a field the converter does not know is an
 * error naming its path, never dropped.
 */
import { formatPath } from "../../api/issues.ts";
import { didYouMean } from "../../api/suggest.ts";
import {
  metadataEntryUnknownFields,
  OBJECT_META_FIELDS,
  UNKNOWN_FIELD,
} from "../../api/validation/unknown.ts";

/** A Kubernetes object's top-level fields. */
export const OBJECT_FIELDS: readonly string[] = [
  "apiVersion",
  "kind",
  "metadata",
  "spec",
  "status",
];

/** The path of the field `key` of the object at `at` (`""` for the top). */
function fieldPath(at: string, key: string): string {
  const step = formatPath([key]);
  return at === "" ? step : step.startsWith("[") ? `${at}${step}` : `${at}.${step}`;
}

/**
 * Each key of `obj` (the object at `at`) not among `known` as `<path>: unknown field`, with the
 * field meant when one is close, as the API server's strict field validation says it.
 */
export function unknownKeys(
  obj: Record<string, unknown>,
  known: readonly string[],
  at: string,
): string[] {
  const unset = known.filter((k) => !Object.hasOwn(obj, k));
  return Object.keys(obj).filter((k) => !known.includes(k)).map((k) =>
    `${fieldPath(at, k)}: ${UNKNOWN_FIELD}${didYouMean(k, unset)}`
  );
}

/**
 * The unknown top-level and metadata fields of a Kubernetes object (inside metadata's
 * `ownerReferences` and `managedFields` entries too), and a metadata not a map.
 */
export function objectFieldProblems(doc: Record<string, unknown>): string[] {
  const meta = doc.metadata;
  const metaProblems = meta === undefined
    ? []
    : meta === null || typeof meta !== "object" || Array.isArray(meta)
    ? ["metadata: not an object"]
    : [
      ...unknownKeys(meta as Record<string, unknown>, [...OBJECT_META_FIELDS], "metadata"),
      ...metadataEntryUnknownFields(meta as Record<string, unknown>, ["metadata"]).map((e) =>
        `${e.path}: ${e.message}`
      ),
    ];
  return [...unknownKeys(doc, OBJECT_FIELDS, ""), ...metaProblems];
}
