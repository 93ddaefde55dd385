/** The zod schema of Scaler (operator.platform-project.io/v1alpha1): KEDA, docs/design.md "Scaler". */
import { z } from "zod";
import { OPERATOR_GROUP } from "../groups.ts";
import { ConditionsSchema, kindSchema } from "./common.ts";

/** A quantity's number and suffix (apimachinery's pattern, after the sign). */
const QUANTITY_UNSIGNED =
  "(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$";

/** Kubernetes resource quantity syntax (apimachinery's pattern). */
export const QUANTITY_PATTERN = `^(\\+|-)?${QUANTITY_UNSIGNED}`;

/** A quantity that is not negative: what a container's requests and limits may be. */
export const NON_NEGATIVE_QUANTITY_PATTERN = `^\\+?${QUANTITY_UNSIGNED}`;

const Quantity = (what: string) =>
  z.string().regex(new RegExp(QUANTITY_PATTERN), {
    error: (iss) =>
      `${JSON.stringify(iss.input)} is not a Kubernetes quantity like 100m, 1 or 512Mi`,
  }).optional().describe(what);

const ComponentLoggingSchema = z.object({
  level: z.enum(["debug", "info", "error"]).default("info").describe(
    "Log level: debug, info or error. Default info.",
  ),
  format: z.enum(["json", "text", "console"]).default("console").describe(
    "Log format: json, text or console (text is console). Default console.",
  ),
  timeEncoding: z.enum(["epoch", "millis", "nano", "iso8601", "rfc3339", "rfc3339nano"]).default(
    "rfc3339",
  ).describe("Log timestamp format. Default rfc3339."),
});

const ResourceListSchema = (what: string) =>
  z.object({
    cpu: Quantity(`${what} of CPU, a quantity such as 100m.`),
    memory: Quantity(`${what} of memory, a quantity such as 128Mi.`),
  });

const ComponentResourcesSchema = z.object({
  limits: ResourceListSchema("Limit").optional().describe("Resource limits."),
  requests: ResourceListSchema("Request").optional().describe("Resource requests."),
});

const KeyRef = (what: string) =>
  z.object({
    name: z.string().describe(`Name of the ${what}.`),
    key: z.string().describe(`Key in the ${what}.`),
    optional: z.boolean().optional().describe(`Whether the ${what} or its key may be missing.`),
  });

/** A container environment variable (core/v1 EnvVar). */
export const EnvVarSchema = z.object({
  name: z.string().min(1).describe("Name of the environment variable."),
  value: z.string().optional().describe("Value of the variable."),
  valueFrom: z.object({
    configMapKeyRef: KeyRef("ConfigMap").optional().describe("A key of a ConfigMap."),
    secretKeyRef: KeyRef("Secret").optional().describe("A key of a Secret."),
    fieldRef: z.object({
      apiVersion: z.string().optional().describe("API version of the field path, default v1."),
      fieldPath: z.string().describe("Path of the Pod field, e.g. metadata.namespace."),
    }).optional().describe("A field of the Pod."),
    resourceFieldRef: z.object({
      containerName: z.string().optional().describe("Container name."),
      resource: z.string().describe("Resource, e.g. limits.memory."),
      divisor: z.string().optional().describe("Output format of the exposed resource."),
    }).optional().describe("A resource of the container."),
  }).optional().describe(
    "Source of the value: a ConfigMap or Secret key, or a Pod or resource field.",
  ),
});

const perComponent = <T extends z.ZodType>(schema: T, what: string) =>
  z.object({
    operator: schema.optional().describe(`${what} of the keda-operator.`),
    metricServer: schema.optional().describe(`${what} of the keda-operator-metrics-apiserver.`),
    admissionWebhook: schema.optional().describe(`${what} of the keda-admission-webhooks.`),
  });

const SidecarSchema = z.object({
  enabledSidecarInjection: z.boolean().optional().describe(
    "Inject the service-mesh sidecar into the Pod.",
  ),
});

/** Scaler spec (docs/design.md); logging defaults are filled one field at a time. */
export const ScalerSpecSchema = z.object({
  istio: z.object({
    operator: SidecarSchema.optional().describe("Sidecar injection for the keda-operator Pod."),
    metricServer: SidecarSchema.optional().describe(
      "Sidecar injection for the metrics server Pod.",
    ),
  }).optional().describe("Service-mesh sidecar injection per component."),
  logging: z.object({
    operator: ComponentLoggingSchema.prefault({}).describe("Logging of the keda-operator."),
    metricServer: ComponentLoggingSchema.prefault({}).describe("Logging of the metrics server."),
    admissionWebhook: ComponentLoggingSchema.prefault({}).describe(
      "Logging of the admission webhooks.",
    ),
  }).prefault({}).describe("Logging per component."),
  resources: perComponent(ComponentResourcesSchema, "Resources").optional().describe(
    "Resource limits and requests per component; unset keeps KEDA's defaults.",
  ),
  env: z.array(EnvVarSchema).optional().describe(
    "Environment variables merged into the components' environment (never replacing what KEDA needs).",
  ),
  podAnnotations: perComponent(z.record(z.string(), z.string()), "Pod annotations").optional()
    .describe("Annotations added to each component's Pods."),
});

/** Scaler status (docs/design.md). */
export const ScalerStatusSchema = z.object({
  state: z.enum(["Ready", "Processing", "Error", "Warning", "Deleting"]).optional().describe(
    "State of the module: Ready, Processing, Error, Warning or Deleting.",
  ),
  served: z.enum(["True", "False"]).describe(
    "Whether this Scaler is the one the operator manages.",
  ),
  kedaVersion: z.string().optional().describe("Version of the installed KEDA."),
  conditions: ConditionsSchema.optional().describe("Conditions of the module."),
});

/** A Scaler object. */
export const ScalerSchema = kindSchema(
  `${OPERATOR_GROUP}/v1alpha1`,
  "Scaler",
  ScalerSpecSchema.prefault({}).describe("Configuration of the KEDA module."),
  ScalerStatusSchema,
  "Scaler installs, configures and reports on the event-driven autoscaler (KEDA); one per cluster is served.",
);
