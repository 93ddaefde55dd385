/**
 * What the API server does with a custom object under a CRD's structural schema, for the subset of
 * keywords `src/crd/` emits: prune null and unknown fields, then validate. Used to check that the
 * zod schemas admit exactly what the generated CRDs admit. CEL rules are looked up by their text.
 */
import type { JsonSchema } from "../../src/crd/schema.ts";

type Obj = Record<string, unknown>;

/** Characters as the API server counts them for maxLength and CEL's size(): code points. */
const chars = (s: string) => [...s].length;

/** The CEL rules the CRDs carry, as predicates on the (pruned) value. An unknown rule throws. */
const CEL: Record<string, (self: Obj) => boolean> = {
  "has(self.path) || has(self.pathPrefix) || has(self.methods) || has(self.hosts) || has(self.headers) || has(self.queryParams) || has(self.perClient)":
    (self) =>
      "path" in self || "pathPrefix" in self || "methods" in self || "hosts" in self ||
      "headers" in self || "queryParams" in self || "perClient" in self,
  "(has(self.headers) ? size(self.headers) : 0) + (has(self.queryParams) ? size(self.queryParams) : 0) <= 4":
    (self) =>
      ["headers", "queryParams"].reduce(
        (n, f) => n + (isObj(self[f]) ? Object.keys(self[f] as Obj).length : 0),
        0,
      ) <= 4,
  "!has(self.path) || !has(self.pathPrefix)": (self) =>
    !("path" in self) || !("pathPrefix" in self),
  "has(self.header) || has(self.clientIP)": (self) => "header" in self || "clientIP" in self,
  "has(self.local) || has(self.global)": (self) => "local" in self || "global" in self,
  "has(self.rules) || has(self.default)": (self) => "rules" in self || "default" in self,
  "self.map(x, size(x)).sum() <= 512": (self) =>
    (self as unknown as string[]).reduce((n, h) => n + chars(h), 0) <= 512,
  "self.all(k, size(k) <= 64)": (self) => Object.keys(self).every((k) => chars(k) <= 64),
  "self.all(k, size(k) <= 32)": (self) => Object.keys(self).every((k) => chars(k) <= 32),
  "self.all(k, size(k) <= 317)": (self) => Object.keys(self).every((k) => chars(k) <= 317),
};

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

function typeOk(schema: JsonSchema, value: unknown): boolean {
  switch (schema.type) {
    case "object":
      return isObj(value);
    case "array":
      return Array.isArray(value);
    case "string":
      return typeof value === "string";
    case "integer":
      return Number.isInteger(value);
    case "number":
      return typeof value === "number";
    case "boolean":
      return typeof value === "boolean";
    default:
      return true;
  }
}

/** Prunes null and unknown fields the way the API server does before validating. */
export function prune(schema: JsonSchema, value: unknown): unknown {
  if (schema.type === "array" && Array.isArray(value) && schema.items) {
    return value.map((v) => prune(schema.items!, v));
  }
  if (schema.type !== "object" || !isObj(value)) return value;
  if (
    schema["x-kubernetes-preserve-unknown-fields"] ||
    (!schema.properties && !schema.additionalProperties)
  ) {
    return value;
  }
  const out: Obj = {};
  for (const [key, child] of Object.entries(value)) {
    if (child === null) continue;
    const sub = schema.properties ? schema.properties[key] : schema.additionalProperties;
    if (sub) out[key] = prune(sub, child);
  }
  return out;
}

/** The paths at which a pruned value breaks the schema; empty when the API server admits it. */
export function violations(schema: JsonSchema, value: unknown, path = ""): string[] {
  if (!typeOk(schema, value)) return [`${path}: type`];
  const out: string[] = [];
  if (schema.enum && !schema.enum.includes(value as string)) out.push(`${path}: enum`);
  if (typeof value === "string") {
    if (schema.pattern && !new RegExp(schema.pattern).test(value)) out.push(`${path}: pattern`);
    if (schema.minLength !== undefined && chars(value) < schema.minLength) {
      out.push(`${path}: minLength`);
    }
    if (schema.maxLength !== undefined && chars(value) > schema.maxLength) {
      out.push(`${path}: maxLength`);
    }
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) out.push(`${path}: minimum`);
    if (schema.maximum !== undefined && value > schema.maximum) out.push(`${path}: maximum`);
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) {
      out.push(`${path}: minItems`);
    }
    if (schema.maxItems !== undefined && value.length > schema.maxItems) {
      out.push(`${path}: maxItems`);
    }
    if (schema.items) {
      value.forEach((v, i) => out.push(...violations(schema.items!, v, `${path}[${i}]`)));
    }
    // A set: the API server refuses a scalar item given twice ("Duplicate value").
    if (schema["x-kubernetes-list-type"] === "set" && new Set(value).size !== value.length) {
      out.push(`${path}: duplicate`);
    }
  }
  if (isObj(value)) {
    const keys = Object.keys(value);
    if (schema.minProperties !== undefined && keys.length < schema.minProperties) {
      out.push(`${path}: minProperties`);
    }
    if (schema.maxProperties !== undefined && keys.length > schema.maxProperties) {
      out.push(`${path}: maxProperties`);
    }
    for (const name of schema.required ?? []) {
      if (!(name in value)) out.push(`${path}.${name}: required`);
    }
    for (const key of keys) {
      const sub = schema.properties ? schema.properties[key] : schema.additionalProperties;
      if (sub) out.push(...violations(sub, value[key], `${path}.${key}`));
    }
    for (const { rule } of schema["x-kubernetes-validations"] ?? []) {
      const check = CEL[rule];
      if (!check) throw new Error(`no predicate for the CEL rule ${rule}`);
      if (!check(value)) out.push(`${path}: ${rule}`);
    }
  }
  return out;
}

/** Whether the API server would store `obj` (after pruning) under `schema`. */
export function admits(schema: JsonSchema, obj: unknown): boolean {
  return violations(schema, prune(schema, obj)).length === 0;
}

/** Every property path of a schema (`[]` for list items), for mutating objects at random. */
export function propertyPaths(
  schema: JsonSchema,
  prefix: (string | number)[] = [],
): (string | number)[][] {
  const out: (string | number)[][] = [];
  for (const [name, sub] of Object.entries(schema.properties ?? {})) {
    const here = [...prefix, name];
    out.push(here);
    out.push(...propertyPaths(sub, here));
    if (sub.items) {
      out.push([...here, 0]);
      out.push(...propertyPaths(sub.items, [...here, 0]));
    }
  }
  return out;
}
