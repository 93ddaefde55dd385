/**
 * From a kind's zod schema to the structural OpenAPI v3 schema of its CRD. zod writes the JSON
 * Schema (`target: "openapi-3.0"`, `io: "input"`: what a user may write, so fields with defaults are
 * optional); this module reshapes it into what apiextensions.k8s.io/v1 accepts and fails loudly on
 * anything it cannot express, so a schema change never yields a CRD that silently differs.
 */
import { VALUE_KEYWORDS } from "./structural.ts";
import { z } from "zod";

/** A CEL validation rule of a CRD schema node. */
export interface ValidationRule {
  rule: string;
  message?: string;
}

/** A node of a CRD's OpenAPI v3 schema: the subset of JSONSchemaProps this project emits. */
export type JsonSchema = {
  type?: "object" | "array" | "string" | "integer" | "number" | "boolean";
  format?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: JsonSchema;
  items?: JsonSchema;
  enum?: (string | number | boolean)[];
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minProperties?: number;
  maxProperties?: number;
  "x-kubernetes-validations"?: ValidationRule[];
  "x-kubernetes-list-type"?: "atomic" | "set" | "map";
  "x-kubernetes-list-map-keys"?: string[];
  "x-kubernetes-preserve-unknown-fields"?: boolean;
};

type Raw = Record<string, unknown>;

/** Keywords copied as they are; anything not listed here or handled below is an error. */
const COPIED: readonly string[] = VALUE_KEYWORDS;

/**
 * Keywords dropped on purpose: `default` because the operator fills defaults and shows them in
 * status while the stored spec stays what the user wrote; `additionalProperties: false` because the
 * API server prunes unknown fields of a structural schema anyway (and forbids it beside properties).
 */
const DROPPED = new Set(["default", "$schema"]);

const TYPES = new Set(["object", "array", "string", "integer", "number", "boolean"]);

function isRaw(value: unknown): value is Raw {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function fail(path: string, what: string): never {
  throw new Error(`CRD schema at ${path || "(root)"}: ${what}`);
}

/**
 * zod writes a pattern as `RegExp.source`, which escapes every `/` as `\/`. Go's regexp (the API
 * server's) accepts both; the plain form is what a reader of the CRD expects.
 */
function unescapeSlashes(pattern: string): string {
  // Escapes are consumed in pairs, so `\\/` (an escaped backslash, then /) stays as it is.
  return pattern.replace(/\\(.)/gs, (escape, char: string) => (char === "/" ? "/" : escape));
}

/** Rewrites one zod-generated node (and its children) into a structural CRD schema node. */
export function toStructural(node: Raw, path = ""): JsonSchema {
  const out: JsonSchema = {};
  const type = node.type;
  if (typeof type !== "string" || !TYPES.has(type)) {
    fail(path, `needs a single type, got ${JSON.stringify(type)}`);
  }
  out.type = type as JsonSchema["type"];
  for (const [key, value] of Object.entries(node)) {
    if (key === "type" || DROPPED.has(key)) continue;
    if (key === "pattern") {
      out.pattern = unescapeSlashes(String(value));
    } else if (COPIED.includes(key)) {
      (out as Raw)[key] = structuredClone(value);
    } else if (key === "properties") {
      if (!isRaw(value)) fail(path, "properties is not an object");
      out.properties = Object.fromEntries(
        Object.entries(value).map(([name, child]) => {
          if (!isRaw(child)) fail(`${path}.${name}`, "is not a schema");
          return [name, toStructural(child, `${path}.${name}`)];
        }),
      );
    } else if (key === "required") {
      if (Array.isArray(value) && value.length > 0) out.required = value.map(String);
    } else if (key === "items") {
      if (!isRaw(value)) fail(`${path}[]`, "items must be one schema");
      out.items = toStructural(value, `${path}[]`);
    } else if (key === "additionalProperties") {
      if (value === false) continue;
      if (!isRaw(value)) {
        fail(path, `additionalProperties ${JSON.stringify(value)} is not a schema`);
      }
      if (Object.keys(value).length === 0) out["x-kubernetes-preserve-unknown-fields"] = true;
      else out.additionalProperties = toStructural(value, `${path}.*`);
    } else {
      fail(path, `${key} cannot be expressed in a structural schema`);
    }
  }
  if (out.type === "integer") {
    // zod bounds every integer to the safe range; only real bounds belong in the CRD.
    out.format = "int64";
    if (out.minimum === -Number.MAX_SAFE_INTEGER) delete out.minimum;
    if (out.maximum === Number.MAX_SAFE_INTEGER) delete out.maximum;
  }
  if (out.properties && out.additionalProperties) {
    fail(path, "has both properties and additionalProperties");
  }
  return out;
}

const API_VERSION_DESCRIPTION =
  "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DESCRIPTION =
  "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/** The envelope every kind shares; the API server owns metadata's schema, so it is just an object. */
const ENVELOPE = ["apiVersion", "kind", "metadata"];

/**
 * The `openAPIV3Schema` of a kind: its zod schema (with `apiVersion`, `kind`, `metadata`, `spec`,
 * `status`) as a structural schema, the envelope fields in the form Kubernetes tooling expects.
 */
export function crdSchemaOf(kind: z.ZodType): JsonSchema {
  const generated = z.toJSONSchema(kind, {
    target: "openapi-3.0",
    io: "input",
    unrepresentable: "throw",
  });
  const root = toStructural(generated as Raw);
  const required = (root.required ?? []).filter((name) => !ENVELOPE.includes(name));
  const schema: JsonSchema = {
    ...root,
    properties: {
      ...root.properties,
      apiVersion: { type: "string", description: API_VERSION_DESCRIPTION },
      kind: { type: "string", description: KIND_DESCRIPTION },
      metadata: { type: "object" },
    },
  };
  if (required.length > 0) schema.required = required;
  else delete schema.required;
  return schema;
}
