/**
 * The RateLimit reconciler: a pure function from a RateLimit and what it needs of the cluster to a
 * Plan. A valid, unconflicted RateLimit gets its EnvoyFilter applied and state Ready. Anything else
 * gets state Error with a message naming the field and the rule, and keeps the EnvoyFilter of its
 * last good generation, if it has one that no older RateLimit claims: a bad update never removes
 * protection (docs/design.md). The filter on the cluster is the record of that generation (an
 * annotation), so nothing here depends on memory of earlier reconciles. Beside `Ready`, the
 * `Enforced` condition and the Pod figures say whether the limit in place reaches any proxy.
 */
import type { RateLimit } from "../api/ratelimit.ts";
import type { KubeObject } from "../api/object.ts";
import { kubeTime } from "../api/time.ts";
import { conditionEvents, rowFor, type StateRow, updateConditions } from "./conditions.ts";
import type { ApplyOutcome, Plan } from "./plan.ts";
import { olderConflicts, selectPods } from "./ratelimit/conflict.ts";
import {
  ENFORCED_CONDITION,
  enforcement,
  type InForce,
  selectorText,
} from "./ratelimit/enforcement.ts";
import { isGateway, renderedGeneration } from "./ratelimit/envoyfilter.ts";
import { filterRef, filterSelector, isOurs, type Meta, readMeta } from "./ratelimit/meta.ts";
import { applyFailure, type Kept, limitsText, namesText, refusal } from "./ratelimit/messages.ts";
import { judgeSpec } from "./ratelimit/spec.ts";

/** The condition type whose row decides a RateLimit's state. */
export const RATELIMIT_CONDITION = "Ready";
export { ENFORCED_CONDITION, ENFORCED_ROWS } from "./ratelimit/enforcement.ts";

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
 * docs/design.md's RateLimit states (Ready, Error) with the reasons this operator gives, as data. In every
 * Error row the EnvoyFilter of the last good generation stays if there is one (and no older
 * RateLimit claims its Pods); `status.enforcedGeneration` names it.
 */
export const RATELIMIT_STATES: readonly StateRow[] = [
  stateRow(1, "True", "Applied", "The limits are applied"),
  stateRow(
    2,
    "False",
    "InvalidSpec",
    "The spec is invalid; it is not applied (the last good generation stays enforced)",
  ),
  stateRow(
    3,
    "False",
    "Conflict",
    "An older RateLimit selects the same pods, or the EnvoyFilter's name is taken; not applied",
  ),
  stateRow(
    4,
    "False",
    "MeshMissing",
    "The service mesh (EnvoyFilter CRD) is not installed; the limit is not applied",
  ),
  stateRow(
    5,
    "False",
    "ApplyFailed",
    "The API refused the EnvoyFilter; the new spec is not applied",
  ),
];

/** Everything a RateLimit's reconcile reads. */
export interface RateLimitInput {
  /** The RateLimit as stored: any shape; it is parsed here. */
  rateLimit: unknown;
  /**
   * Other RateLimits of its namespace: at least every one whose selector, or whose kept
   * EnvoyFilter's, can select the same Pods as its spec's or its kept filter's selector (others
   * are ignored; it may be among them and is skipped by name).
   */
  peers: readonly unknown[];
  /**
   * Pods of its namespace: at least every Pod its spec's selector or its EnvoyFilter's selector
   * selects (others are ignored).
   */
  pods: readonly unknown[];
  /** The EnvoyFilter of the same namespace and name, if one exists. */
  envoyFilter?: KubeObject;
  /** The EnvoyFilter named like a peer, if one exists: the Pods a peer's kept filter holds. */
  peerFilter?: (name: string) => KubeObject | undefined;
  /** Whether the EnvoyFilter CRD exists (the mesh is installed). */
  meshInstalled: boolean;
  /** Epoch milliseconds. */
  now: number;
  /** What happened to the previous Plan's writes for this RateLimit. */
  lastOutcome?: ApplyOutcome;
  /** The largest EnvoyFilter to apply, in stored bytes; default `ENVOYFILTER_MAX_BYTES`. */
  maxFilterBytes?: number;
}

/** Why the current generation cannot be applied, or what applying it takes. */
type Verdict =
  | { reason: "InvalidSpec" | "MeshMissing" | "Conflict"; problems: string[] }
  | { reason: "Applied" | "ApplyFailed"; problems?: string[]; desired: KubeObject; rl: RateLimit };

function creationOf(raw: unknown): string {
  const t = (raw as { metadata?: { creationTimestamp?: unknown } } | null)?.metadata
    ?.creationTimestamp;
  return typeof t === "string" ? t : "";
}

/**
 * The input's Pods that a selector selects, made once a reconcile for each selector object (the
 * spec's, the kept filter's): conflict detection and enforcement read the same few Pods rather
 * than each scanning the namespace.
 */
function podSelection(pods: readonly unknown[]) {
  const made = new Map<Readonly<Record<string, string>>, unknown[]>();
  return (selector: Readonly<Record<string, string>>): unknown[] => {
    let list = made.get(selector);
    if (!list) made.set(selector, list = selectPods(pods, selector));
    return list;
  };
}

type Selection = ReturnType<typeof podSelection>;

/** The selector an older peer's own EnvoyFilter holds, for conflict detection. */
function enforcedOf(input: RateLimitInput) {
  return (name: string): Record<string, string> | undefined => {
    const ef = input.peerFilter?.(name);
    return ef && isOurs(ef, { name }) ? filterSelector(ef) : undefined;
  };
}

function judge(
  input: RateLimitInput,
  meta: Meta,
  ours: KubeObject | undefined,
  selected: Selection,
): Verdict {
  const raw = input.rateLimit;
  const spec = judgeSpec(raw, meta.namespace, input.maxFilterBytes);
  if (!spec.ok) return { reason: "InvalidSpec", problems: spec.problems };
  const { rl, desired } = spec;
  if (!input.meshInstalled) {
    return {
      reason: "MeshMissing",
      problems: [
        "The service mesh is not installed (no CustomResourceDefinition envoyfilters.networking.istio.io); limit not applied",
      ],
    };
  }
  const self = {
    name: meta.name,
    creationTimestamp: creationOf(raw),
    selector: rl.spec.selectorLabels,
  };
  const older = olderConflicts(self, input.peers, selected(self.selector), enforcedOf(input));
  if (older.length > 0) {
    return {
      reason: "Conflict",
      problems: [
        `spec.selectorLabels ${
          selectorText(rl.spec.selectorLabels)
        } selects the same pods as the older RateLimit ${
          namesText(meta.namespace, older)
        }; only one RateLimit may apply to a Pod (the oldest wins)`,
      ],
    };
  }
  if (input.envoyFilter && !ours) {
    return {
      reason: "Conflict",
      problems: [
        `EnvoyFilter ${meta.namespace}/${meta.name} exists and was not created for this RateLimit (rename the RateLimit or remove that EnvoyFilter)`,
      ],
    };
  }
  const out = input.lastOutcome;
  const failed = out && !out.ok && out.failed?.kind === "EnvoyFilter" &&
    (out.generation === undefined || out.generation === meta.generation);
  if (failed) {
    return {
      reason: "ApplyFailed",
      problems: [
        `Applying EnvoyFilter ${meta.namespace}/${meta.name} failed: ${
          (out.error ?? "unknown error").replace(/\.$/, "")
        }`,
      ],
      desired,
      rl,
    };
  }
  return { reason: "Applied", desired, rl };
}

function keep(
  input: RateLimitInput,
  meta: Meta,
  ours: KubeObject | undefined,
  selected: Selection,
): Kept {
  if (!ours) return undefined;
  const selector = filterSelector(ours);
  if (!selector) return { withdrawn: "its workload selector is unreadable" };
  const self = { name: meta.name, creationTimestamp: creationOf(input.rateLimit), selector };
  const older = olderConflicts(self, input.peers, selected(selector), enforcedOf(input));
  if (older.length > 0) {
    return {
      withdrawn: `the older RateLimit ${namesText(meta.namespace, older)} selects the same pods`,
    };
  }
  const gateway = isGateway(meta.namespace, { selectorLabels: selector });
  return { filter: ours, inForce: { namespace: meta.namespace, selector, gateway } };
}

/** The Plan for one RateLimit. Never throws; never writes the RateLimit's spec. */
export function reconcileRateLimit(input: RateLimitInput): Plan {
  const meta = readMeta(input.rateLimit, [RATELIMIT_CONDITION, ENFORCED_CONDITION]);
  const observed = input.envoyFilter;
  const ours = observed !== undefined && isOurs(observed, meta) ? observed : undefined;
  if (meta.deleting) {
    // The owner reference lets the garbage collector remove the filter; deleting it here as well
    // covers a filter without one.
    return { apply: [], delete: ours ? [filterRef(meta)] : [], events: [] };
  }
  const selected = podSelection(input.pods);
  const verdict = judge(input, meta, ours, selected);
  let message: string;
  let inForce: InForce | undefined;
  let enforcedGeneration: number | undefined;
  const plan: Plan = { apply: [], delete: [], events: [] };
  if ("desired" in verdict) {
    plan.apply.push(verdict.desired);
    const { spec } = verdict.rl;
    const gateway = isGateway(meta.namespace, spec);
    if (verdict.reason === "Applied") {
      inForce = { namespace: meta.namespace, selector: spec.selectorLabels, gateway };
      enforcedGeneration = meta.generation;
      const where = gateway
        ? "the ingress gateway"
        : `Pods with ${selectorText(spec.selectorLabels)}`;
      message = `${
        meta.generation === undefined ? "Limits" : `Limits of generation ${meta.generation}`
      } applied to ${where} by EnvoyFilter ${meta.namespace}/${meta.name}: ${limitsText(spec)}`;
    } else {
      // The filter in place, if any, is what the failed apply would have replaced.
      const k = keep(input, meta, ours, selected);
      inForce = k && "filter" in k ? k.inForce : undefined;
      enforcedGeneration = ours ? renderedGeneration(ours) : undefined;
      message = applyFailure(verdict.problems ?? [], ours);
    }
  } else {
    const kept = verdict.reason === "MeshMissing" ? undefined : keep(input, meta, ours, selected);
    if (kept && "filter" in kept) {
      inForce = kept.inForce;
      enforcedGeneration = renderedGeneration(kept.filter);
    } else if (ours) plan.delete.push(filterRef(meta));
    message = refusal(verdict.reason, verdict.problems, meta.generation, kept);
  }
  const row = rowFor(RATELIMIT_STATES, verdict.reason);
  const enforced = enforcement(inForce, inForce ? selected(inForce.selector) : []);
  const conditions = updateConditions(
    meta.conditions,
    {
      set: [
        { type: row.type, status: row.status, reason: row.reason, message },
        enforced.condition,
      ],
    },
    kubeTime(input.now),
    meta.generation,
  );
  const sentence = (s: string) => s.replace(/[.\s]+$/, "");
  plan.status = {
    state: row.state,
    description: `${sentence(message)}. ${sentence(enforced.condition.message)}.`,
    ...(meta.generation !== undefined ? { observedGeneration: meta.generation } : {}),
    ...(enforcedGeneration !== undefined ? { enforcedGeneration } : {}),
    ...(enforced.podsSelected !== undefined
      ? { podsSelected: enforced.podsSelected, podsWithSidecar: enforced.podsWithSidecar }
      : {}),
    conditions,
  };
  // NotApplied repeats what Ready's own Event says. A RateLimit applied together with its
  // workload usually sees no Pod for a moment: that first NoPodSelected is news, not a drop in
  // enforcement, so it is a Normal Event; once Pods were counted, losing them all is a Warning.
  const firstLook = !meta.conditions.some((c) => c.type === ENFORCED_CONDITION);
  const warning = (c: { type: string; status: string; reason: string }) =>
    c.status === "False" && !(firstLook && c.reason === "NoPodSelected");
  plan.events = conditionEvents(meta.conditions, conditions, warning)
    .filter((e) => e.reason !== "NotApplied");
  return plan;
}
