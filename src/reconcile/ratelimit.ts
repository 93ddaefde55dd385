/**
 * The RateLimit reconciler: a pure function from a RateLimit and what it needs of the cluster to a
 * Plan. A valid, unconflicted RateLimit gets its EnvoyFilter applied and state Ready; anything else
 * gets state Error with a message naming the cause, and its EnvoyFilter, if one exists, deleted:
 * a limit is never left silently applied (DESIGN.md).
 */
import type { Condition } from "../api/common.ts";
import { formatErrors } from "../api/issues.ts";
import { parseRateLimit, type RateLimit } from "../api/ratelimit.ts";
import { apiVersionOf, RESOURCES } from "../api/resources.ts";
import type { KubeObject } from "../api/object.ts";
import { kubeTime } from "../api/time.ts";
import { conditionEvents, rowFor, setCondition, type StateRow } from "./conditions.ts";
import { MANAGED_BY, MANAGED_BY_LABEL, MODULE_LABEL } from "./labels.ts";
import type { ApplyOutcome, ObjectRef, Plan } from "./plan.ts";
import { olderConflicts } from "./ratelimit/conflict.ts";
import { isGateway, renderEnvoyFilter } from "./ratelimit/envoyfilter.ts";
import { validateSpec } from "./ratelimit/validate.ts";

/** The condition type every RateLimit status carries. */
export const RATELIMIT_CONDITION = "Ready";

function stateRow(no: number, status: "True" | "False", reason: string, meaning: string): StateRow {
  return {
    no,
    state: status === "True" ? "Ready" : "Error",
    type: RATELIMIT_CONDITION,
    status,
    reason,
    meaning,
  };
}

/**
 * SPEC.md's RateLimit states (Ready, Error) with the reasons this operator gives, as data. The
 * ApplyFailed row is the API refusing the filter (an admission webhook, a quota); the applied
 * filter of an earlier generation, if any, stays until an apply succeeds.
 */
export const RATELIMIT_STATES: readonly StateRow[] = [
  stateRow(1, "True", "Applied", "The limits are applied"),
  stateRow(2, "False", "InvalidSpec", "The spec is invalid; the limit is not applied"),
  stateRow(
    3,
    "False",
    "Conflict",
    "An older RateLimit selects the same pods, or the EnvoyFilter's name is taken; the limit is not applied",
  ),
  stateRow(
    4,
    "False",
    "MeshMissing",
    "The service mesh (EnvoyFilter CRD) is not installed; the limit is not applied",
  ),
  stateRow(5, "False", "ApplyFailed", "The API refused the EnvoyFilter; the limit is not applied"),
];

/** Everything a RateLimit's reconcile reads. */
export interface RateLimitInput {
  /** The RateLimit as stored: any shape; it is parsed here. */
  rateLimit: unknown;
  /** The other RateLimits of its namespace (it may be among them; it is skipped by name). */
  peers: readonly unknown[];
  /** The Pods of its namespace. */
  pods: readonly unknown[];
  /** The EnvoyFilter of the same namespace and name, if one exists. */
  envoyFilter?: KubeObject;
  /** Whether the EnvoyFilter CRD exists (the mesh is installed). */
  meshInstalled: boolean;
  /** Epoch milliseconds. */
  now: number;
  /** What happened to the previous Plan's writes for this RateLimit. */
  lastOutcome?: ApplyOutcome;
}

interface Meta {
  name: string;
  namespace: string;
  uid?: string;
  generation?: number;
  deleting: boolean;
  conditions: Condition[];
}

function field(obj: unknown, ...keys: string[]): unknown {
  let cur = obj;
  for (const k of keys) {
    cur = cur !== null && typeof cur === "object" ? (cur as Record<string, unknown>)[k] : undefined;
  }
  return cur;
}

function isCondition(c: unknown): c is Condition {
  return ["type", "status", "reason", "message", "lastTransitionTime"].every((k) =>
    typeof field(c, k) === "string"
  );
}

/** What can be read of any object, however malformed. */
function readMeta(obj: unknown): Meta {
  const str = (v: unknown) => (typeof v === "string" ? v : undefined);
  const gen = field(obj, "metadata", "generation");
  const conds = field(obj, "status", "conditions");
  const conditions = (Array.isArray(conds) ? conds : []).filter(isCondition)
    .filter((c) => c.type === RATELIMIT_CONDITION);
  return {
    name: str(field(obj, "metadata", "name")) ?? "",
    namespace: str(field(obj, "metadata", "namespace")) ?? "default",
    uid: str(field(obj, "metadata", "uid")),
    generation: Number.isSafeInteger(gen) && (gen as number) >= 0 ? gen as number : undefined,
    deleting: field(obj, "metadata", "deletionTimestamp") !== undefined,
    conditions,
  };
}

/** True when the EnvoyFilter was made by this operator for this RateLimit. */
function isOurs(ef: KubeObject, meta: Meta): boolean {
  const labels = ef.metadata.labels ?? {};
  if (labels[MANAGED_BY_LABEL] !== MANAGED_BY || labels[MODULE_LABEL] !== "ratelimit") return false;
  const owners = ef.metadata.ownerReferences ?? [];
  if (owners.length === 0) return meta.uid === undefined;
  return owners.some((o) =>
    o.kind === "RateLimit" && o.name === meta.name && (meta.uid === undefined || o.uid === meta.uid)
  );
}

function filterRef(meta: Meta): ObjectRef {
  return {
    apiVersion: apiVersionOf(RESOURCES.EnvoyFilter),
    kind: RESOURCES.EnvoyFilter.kind,
    namespace: meta.namespace,
    name: meta.name,
  };
}

interface Verdict {
  reason: string;
  message: string;
  desired?: KubeObject;
}

/** Why the RateLimit cannot be applied, or its desired EnvoyFilter. */
function judge(input: RateLimitInput, meta: Meta): Verdict {
  // Status is the operator's own output: judging it would make the verdict depend on itself.
  const raw = input.rateLimit;
  const parsed = parseRateLimit(
    raw !== null && typeof raw === "object" && !Array.isArray(raw)
      ? { ...raw, status: undefined }
      : raw,
  );
  if (!parsed.ok) {
    return {
      reason: "InvalidSpec",
      message: `Invalid spec, limit not applied: ${formatErrors(parsed.errors)}`,
    };
  }
  const rl: RateLimit = parsed.value;
  const problems = validateSpec(rl.spec);
  if (problems.length > 0) {
    return {
      reason: "InvalidSpec",
      message: `Invalid spec, limit not applied: ${problems.join("; ")}`,
    };
  }
  if (!input.meshInstalled) {
    return {
      reason: "MeshMissing",
      message:
        "The service mesh is not installed (no CustomResourceDefinition envoyfilters.networking.istio.io); limit not applied",
    };
  }
  const self = {
    name: meta.name,
    creationTimestamp: rl.metadata.creationTimestamp ?? "",
    selector: rl.spec.selectorLabels,
  };
  const older = olderConflicts(self, input.peers, input.pods);
  if (older.length > 0) {
    const names = older.map((n) => `${meta.namespace}/${n}`).join(", ");
    return {
      reason: "Conflict",
      message:
        `Selects the same pods as the older RateLimit ${names}; only one RateLimit may apply to a workload, so this one is not applied`,
    };
  }
  if (input.envoyFilter && !isOurs(input.envoyFilter, meta)) {
    return {
      reason: "Conflict",
      message:
        `EnvoyFilter ${meta.namespace}/${meta.name} exists and was not created for this RateLimit; limit not applied (rename the RateLimit or remove that EnvoyFilter)`,
    };
  }
  const desired = renderEnvoyFilter({
    ...rl,
    metadata: { ...rl.metadata, namespace: meta.namespace },
  });
  const out = input.lastOutcome;
  const failed = out && !out.ok && out.failed?.kind === "EnvoyFilter" &&
    (out.generation === undefined || out.generation === meta.generation);
  if (failed) {
    return {
      reason: "ApplyFailed",
      message: `Applying EnvoyFilter ${meta.namespace}/${meta.name} failed: ${
        out.error ?? "unknown error"
      }`,
      desired,
    };
  }
  const where = isGateway(meta.namespace, rl.spec)
    ? "the ingress gateway"
    : `pods with ${Object.entries(rl.spec.selectorLabels).map(([k, v]) => `${k}=${v}`).join(",")}`;
  return {
    reason: "Applied",
    message: `Limits applied to ${where} by EnvoyFilter ${meta.namespace}/${meta.name}`,
    desired,
  };
}

/** The Plan for one RateLimit. Never throws; never writes the RateLimit's spec. */
export function reconcileRateLimit(input: RateLimitInput): Plan {
  const meta = readMeta(input.rateLimit);
  const observed = input.envoyFilter;
  const ours = observed !== undefined && isOurs(observed, meta);
  if (meta.deleting) {
    // The owner reference lets the garbage collector remove the filter; deleting it here as well
    // covers a filter without one.
    return { apply: [], delete: ours ? [filterRef(meta)] : [], events: [] };
  }
  const verdict = judge(input, meta);
  const row = rowFor(RATELIMIT_STATES, verdict.reason);
  const conditions = setCondition(
    meta.conditions,
    { type: row.type, status: row.status, reason: row.reason, message: verdict.message },
    kubeTime(input.now),
    meta.generation,
  );
  const status = {
    state: row.state,
    description: verdict.message,
    ...(meta.generation !== undefined ? { observedGeneration: meta.generation } : {}),
    conditions,
  };
  return {
    apply: verdict.desired ? [verdict.desired] : [],
    delete: !verdict.desired && ours ? [filterRef(meta)] : [],
    status,
    events: conditionEvents(meta.conditions, conditions, (c) => c.status === "False"),
  };
}
