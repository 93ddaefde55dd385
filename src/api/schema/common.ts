/** zod schemas shared by the three kinds: object metadata and the status Condition. */
import { z } from "zod";
import { EXPECTED_INTEGER } from "../issues.ts";
import { CONDITION_MESSAGE_MAX } from "../message.ts";

/** Condition types: CamelCase, or `<dns_subdomain>/CamelCase` (docs/design.md). */
export const CONDITION_TYPE_PATTERN =
  "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";
/** Condition reasons: a non-empty CamelCase identifier (metav1.Condition's pattern). */
export const CONDITION_REASON_PATTERN = "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$";

/**
 * An integer schema. Its type errors read "expected integer" (zod alone says "number"); the CRD
 * generator renders it as `type: integer, format: int64`.
 */
export function integer(): z.ZodInt {
  return z.int({ error: (iss) => (iss.code === "invalid_type" ? EXPECTED_INTEGER : undefined) });
}

/** What bounds a map: its entries, and its keys' length (named in messages as `keys`). */
export interface MapBounds {
  min: number;
  /** What a map with fewer than `min` entries is told. */
  minMessage: string;
  max: number;
  maxKey: number;
  /** The keys, as messages call them: `header names`. */
  keys: string;
}

/**
 * A map of string keys to `value` with `bounds`, each stated for the CRD: minProperties,
 * maxProperties, and a CEL rule on the keys (a structural schema cannot bound keys otherwise; with
 * maxProperties the API server can bound the rule's cost). Keys are measured in characters (code
 * points), as CEL's `size` measures them.
 */
export function boundedMap<V extends z.ZodType>(value: V, bounds: MapBounds) {
  const { min, max, maxKey } = bounds;
  const keyMessage = `${bounds.keys} must have at most ${maxKey} characters`;
  return z.record(z.string(), value)
    .refine((m) => Object.keys(m).length >= min, { error: bounds.minMessage })
    .refine((m) => Object.keys(m).length <= max, { error: `must have at most ${max} entries` })
    .refine((m) => Object.keys(m).every((k) => [...k].length <= maxKey), { error: keyMessage })
    .meta({
      minProperties: min,
      maxProperties: max,
      "x-kubernetes-validations": [{
        rule: `self.all(k, size(k) <= ${maxKey})`,
        message: keyMessage,
      }],
    });
}

/** Object metadata as the API server returns it; unknown fields are kept (loose). */
export const ObjectMetaSchema = z.looseObject({
  name: z.string().min(1).describe("Name of the object."),
  namespace: z.string().optional().describe("Namespace of the object."),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: integer().optional(),
  creationTimestamp: z.string().optional(),
  deletionTimestamp: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  finalizers: z.array(z.string()).optional(),
  ownerReferences: z.array(z.looseObject({})).optional(),
});

/** The shared status Condition of docs/design.md (metav1.Condition). */
export const ConditionSchema = z.object({
  type: z.string().regex(new RegExp(CONDITION_TYPE_PATTERN), {
    error: (iss) =>
      `${JSON.stringify(iss.input)} is not a condition type like Ready or example.com/Ready`,
  }).max(316).describe(
    "Type of condition in CamelCase or in foo.example.com/CamelCase.",
  ),
  status: z.enum(["True", "False", "Unknown"]).describe(
    "Status of the condition: True, False or Unknown.",
  ),
  reason: z.string().min(1, { abort: true }).max(1024).regex(new RegExp(CONDITION_REASON_PATTERN), {
    error: (iss) => `${JSON.stringify(iss.input)} is not a CamelCase reason like InstallationErr`,
  }).describe(
    "Programmatic identifier, CamelCase, of the reason for the last transition.",
  ),
  message: z.string().max(CONDITION_MESSAGE_MAX).describe(
    "Human-readable message with details about the transition; may be empty.",
  ),
  lastTransitionTime: z.string().describe(
    "Time (RFC 3339, UTC) the condition last changed from one status to another.",
  ),
  observedGeneration: integer().min(0).optional().describe(
    "The metadata.generation the condition was computed from; lower than the current generation means out of date.",
  ),
});

/**
 * The conditions of a status: at most one a type, merged by type the way metav1.Condition lists
 * are (`x-kubernetes-list-type: map` in the CRD).
 */
export const ConditionsSchema = z.array(ConditionSchema).meta({
  "x-kubernetes-list-type": "map",
  "x-kubernetes-list-map-keys": ["type"],
});

/**
 * The schema of an object of one of the project's kinds: its apiVersion and kind, the metadata,
 * the `spec` given, and the optional status the operator writes.
 */
export function kindSchema<
  A extends string,
  K extends string,
  S extends z.ZodType,
  T extends z.ZodType,
>(apiVersion: A, kind: K, spec: S, status: T, description: string) {
  return z.object({
    apiVersion: z.literal(apiVersion),
    kind: z.literal(kind),
    metadata: ObjectMetaSchema,
    spec,
    status: status.optional().describe("Observed state, written by the operator."),
  }).describe(description);
}
