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
import { renderedGeneration } from "./ratelimit/envoyfilter.ts";
import { ISTIO_ROOT_NAMESPACE } from "../api/mesh.ts";
import {
  filterContexts,
  meshWideProblem,
  patchContexts,
  podsInReach,
  type Reach,
  reachOf,
  strayPods,
} from "./ratelimit/reach.ts";
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
  stateRow(
    6,
    "False",
    "MeshWide",
    "In the mesh's root namespace it selects Pods other than the ingress gateway, in any namespace; not applied",
  ),
];

/** Everything a RateLimit's reconcile reads. */
export interface RateLimitInput {
  /** The RateLimit as stored: any shape; it is parsed here. */
  rateLimit: unknown;
  /**
   * Other RateLimits: at least every one whose selector, or whose kept EnvoyFilter's, can select
   * the same Pods as its spec's or its kept filter's selector: those of its namespace, and across
   * the mesh's root namespace those sharing a gateway Pod (others are ignored; it may be among
   * them and is skipped by namespace and name).
   */
  peers: readonly unknown[];
  /**
   * Pods it may reach: at least every Pod its spec's selector or its EnvoyFilter's selector
   * selects in its namespace, or in every namespace when it is in the root namespace (Pods out of
   * its reach are ignored).
   */
  pods: readonly unknown[];
  /** The EnvoyFilter of the same namespace and name, if one exists. */
  envoyFilter?: KubeObject;
  /** The EnvoyFilter named like a peer, if one exists: the Pods a peer's kept filter holds. */
  peerFilter?: (namespace: string, name: string) => KubeObject | undefined;
  /**
   * The mesh's config root namespace, whose EnvoyFilters reach every namespace (default Istio's,
   * `istio-system`).
   */
  meshRootNamespace?: string;
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
  | { reason: "InvalidSpec" | "MeshMissing" | "Conflict" | "MeshWide"; problems: string[] }
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
  return (namespace: string, name: string): Record<string, string> | undefined => {
    const ef = input.peerFilter?.(namespace, name);
    return ef && isOurs(ef, { name }) ? filterSelector(ef) : undefined;
  };
}

/** What judging and keeping read besides the input: where the filter reaches, and its Pods. */
interface Scope {
  meta: Meta;
  /** Our EnvoyFilter as observed, if it is ours. */
  ours: KubeObject | undefined;
  reach: Reach;
  selected: Selection;
}

/** The older RateLimits that select the same Pods with `selector`, as keys (`ns/name`). */
function olderOf(input: RateLimitInput, scope: Scope, selector: Record<string, string>): string[] {
  const { meta, reach, selected } = scope;
  const self = {
    namespace: meta.namespace,
    name: meta.name,
    creationTimestamp: creationOf(input.rateLimit),
    selector,
  };
  return olderConflicts(
    self,
    input.peers,
    selected(selector),
    enforcedOf(input),
    reach.rootNamespace,
  );
}

function judge(input: RateLimitInput, scope: Scope): Verdict {
  const { meta, ours, reach, selected } = scope;
  const raw = input.rateLimit;
  const held = ours ? filterContexts(ours) : undefined;
  const spec = judgeSpec(raw, meta.namespace, {
    contexts: (selector) => patchContexts(selected(selector), selector, reach, held),
    maxBytes: input.maxFilterBytes,
  });
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
  const strays = strayPods(reach, selected(rl.spec.selectorLabels));
  if (strays.length > 0) {
    return {
      reason: "MeshWide",
      problems: [meshWideProblem(reach, rl.spec.selectorLabels, strays)],
    };
  }
  const older = olderOf(input, scope, rl.spec.selectorLabels);
  if (older.length > 0) {
    return {
      reason: "Conflict",
      problems: [
        `spec.selectorLabels ${
          selectorText(rl.spec.selectorLabels)
        } selects the same pods as the older RateLimit ${
          namesText(older)
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

function keep(input: RateLimitInput, scope: Scope): Kept {
  const { ours, reach, selected } = scope;
  if (!ours) return undefined;
  const selector = filterSelector(ours);
  if (!selector) return { withdrawn: "its workload selector is unreadable" };
  if (strayPods(reach, selected(selector)).length > 0) {
    return {
      withdrawn:
        "it reaches Pods that are not ingress gateways, and in the mesh's root namespace it would apply to them in every namespace",
    };
  }
  const older = olderOf(input, scope, selector);
  if (older.length > 0) {
    return { withdrawn: `the older RateLimit ${namesText(older)} selects the same pods` };
  }
  return { filter: ours, inForce: inForceOf(reach, selector, ours) };
}

function inForceOf(reach: Reach, selector: Record<string, string>, filter: KubeObject): InForce {
  return {
    namespace: reach.namespace,
    selector,
    contexts: filterContexts(filter),
    meshWide: reach.meshWide,
  };
}

/** Where the message says a limit applies. */
function whereText(inForce: InForce): string {
  const gateway = inForce.contexts.length === 1 && inForce.contexts[0] === "GATEWAY";
  const sel = selectorText(inForce.selector);
  if (inForce.meshWide) return `ingress gateway Pods with ${sel} in every namespace`;
  return gateway ? "the ingress gateway" : `Pods with ${sel}`;
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
  const reach = reachOf(meta.namespace, input.meshRootNamespace ?? ISTIO_ROOT_NAMESPACE);
  const selected = podSelection(podsInReach(reach, input.pods));
  const scope: Scope = { meta, ours, reach, selected };
  const verdict = judge(input, scope);
  let message: string;
  let inForce: InForce | undefined;
  let enforcedGeneration: number | undefined;
  const plan: Plan = { apply: [], delete: [], events: [] };
  if ("desired" in verdict) {
    plan.apply.push(verdict.desired);
    const { spec } = verdict.rl;
    if (verdict.reason === "Applied") {
      inForce = inForceOf(reach, spec.selectorLabels, verdict.desired);
      enforcedGeneration = meta.generation;
      message = `${
        meta.generation === undefined ? "Limits" : `Limits of generation ${meta.generation}`
      } applied to ${whereText(inForce)} by EnvoyFilter ${meta.namespace}/${meta.name}: ${
        limitsText(spec)
      }`;
    } else {
      // The filter in place, if any, is what the failed apply would have replaced.
      const k = keep(input, scope);
      inForce = k && "filter" in k ? k.inForce : undefined;
      enforcedGeneration = ours ? renderedGeneration(ours) : undefined;
      message = applyFailure(verdict.problems ?? [], ours);
    }
  } else {
    const kept = verdict.reason === "MeshMissing" ? undefined : keep(input, scope);
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
