/**
 * The scenario file format (issue 4 point 4, extended): a name, an optional seed and fault mix,
 * and steps at virtual times that apply or delete objects, inject faults, check objects, and send
 * requests through the data-plane model. Parsed from YAML and checked with zod, so a mistake in a
 * scenario is reported with its path instead of a confusing run.
 */
import { z } from "zod";
import { goDurationProblem, parseGoDuration } from "../../src/api/duration.ts";
import { formatErrors } from "../../src/api/issues.ts";
import { isObject } from "../../src/api/json.ts";
import { parseYamlDocument } from "../../src/api/yaml.ts";
import { envoyBehaviour } from "../../src/dataplane/mod.ts";
import { FaultRates } from "../fault_choice.ts";
import { fieldErrors, strict, unknownName } from "../schema.ts";
import { RESOURCES } from "../../src/api/resources.ts";
import { EXTRA_BUILTINS } from "../cluster/types.ts";

/**
 * The longest virtual time and duration a scenario may give (`at`, `by`, `delay`, `restartAfter`,
 * `retryAfter`): far above what the scenarios need (the longest runs to 50m) while a run stays
 * seconds long (a step at 24h: about 6 s and 230 MB; one at 1000h ran for minutes past 840 MB).
 */
const MAX_DURATION = "24h";
const MAX_DURATION_MS = parseGoDuration(MAX_DURATION)!;

/** The largest `count` (of requests, responses, objects, failing requests). */
const MAX_COUNT = 1_000;

/** The most requests one step sends, `count`s expanded. */
const MAX_STEP_REQUESTS = 10_000;

/**
 * The most requests a scenario sends, all steps together: ten steps at the most each (100000
 * requests run in about 3 s and 230 MB; YAML aliases once repeated a full step a thousand times,
 * 10^7 requests from 1 KB, which ran for minutes to 4.4 GB and then failed).
 */
const MAX_SCENARIO_REQUESTS = 100_000;

const Duration = z.string().transform((s, ctx) => {
  const ms = parseGoDuration(s);
  if (ms === undefined) {
    ctx.addIssue({
      code: "custom",
      message: goDurationProblem(s, "must be a Go duration like 0s, 2s, 1m30s"),
    });
    return z.NEVER;
  }
  if (ms > MAX_DURATION_MS) {
    ctx.addIssue({ code: "custom", message: `${s} is above the maximum ${MAX_DURATION}` });
    return z.NEVER;
  }
  return ms;
});

const Count = z.number().int().min(1).max(MAX_COUNT);

const Labels = z.record(z.string(), z.string());

/** An HTTP status of a response. */
const HttpStatus = z.number().int().min(100).max(599);

/** The code of an error the API server answers with. */
const ApiErrorCode = z.number().int().min(400).max(599);

const TARGET = {
  kind: z.string().optional(),
  namespace: z.string().optional(),
  name: z.string().optional(),
};

/** Which objects a fault of kind `fault` is about; absent fields match anything. */
const targetOf = (fault: string) => strict(TARGET, { required: `required for ${fault}` });

/** Whose watches a watch fault of kind `fault` hits: the operator's of a kind (any when absent). */
const watchTargetOf = (fault: string) =>
  strict({ kind: z.string().optional() }, { required: `required for ${fault}` });

const ObjectRef = strict({
  apiVersion: z.string().optional(),
  kind: z.string(),
  namespace: z.string().optional(),
  name: z.string(),
});

/** An object to apply: loose, as the simulated API server validates it as it would kubectl's. */
const KubeObject = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: z.looseObject({ name: z.string(), namespace: z.string().optional() }),
});

/** A fault `kind` none of the known: `unknown fault kind "x" (did you mean y?); known: ...`. */
function unknownKind(iss: z.core.$ZodRawIssue): string | undefined {
  if (iss.code !== "invalid_union" || iss.inclusive === false || !iss.options) return;
  const known = iss.options.map(String);
  const kind = isObject(iss.input) ? iss.input.kind : undefined;
  if (kind === undefined) return `is required (one of ${known.join(", ")})`;
  return unknownName("fault kind", kind, known);
}

const WATCH_FAULTS = ["watchDrop", "watchStall", "watchGone"] as const;

/**
 * Which mesh Pods' proxies a proxy fault hits: a Pod named `name`, or one of the Pods of the
 * Deployment `name` (`name-...`), in `namespace`; absent fields match any.
 */
const proxyTargetOf = (fault: string) =>
  strict(
    { namespace: z.string().optional(), name: z.string().optional() },
    { required: `required for ${fault}` },
  );

const Fault = z.discriminatedUnion("kind", [
  strict({
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
    target: targetOf("apiError"),
    code: ApiErrorCode,
    count: Count.default(1),
    retryAfter: Duration.optional(),
    message: z.string().optional(),
  }),
  strict({
    kind: z.literal("replicaFailure"),
    target: targetOf("replicaFailure"),
    message: z.string().optional(),
    clear: z.boolean().default(false),
  }),
  strict({
    kind: z.literal("slowDeployment"),
    target: targetOf("slowDeployment"),
    delay: Duration.default(600_000),
    clear: z.boolean().default(false),
  }),
  strict({ kind: z.literal("crash"), restartAfter: Duration.default(5_000) }),
  strict({ kind: z.literal("clockJump"), by: Duration }),
  ...WATCH_FAULTS.map((kind) => strict({ kind: z.literal(kind), target: watchTargetOf(kind) })),
  strict({
    kind: z.literal("proxyReject"),
    target: proxyTargetOf("proxyReject"),
    count: Count.default(1),
  }),
  strict({
    kind: z.literal("proxyDisconnect"),
    target: proxyTargetOf("proxyDisconnect"),
    clear: z.boolean().default(false),
  }),
  strict({
    kind: z.literal("istiodUnreachable"),
    for: Duration.optional(),
    clear: z.boolean().default(false),
  }),
  strict({
    kind: z.literal("compact"),
    target: strict({ kind: z.string() }, { required: "required for compact" }),
  }),
  strict({ kind: z.literal("partition"), for: Duration }),
  strict({
    kind: z.literal("apiServerDown"),
    for: Duration,
    watches: z.enum(["drop", "keep"]).default("drop"),
  }),
], { error: unknownKind });

const Fields = z.record(z.string(), z.unknown());

/**
 * The top-level fields of the kinds the simulated cluster serves that an expectation may match
 * besides its own keys: metadata, spec and status of every kind; data, binaryData, stringData, type
 * and immutable (ConfigMap, Secret); rules and aggregationRule (Role, ClusterRole); roleRef and
 * subjects (bindings); webhooks (webhook configurations); secrets, imagePullSecrets and
 * automountServiceAccountToken (ServiceAccount); an Event's (its `count` is the expectation's own).
 */
const OBJECT_FIELDS = {
  metadata: Fields,
  spec: Fields,
  status: Fields,
  data: Labels,
  binaryData: Labels,
  stringData: Labels,
  type: z.string(),
  immutable: z.boolean(),
  rules: z.array(z.unknown()),
  aggregationRule: Fields,
  roleRef: Fields,
  subjects: z.array(z.unknown()),
  webhooks: z.array(z.unknown()),
  secrets: z.array(z.unknown()),
  imagePullSecrets: z.array(z.unknown()),
  automountServiceAccountToken: z.boolean(),
  involvedObject: Fields,
  reason: z.string(),
  message: z.string(),
  source: Fields,
  action: z.string(),
  related: Fields,
  reportingComponent: z.string(),
  reportingInstance: z.string(),
  eventTime: z.string(),
  firstTimestamp: z.string(),
  lastTimestamp: z.string(),
  series: Fields,
};

/** An object field an expectation may match. */
export type ExpectedField = keyof typeof OBJECT_FIELDS;

/** The object fields an expectation may match (`expectedObject` takes them). */
export const EXPECTED_FIELDS = Object.keys(OBJECT_FIELDS) as readonly ExpectedField[];

/** What an empty `conditions` or `noConditions` is told: it would pass whatever the status. */
const NOTHING_CHECKED = "an empty list checks nothing: list a condition, or leave the key out";

/**
 * The groups of each kind an expectation may name: the simulator's (RESOURCES and the other
 * built-ins) and the kinds of the CRDs the scenario applies. Anything else is a misspelling whose
 * `absent: true` or `count: 0` would pass without looking.
 */
function knownKinds(steps: readonly { apply?: readonly unknown[] }[]): Map<string, Set<string>> {
  const known = new Map<string, Set<string>>();
  const add = (kind: string, group: string) => {
    if (!known.has(kind)) known.set(kind, new Set());
    known.get(kind)!.add(group);
  };
  for (const t of [...Object.values(RESOURCES), ...EXTRA_BUILTINS]) add(t.kind, t.group);
  for (const step of steps) {
    for (const o of step.apply ?? []) {
      if (!isObject(o) || o.kind !== "CustomResourceDefinition" || !isObject(o.spec)) continue;
      const names = o.spec.names;
      if (isObject(names) && typeof names.kind === "string" && typeof o.spec.group === "string") {
        add(names.kind, o.spec.group);
      }
    }
  }
  return known;
}

/** Why an expectation's kind and apiVersion name nothing the simulator can serve; undefined if they do. */
function unknownExpectedKind(
  e: { kind: string; apiVersion?: string },
  known: ReadonlyMap<string, ReadonlySet<string>>,
): { path: string; message: string } | undefined {
  const groups = known.get(e.kind);
  if (!groups) {
    return { path: "kind", message: unknownName("kind", e.kind, [...known.keys()].sort()) };
  }
  if (e.apiVersion === undefined) return undefined;
  const group = e.apiVersion.includes("/") ? e.apiVersion.slice(0, e.apiVersion.indexOf("/")) : "";
  if (groups.has(group)) return undefined;
  const served = [...groups].map((g) => g === "" ? "the core group (v1)" : g).join(", ");
  return {
    path: "apiVersion",
    message: `${JSON.stringify(e.apiVersion)} does not serve ${e.kind}, which is in ${served}`,
  };
}

/** The keys an expectation that counts objects (`count`, or no name) checks. */
const COUNTING = new Set(["kind", "apiVersion", "namespace", "labels", "count"]);
/** The keys an `absent: true` expectation checks. */
const ABSENT = new Set(["kind", "apiVersion", "namespace", "name", "absent"]);
/** The keys a `seen: true` expectation checks: the object's status history has no more. */
const SEEN = new Set([
  "kind",
  "apiVersion",
  "namespace",
  "name",
  "seen",
  "transient",
  "status",
  "conditions",
]);

const Expectation = strict({
  kind: z.string(),
  apiVersion: z.string().optional(),
  namespace: z.string().optional(),
  name: z.string().optional(),
  absent: z.boolean().optional(),
  /** Extension: some status the object had so far (not only the current one) matches. */
  seen: z.boolean().optional(),
  /**
   * Extension, with `seen: true`: a status the operator may pass through within one reconcile on a
   * real cluster (kwok's Pods can be ready before the operator looks again): the simulator must
   * show it; a run on a real cluster says when it did not see it, and goes on.
   */
  transient: z.boolean().optional(),
  /** Extension: count the objects of the kind (in the namespace, with `labels`) instead of matching one. */
  count: z.number().int().min(0).max(MAX_COUNT).optional(),
  labels: Labels.optional(),
  conditions: z.array(z.record(z.string(), z.unknown())).refine(
    (a) => a.length > 0,
    NOTHING_CHECKED,
  )
    .optional(),
  /** Extension: condition types the status must not have. */
  noConditions: z.array(z.string()).refine((a) => a.length > 0, NOTHING_CHECKED).optional(),
  ...Object.fromEntries(Object.entries(OBJECT_FIELDS).map(([k, s]) => [k, s.optional()])) as {
    [K in ExpectedField]: z.ZodOptional<(typeof OBJECT_FIELDS)[K]>;
  },
}).superRefine((e, ctx) => {
  // A key the expectation's way of checking ignores would be an assertion that never runs.
  const [checked, how] = e.count !== undefined || e.name === undefined
    ? [COUNTING, "counting objects (count, or no name)"]
    : e.seen
    ? [SEEN, "seen: true"]
    : e.absent
    ? [ABSENT, "absent: true"]
    : [undefined, ""];
  for (const key of Object.keys(e)) {
    if (checked && !checked.has(key)) {
      ctx.addIssue({ code: "custom", path: [key], message: `not checked with ${how}` });
    }
  }
  if (e.transient !== undefined && !checked) {
    ctx.addIssue({ code: "custom", path: ["transient"], message: "only with seen: true" });
  }
});

const To = z.union([
  z.literal("gateway"),
  strict({ namespace: z.string(), labels: Labels }),
], { error: "must be gateway or {namespace, labels}" });

const RequestSpec = strict({
  to: To,
  path: z.string().startsWith("/"),
  headers: Labels.optional(),
  method: z.string().optional(),
  count: Count.default(1),
  /** Extension: a request to a workload that passes the ingress gateway first. */
  viaGateway: z.boolean().optional(),
  /** Extension: the client's address, the peer of the first proxy it reaches. */
  peer: z.string().optional(),
});

const ResponseExpectation = strict({
  status: HttpStatus.optional(),
  body: z.string().optional(),
  headers: Labels.optional(),
  /** Extension: the bucket that decided, `default` or the 0-based rule index. */
  bucket: z.union([z.literal("default"), z.number().int().min(0)], {
    error: "must be default or a rule index (0, 1, ...)",
  }).optional(),
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
  count: Count.default(1),
});

const ErrorExpectation = strict({
  code: ApiErrorCode.optional(),
  reason: z.string().optional(),
  /** A substring of the message. */
  message: z.string().optional(),
});

/** One `s` or a list of them, as a list. */
const one = <T extends z.ZodType>(s: T) =>
  z.union([s, z.array(s)], { error: "must be one item or a list" }).transform((v) =>
    (Array.isArray(v) ? v : [v]) as z.output<T>[]
  );

const Step = strict({
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
const Faults = z.union([z.enum(["none", "default"]), FaultRates], {
  error: "must be none, default, or a map of fault kind to rate",
});

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
export const ScenarioSchema = strict({
  name: z.string().min(1),
  /** 0 to 2^53−1 (MAX_SEED of sim/prng.ts): zod's integers are the safe ones, which end there. */
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
  let total = 0;
  let counted = true;
  const known = knownKinds(s.steps);
  for (const [i, step] of s.steps.entries()) {
    for (const [j, e] of (step.expect ?? []).entries()) {
      const problem = unknownExpectedKind(e, known);
      if (problem) {
        ctx.addIssue({
          code: "custom",
          path: ["steps", i, "expect", j, problem.path],
          message: problem.message,
        });
      }
    }
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
    const requests = step.requests ?? [];
    const sent = requests.reduce((n, r) => n + r.count, 0);
    const countsValid = requests.every((r) => r.count <= MAX_COUNT);
    if (sent > MAX_STEP_REQUESTS && countsValid) {
      ctx.addIssue({
        code: "custom",
        path: ["steps", i, "requests"],
        message:
          `${sent} requests (counts expanded) is above the maximum ${MAX_STEP_REQUESTS} a step`,
      });
    }
    counted &&= countsValid && sent <= MAX_STEP_REQUESTS;
    total += sent;
  }
  if (counted && total > MAX_SCENARIO_REQUESTS) {
    ctx.addIssue({
      code: "custom",
      path: ["steps"],
      message:
        `${total} requests (counts expanded, all steps) is above the maximum ${MAX_SCENARIO_REQUESTS} a scenario`,
    });
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
  if (!r.success) throw new Error(`${file}: ${formatErrors(fieldErrors(r.error, data))}`);
  return r.data;
}
