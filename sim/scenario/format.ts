/**
 * The scenario file format (issue 4 point 4, extended): a name, an optional seed and fault mix,
 * and steps at virtual times that apply or delete objects, inject faults, check objects, and send
 * requests through the data-plane model. Parsed from YAML and checked with zod, so a mistake in a
 * scenario is reported with its path instead of a confusing run.
 */
import { z } from "zod";
import { parseGoDuration } from "../../src/api/duration.ts";
import { formatErrors, toFieldErrors } from "../../src/api/issues.ts";
import { parseYamlDocument } from "../../src/api/yaml.ts";
import { envoyBehaviour } from "../../src/dataplane/mod.ts";

const Duration = z.string().refine((s) => parseGoDuration(s) !== undefined, {
  error: "must be a Go duration like 0s, 2s, 1m30s",
}).transform((s) => parseGoDuration(s)!);

const Labels = z.record(z.string(), z.string());

/** Which object a fault or check is about; absent fields match anything. */
const Target = z.object({
  kind: z.string().optional(),
  namespace: z.string().optional(),
  name: z.string().optional(),
});

const ObjectRef = z.object({
  apiVersion: z.string().optional(),
  kind: z.string(),
  namespace: z.string().optional(),
  name: z.string(),
});

const KubeObject = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: z.looseObject({ name: z.string(), namespace: z.string().optional() }),
});

const Fault = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("apiError"),
    verb: z.enum([
      "get",
      "list",
      "watch",
      "create",
      "update",
      "apply",
      "applyStatus",
      "patch",
      "delete",
    ]).optional(),
    target: Target,
    code: z.number().int(),
    count: z.number().int().min(1).default(1),
    retryAfter: Duration.optional(),
    message: z.string().optional(),
  }),
  z.object({
    kind: z.literal("replicaFailure"),
    target: Target,
    message: z.string().optional(),
    clear: z.boolean().default(false),
  }),
  z.object({
    kind: z.literal("slowDeployment"),
    target: Target,
    delay: Duration.default(600_000),
    clear: z.boolean().default(false),
  }),
  z.object({ kind: z.literal("crash"), restartAfter: Duration.default(5_000) }),
  z.object({ kind: z.literal("clockJump"), by: Duration }),
  z.object({ kind: z.enum(["watchDrop", "watchStall", "watchGone"]), target: Target }),
  z.object({ kind: z.literal("compact"), target: Target }),
]);

const Expectation = z.looseObject({
  kind: z.string(),
  apiVersion: z.string().optional(),
  namespace: z.string().optional(),
  name: z.string().optional(),
  absent: z.boolean().optional(),
  /** Extension: some status the object had so far (not only the current one) matches. */
  seen: z.boolean().optional(),
  /** Extension: count the objects of the kind (in the namespace, with `labels`) instead of matching one. */
  count: z.number().int().min(0).optional(),
  labels: Labels.optional(),
  conditions: z.array(z.record(z.string(), z.unknown())).optional(),
  /** Extension: condition types the status must not have. */
  noConditions: z.array(z.string()).optional(),
});

const Target2 = z.union([
  z.literal("gateway"),
  z.object({ namespace: z.string(), labels: Labels }),
]);

const RequestSpec = z.object({
  to: Target2,
  path: z.string().startsWith("/"),
  headers: Labels.optional(),
  method: z.string().optional(),
  count: z.number().int().min(1).default(1),
  /** Extension: a request to a workload that passes the ingress gateway first. */
  viaGateway: z.boolean().optional(),
  /** Extension: the client's address, the peer of the first proxy it reaches. */
  peer: z.string().optional(),
});

const ResponseExpectation = z.object({
  status: z.number().int().optional(),
  body: z.string().optional(),
  headers: Labels.optional(),
  /** Extension: the bucket that decided, `default` or the 0-based rule index. */
  bucket: z.union([z.literal("default"), z.number().int()]).optional(),
  /** Extension: a per-client bucket's client (a header's value or an address). */
  client: z.string().optional(),
  /** Extension: the route entry that took the request (`inbound`, `*`, or a gateway route's name). */
  route: z.string().optional(),
  /** Extension: the proxy rejected it (a gRPC call's rejection has HTTP status 200). */
  rejected: z.boolean().optional(),
  /** Extension: a limit in shadow mode would have rejected it (it was admitted). */
  wouldReject: z.boolean().optional(),
  /** Extension: request headers the proxy set on the way to the workload. */
  upstreamHeaders: Labels.optional(),
  /** Extension: this entry stands for `count` responses. */
  count: z.number().int().min(1).default(1),
});

const ErrorExpectation = z.object({
  code: z.number().int().optional(),
  reason: z.string().optional(),
  /** A substring of the message. */
  message: z.string().optional(),
});

const one = <T extends z.ZodType>(s: T) =>
  z.union([s, z.array(s)]).transform((v) => (Array.isArray(v) ? v : [v]) as z.output<T>[]);

const Step = z.object({
  at: Duration,
  apply: one(KubeObject).optional(),
  delete: one(ObjectRef).optional(),
  fault: one(Fault).optional(),
  expect: z.array(Expectation).optional(),
  requests: z.array(RequestSpec).optional(),
  expectResponses: z.array(ResponseExpectation).optional(),
  /** Extension: the apply or delete of this step must fail like this. */
  expectError: ErrorExpectation.optional(),
});

/** The fault mix of a scenario: none, the seed's swarm mix, or explicit rates. */
const Faults = z.union([
  z.literal("none"),
  z.literal("default"),
  z.record(z.string(), z.union([z.number(), z.string()])),
]);

/** The mesh's Envoy version, a string (YAML reads `1.30` as the number 1.3). */
const EnvoyVersion = z.union([z.string(), z.number()]).transform((v, ctx) => {
  if (typeof v === "number") {
    ctx.addIssue({
      code: "custom",
      message: `write the Envoy version as a string, e.g. "1.30" (YAML reads ${v} as a number)`,
    });
    return z.NEVER;
  }
  const b = envoyBehaviour(v);
  if (!b.ok) {
    ctx.addIssue({ code: "custom", message: b.error });
    return z.NEVER;
  }
  return b.value;
});

/** A scenario file. */
export const ScenarioSchema = z.object({
  name: z.string().min(1),
  seed: z.number().int().min(0).optional(),
  /** The Envoy of the mesh's proxies (default DEFAULT_ENVOY); `--envoy` overrides it. */
  envoy: EnvoyVersion.optional(),
  faults: Faults.optional(),
  steps: z.array(Step).min(1),
}).superRefine((s, ctx) => {
  for (let i = 1; i < s.steps.length; i++) {
    if (s.steps[i].at < s.steps[i - 1].at) {
      ctx.addIssue({
        code: "custom",
        path: ["steps", i, "at"],
        message: "steps must be in time order",
      });
    }
  }
  for (const [i, step] of s.steps.entries()) {
    if (step.expectResponses && !step.requests) {
      ctx.addIssue({
        code: "custom",
        path: ["steps", i, "expectResponses"],
        message: "needs requests in the same step",
      });
    }
    if (step.expectError && !step.apply && !step.delete) {
      ctx.addIssue({
        code: "custom",
        path: ["steps", i, "expectError"],
        message: "needs an apply or delete in the same step",
      });
    }
  }
});

/** A parsed scenario. */
export type Scenario = z.output<typeof ScenarioSchema>;
/** One step. */
export type ScenarioStep = Scenario["steps"][number];
/** One fault of a step. */
export type FaultStep = z.output<typeof Fault>;
/** One expectation. */
export type Expectation = z.output<typeof Expectation>;
/** One request. */
export type RequestStep = z.output<typeof RequestSpec>;
/** One response expectation. */
export type ResponseExpectation = z.output<typeof ResponseExpectation>;

/** Parses a scenario from YAML text; throws an Error naming the file and the bad fields. */
export function parseScenario(text: string, file = "scenario"): Scenario {
  // Read as every file the CLI takes: bounded, as kubectl reads YAML (src/api/yaml.ts).
  const read = parseYamlDocument(text, file);
  if (!read.ok) throw new Error(read.error);
  const data = read.value;
  const r = ScenarioSchema.safeParse(data);
  if (!r.success) throw new Error(`${file}: ${formatErrors(toFieldErrors(r.error, data))}`);
  return r.data;
}
