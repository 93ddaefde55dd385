/**
 * The CustomResourceDefinitions of the three kinds, built from their zod schemas. The names,
 * columns and short names live here; every field, type and constraint comes from `src/api/`.
 */
import type { z } from "zod";
import { RESOURCES } from "../api/resources.ts";
import { RateLimitSchema } from "../api/schema/ratelimit.ts";
import { ScalerSchema } from "../api/schema/scaler.ts";
import { ServerlessSchema } from "../api/schema/serverless.ts";
import type { ResourceType } from "../api/object.ts";
import { crdSchemaOf, type JsonSchema } from "./schema.ts";

/** A column `kubectl get` shows for a kind. */
export type PrinterColumn = {
  name: string;
  type: "string" | "integer" | "number" | "boolean" | "date";
  jsonPath: string;
  description?: string;
  /** 0 (default) shows it in `kubectl get`; 1 only with `-o wide`. */
  priority?: number;
};

/** One version of a CRD. */
export type CrdVersion = {
  name: string;
  served: boolean;
  storage: boolean;
  schema: { openAPIV3Schema: JsonSchema };
  subresources: { status: Record<string, never> };
  additionalPrinterColumns: PrinterColumn[];
};

/** An apiextensions.k8s.io/v1 CustomResourceDefinition as this project writes it. */
export type CustomResourceDefinition = {
  apiVersion: "apiextensions.k8s.io/v1";
  kind: "CustomResourceDefinition";
  metadata: { name: string };
  spec: {
    group: string;
    names: {
      kind: string;
      listKind: string;
      plural: string;
      singular: string;
      shortNames: string[];
      categories: string[];
    };
    scope: "Namespaced" | "Cluster";
    versions: CrdVersion[];
  };
};

/** The category all three kinds belong to: `kubectl get platform` lists them together. */
export const CRD_CATEGORY = "platform";

const AGE: PrinterColumn = { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" };

const MODULE_COLUMNS: PrinterColumn[] = [
  {
    name: "State",
    type: "string",
    jsonPath: ".status.state",
    description: "State of the module.",
  },
  {
    name: "Served",
    type: "string",
    jsonPath: ".status.served",
    description: "Whether this object is the one the operator manages.",
  },
  AGE,
];

/** docs/design.md's NAME STATUS AGE, and with `-o wide` whether and where the limit bites. */
const RATELIMIT_COLUMNS: PrinterColumn[] = [
  {
    name: "Status",
    type: "string",
    jsonPath: ".status.state",
    description: "Ready when the limit is applied, Error when not.",
  },
  {
    name: "Enforced",
    type: "string",
    jsonPath: '.status.conditions[?(@.type=="Enforced")].status',
    description: "True when every selected Pod has a mesh sidecar.",
    priority: 1,
  },
  {
    name: "Accepted",
    type: "string",
    jsonPath: '.status.conditions[?(@.type=="Accepted")].status',
    description:
      "True when istiod says every proxy that takes the limit acknowledged the config holding it.",
    priority: 1,
  },
  {
    name: "Pods",
    type: "integer",
    jsonPath: ".status.podsSelected",
    description: "Pods the enforced limit selects.",
    priority: 1,
  },
  {
    name: "Sidecars",
    type: "integer",
    jsonPath: ".status.podsWithSidecar",
    description: "Selected Pods with a mesh sidecar: the ones the limit applies to.",
    priority: 1,
  },
  {
    name: "Enforced-Gen",
    type: "integer",
    jsonPath: ".status.enforcedGeneration",
    description: "The generation whose limits are enforced.",
    priority: 1,
  },
  {
    name: "Mode",
    type: "string",
    jsonPath: ".status.mode",
    description: "Enforcing, or Shadow when the limit counts but rejects nothing.",
    priority: 1,
  },
  {
    name: "Workload-Rate",
    type: "string",
    jsonPath: ".status.rates[0].workload",
    description:
      "What the default bucket lets all selected Pods with a mesh proxy admit together, per fillInterval.",
    priority: 1,
  },
  AGE,
];

interface Kind {
  type: ResourceType;
  schema: z.ZodType;
  shortNames: string[];
  columns: PrinterColumn[];
}

const KINDS: Kind[] = [
  {
    type: RESOURCES.Serverless,
    schema: ServerlessSchema,
    shortNames: ["svls"],
    columns: MODULE_COLUMNS,
  },
  { type: RESOURCES.Scaler, schema: ScalerSchema, shortNames: ["scl"], columns: MODULE_COLUMNS },
  {
    type: RESOURCES.RateLimit,
    schema: RateLimitSchema,
    shortNames: ["rl"],
    columns: RATELIMIT_COLUMNS,
  },
];

function definitionOf(kind: Kind): CustomResourceDefinition {
  const { group, version, plural, namespaced } = kind.type;
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      names: {
        kind: kind.type.kind,
        listKind: `${kind.type.kind}List`,
        plural,
        singular: kind.type.kind.toLowerCase(),
        shortNames: [...kind.shortNames],
        categories: [CRD_CATEGORY],
      },
      scope: namespaced ? "Namespaced" : "Cluster",
      versions: [{
        name: version,
        served: true,
        storage: true,
        schema: { openAPIV3Schema: crdSchemaOf(kind.schema) },
        subresources: { status: {} },
        additionalPrinterColumns: structuredClone(kind.columns),
      }],
    },
  };
}

/**
 * The CRDs of Serverless, Scaler and RateLimit, freshly generated from the schemas (new objects on
 * every call, so callers may change them). The simulator and the end-to-end tests install these.
 */
export function customResourceDefinitions(): CustomResourceDefinition[] {
  return KINDS.map(definitionOf);
}
