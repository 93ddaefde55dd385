/**
 * Admission checks of the simulated API server: the project's custom resources are validated with
 * the plans of their zod schemas (the schemas the CRDs are generated from; tests/api/validation_test.ts
 * holds plan and schema to the same answers), names follow the API's rules.
 * Problems come back as the API server's causes: `field: Invalid value: ...`.
 */
import type { ParseResult } from "../../src/api/issues.ts";
import { parseRateLimit } from "../../src/api/ratelimit.ts";
import { parseScaler } from "../../src/api/scaler.ts";
import { parseServerless } from "../../src/api/serverless.ts";
import type { KubeObject, ResourceType } from "../../src/api/object.ts";

const SCHEMAS: Record<string, (input: unknown) => ParseResult<unknown>> = {
  "operator.platform-project.io/Serverless": parseServerless,
  "operator.platform-project.io/Scaler": parseScaler,
  "gateway.platform-project.io/RateLimit": parseRateLimit,
};

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const QUALIFIED_NAME =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** True for kinds validated with a project schema. */
export function hasSchema(type: ResourceType): boolean {
  return `${type.group}/${type.kind}` in SCHEMAS;
}

/** The problem of a label or annotation key that is not a qualified name. */
function keyProblems(field: "labels" | "annotations", key: string): string[] {
  if (QUALIFIED_NAME.test(key)) return [];
  return [
    `metadata.${field}: Invalid value: ${
      JSON.stringify(key)
    }: name part must consist of alphanumeric characters, '-', '_' or '.'`,
  ];
}

function metadataProblems(type: ResourceType, obj: KubeObject): string[] {
  const out: string[] = [];
  const { name, labels, annotations } = obj.metadata;
  const nameRule = type.kind === "Namespace" ? DNS_LABEL : DNS_SUBDOMAIN;
  if (type.kind !== "Event" && (name.length > 253 || !nameRule.test(name))) {
    out.push(
      `metadata.name: Invalid value: ${
        JSON.stringify(name)
      }: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'`,
    );
  }
  for (const [k, v] of Object.entries(labels ?? {})) {
    out.push(...keyProblems("labels", k));
    if (typeof v !== "string" || v.length > 63 || !LABEL_VALUE.test(v)) {
      out.push(
        `metadata.labels: Invalid value: ${
          JSON.stringify(v)
        }: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.'`,
      );
    }
  }
  for (const [k, v] of Object.entries(annotations ?? {})) {
    out.push(...keyProblems("annotations", k));
    if (typeof v !== "string") {
      out.push(`metadata.annotations.${k}: Invalid value: must be a string`);
    }
  }
  return out;
}

/** The problems of an object about to be stored; empty when it is valid. */
export function validationProblems(type: ResourceType, obj: KubeObject): string[] {
  const problems = metadataProblems(type, obj);
  const parse = SCHEMAS[`${type.group}/${type.kind}`];
  if (parse) {
    const parsed = parse(obj);
    if (!parsed.ok) {
      problems.push(...parsed.errors.map((e) => `${e.path}: Invalid value: ${e.message}`));
    }
  }
  return problems;
}
