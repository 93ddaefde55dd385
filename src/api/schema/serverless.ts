/** The zod schema of Serverless (operator.platform-project.io/v1alpha1), docs/design.md "Serverless". */
import { z } from "zod";
import { OPERATOR_GROUP } from "../groups.ts";
import { ConditionsSchema, kindSchema } from "./common.ts";

const Endpoint = (what: string) =>
  z.object({
    endpoint: z.string().describe(`${what} endpoint used: an absolute http(s) URL.`),
  });

/**
 * Serverless spec. Fields are plain strings in the schema on purpose: the operator's configuration
 * check (docs/design.md) reports bad values as ConfigurationCheckErr in status instead of the API refusing
 * them, so a user sees what is wrong and nothing is lost. Defaults are filled by the operator, not
 * stored in the spec, and shown in status.
 */
export const ServerlessSpecSchema = z.object({
  eventing: Endpoint("Eventing (publisher proxy)").optional().describe("Eventing configuration."),
  tracing: Endpoint("Tracing (trace collector)").optional().describe("Tracing configuration."),
  functionRequeueDuration: z.string().default("5m").describe(
    "Requeue interval for Functions, a Go duration such as 5m. Default 5m.",
  ),
  healthzLivenessTimeout: z.string().default("10s").describe(
    "Timeout of the Function health check, a Go duration such as 10s or a number of seconds. Default 10s.",
  ),
  defaultRuntimePodPreset: z.string().optional().describe(
    "Default runtime Pod preset: one of XS, S, M, L, XL. Default: the controller's own (M).",
  ),
  logLevel: z.string().default("info").describe(
    "Log level of the Serverless controller: debug, info, warn, error, dpanic, panic or fatal. Default info.",
  ),
  logFormat: z.string().default("json").describe(
    "Log format of the Serverless controller: json or console. Default json.",
  ),
});

/** Serverless status (docs/design.md). */
export const ServerlessStatusSchema = z.object({
  state: z.enum(["Ready", "Processing", "Error", "Deleting"]).optional().describe(
    "State of the module: Ready, Processing, Error or Deleting.",
  ),
  served: z.enum(["True", "False"]).describe(
    "Whether this Serverless is the one the operator manages.",
  ),
  conditions: ConditionsSchema.optional().describe("Conditions of the module."),
  eventingEndpoint: z.string().optional().describe("Eventing endpoint in use."),
  tracingEndpoint: z.string().optional().describe("Tracing endpoint in use."),
  functionRequeueDuration: z.string().optional().describe("Function requeue duration in use."),
  healthzLivenessTimeout: z.string().optional().describe("Liveness timeout in use."),
  defaultRuntimePodPreset: z.string().optional().describe("Runtime Pod preset in use."),
  logLevel: z.string().optional().describe("Log level in use."),
  logFormat: z.string().optional().describe("Log format in use."),
  eventPublisherProxyURL: z.string().optional().describe("Event publisher proxy URL in use."),
  traceCollectorURL: z.string().optional().describe("Trace collector URL in use."),
});

/** A Serverless object. */
export const ServerlessSchema = kindSchema(
  `${OPERATOR_GROUP}/v1alpha1`,
  "Serverless",
  ServerlessSpecSchema.default(ServerlessSpecSchema.parse({})).describe(
    "Configuration of the Serverless module.",
  ),
  ServerlessStatusSchema,
  "Serverless installs, configures and reports on the Serverless module; one per cluster is served.",
);
