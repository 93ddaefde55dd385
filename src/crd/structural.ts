/**
 * Checks a CRD's `openAPIV3Schema` against the rules of a structural schema that matter here and
 * that a plain apiextensions/v1 type check cannot see: a type on every node, no
 * `additionalProperties` beside `properties`, no defaulting, a description on every field (for
 * `kubectl explain`), and list-map keys that are required. Works on any parsed YAML/JSON.
 */

type Node = Record<string, unknown>;

/** Keywords that say what a value may be, copied from a zod schema to a CRD schema as they are. */
export const VALUE_KEYWORDS = [
  "description",
  "enum",
  "pattern",
  "minimum",
  "maximum",
  "minLength",
  "maxLength",
  "minItems",
  "maxItems",
  "minProperties",
  "maxProperties",
  "x-kubernetes-validations",
  "x-kubernetes-list-type",
  "x-kubernetes-list-map-keys",
] as const;

/** Keywords a structural schema of this project may hold. */
const ALLOWED = new Set<string>([
  "type",
  "format",
  "properties",
  "required",
  "additionalProperties",
  "items",
  ...VALUE_KEYWORDS,
  "x-kubernetes-preserve-unknown-fields",
]);

/** Whether an enum value fits a schema type. */
const FITS: Record<string, (value: unknown) => boolean> = {
  string: (v) => typeof v === "string",
  integer: (v) => Number.isInteger(v),
  number: (v) => typeof v === "number",
  boolean: (v) => typeof v === "boolean",
};

function isNode(value: unknown): value is Node {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function check(node: Node, path: string, isField: boolean, problems: string[]): void {
  const at = path || "(root)";
  for (const key of Object.keys(node)) {
    if (!ALLOWED.has(key)) problems.push(`${at}: keyword ${key} is not allowed`);
  }
  const type = node.type;
  if (typeof type !== "string") problems.push(`${at}: has no type`);
  if (isField && (typeof node.description !== "string" || node.description.trim() === "")) {
    problems.push(`${at}: has no description`);
  }
  const properties = node.properties;
  if (properties !== undefined && node.additionalProperties !== undefined) {
    problems.push(`${at}: has additionalProperties beside properties`);
  }
  if ((properties !== undefined || node.additionalProperties !== undefined) && type !== "object") {
    problems.push(`${at}: has properties but type ${String(type)}`);
  }
  if (node.items !== undefined && type !== "array") {
    problems.push(`${at}: has items but type ${String(type)}`);
  }
  if (type === "array" && !isNode(node.items)) {
    problems.push(`${at}: array without one items schema`);
  }
  if (Array.isArray(node.enum)) {
    for (const value of node.enum) {
      if (!(FITS[String(type)]?.(value) ?? false)) {
        problems.push(`${at}: enum value ${JSON.stringify(value)} is not of type ${String(type)}`);
      }
    }
  }
  if (Array.isArray(node.required)) {
    for (const name of node.required) {
      if (!isNode(properties) || !(String(name) in properties)) {
        problems.push(`${at}: required ${String(name)} is not a property`);
      }
    }
  }
  if (node["x-kubernetes-list-type"] === "map") {
    const keys = node["x-kubernetes-list-map-keys"];
    const item = isNode(node.items) ? node.items : {};
    const required = Array.isArray(item.required) ? item.required : [];
    if (!Array.isArray(keys) || keys.length === 0) {
      problems.push(`${at}: list-type map without map keys`);
    } else {
      for (const key of keys) {
        if (!required.includes(key)) problems.push(`${at}: map key ${String(key)} is not required`);
      }
    }
  }
  if (isNode(properties)) {
    for (const [name, child] of Object.entries(properties)) {
      if (isNode(child)) check(child, path ? `${path}.${name}` : name, true, problems);
      else problems.push(`${at}.${name}: is not a schema`);
    }
  }
  if (isNode(node.items)) check(node.items, `${path}[]`, false, problems);
  if (isNode(node.additionalProperties)) {
    check(node.additionalProperties, `${path}.*`, false, problems);
  } else if (node.additionalProperties !== undefined) {
    problems.push(
      `${at}: additionalProperties must be a schema, not ${
        JSON.stringify(node.additionalProperties)
      }`,
    );
  }
}

/**
 * The problems of a CRD version's `openAPIV3Schema`, each as `path: what`; empty when it is fine.
 * The root's `metadata` must be exactly `{type: object}` (the API server owns its schema).
 */
export function structuralProblems(schema: unknown): string[] {
  if (!isNode(schema)) return ["(root): is not a schema"];
  const problems: string[] = [];
  const { metadata, ...fields } = isNode(schema.properties) ? schema.properties : {};
  if (JSON.stringify(metadata) !== JSON.stringify({ type: "object" })) {
    problems.push(`metadata: must be {type: object}, is ${JSON.stringify(metadata)}`);
  }
  if (schema.type !== "object") problems.push("(root): type must be object");
  check({ ...schema, properties: fields }, "", true, problems);
  return problems;
}
