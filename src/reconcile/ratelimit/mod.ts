/**
 * The RateLimit reconciler: a pure function from a RateLimit and what it needs of the cluster to a
 * Plan. A valid, unconflicted RateLimit gets its EnvoyFilter applied and state Ready. Anything else
 * gets state Error with a message naming the field and the rule, and keeps the EnvoyFilter of its
 * last good generation, if it has one that no older RateLimit claims: a bad update never removes
 * protection (docs/design.md). The filter on the cluster is the record of that generation (an
 * annotation names it, its patches hold its limits), so nothing here depends on memory of earlier
 * reconciles. Beside `Ready`, the `Enforced` condition and the Pod figures say whether the limit
 * in place reaches any proxy.
 *
 * One reconcile walks five rooms, each importing only those above it:
 *
 * ```
 * input.ts     what it reads: readMeta, isOurs (whose the filter is), filterLimits (the limits a
 *              filter holds, read from its patches), bucketRates
 * validate.ts  what a schema cannot check of a spec: validateSpec
 * render.ts    parseSpec (parse, validateSpec), renderSpec (renderEnvoyFilter, the size bound; a
 *              second renderer goes beside renderEnvoyFilter), the stats hint
 * scope.ts     where it reaches and whom it meets: reachOf, podSelection, patchContexts,
 *              olderConflicts
 * status.ts    judge (the verdict; per-client buckets refused while a selected proxy's Envoy
 *              refuses them), keep (the filter that stays), enforcement, acceptance,
 *              globalEnforcement (what the engine's Pods say they hold), the messages
 * mod.ts       reconcileRateLimit: the states table, the conditions, the Plan
 * ```
 *
 * Its path, in the order reconcileRateLimit calls: a room calls only rooms above it and is handed
 * no function of a room below (`Scope.selected` is scope.ts's own), so each call returns before
 * the next and no file is entered again while the path is inside it (bench/reconcile_path.ts
 * measures it; tests/bench/reconcile_path_test.ts keeps it so):
 *
 * ```
 * mod ─┬─ input   readMeta, isOurs
 *      ├─ scope   reachOf, podSelection
 *      ├─ status  judge ─┬─ render  parseSpec ── validate (an object not judged before)
 *      │                 ├─ scope   patchContexts (from the Pods the parsed spec selects)
 *      │                 ├─ render  renderSpec (with those contexts)
 *      │                 └─ scope   strayPods, olderOf, proxyEnvoys (per-client: which Envoy)
 *      ├─ status  inForceOf or keep ── scope, input filterLimits
 *      ├─ status  enforcement ── scope, render statsHint
 *      ├─ status  acceptance ── scope proxyEnvoys (the limit in force is per-client)
 *      ├─ status  globalEnforcement (the engine's Pods; the filter's engine lines, read by
 *      │          inForceOf through engine_config engineDomainOfFilter, rlconfigLines)
 *      ├─ input   bucketRates
 *      └─ ../conditions.ts  updateConditions, conditionEvents (which are problems: data)
 * ```
 */
import {
  acceptance,
  ACCEPTED_CONDITION,
  applyFailure,
  ENFORCED_CONDITION,
  enforcement,
  GLOBAL_ENFORCED_CONDITION,
  globalEnforcement,
  globalPartRendered,
  globalRates,
  type InForce,
  inForceOf,
  judge,
  keep,
  limitsText,
  refusal,
} from "./status.ts";
import { kubeTime } from "../../api/time.ts";
import type { Condition } from "../../api/common.ts";
import { conditionEvents, rowFor, type StateRow, updateConditions } from "../conditions.ts";
import type { Plan } from "../plan.ts";
import { podSelection, reachOf, type Scope, selectorText } from "./scope.ts";
import { renderedGeneration } from "./render.ts";
import { ISTIO_ROOT_NAMESPACE } from "../../api/mesh.ts";
import { at } from "../../api/json.ts";
import { bucketRates, filterRef, isOurs, type RateLimitInput, readMeta } from "./input.ts";

export type { RateLimitInput } from "./input.ts";

/** The condition type whose row decides a RateLimit's state. */
export const RATELIMIT_CONDITION = "Ready";

export {
  ACCEPTED_CONDITION,
  ACCEPTED_ROWS,
  DOMAIN_LOAD_BOUND_MS,
  ENFORCED_CONDITION,
  ENFORCED_ROWS,
  GLOBAL_ENFORCED_CONDITION,
  GLOBAL_ENFORCED_ROWS,
} from "./status.ts";

function rateLimitRow(
  no: number,
  status: "True" | "False",
  reason: string,
  meaning: string,
): StateRow {
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
  rateLimitRow(1, "True", "Applied", "The limits are applied"),
  rateLimitRow(
    2,
    "False",
    "InvalidSpec",
    "The spec is invalid; it is not applied (the last good generation stays enforced)",
  ),
  rateLimitRow(
    3,
    "False",
    "Conflict",
    "An older RateLimit selects the same pods, or the EnvoyFilter's name is taken; not applied",
  ),
  rateLimitRow(
    4,
    "False",
    "MeshMissing",
    "The service mesh (EnvoyFilter CRD) is not installed; the limit is not applied",
  ),
  rateLimitRow(
    5,
    "False",
    "ApplyFailed",
    "The API refused the EnvoyFilter; the new spec is not applied",
  ),
  rateLimitRow(
    6,
    "False",
    "MeshWide",
    "In the mesh's root namespace it selects Pods other than the ingress gateway, in any namespace; not applied",
  ),
  rateLimitRow(
    7,
    "False",
    "ProxyTooOld",
    "It has per-client buckets and a selected proxy runs an Envoy before 1.34, which refuses them; not applied (the last good generation stays enforced)",
  ),
  rateLimitRow(
    8,
    "False",
    "EngineNotInstalled",
    "It has only global limits and the rate limit engine is not installed and Ready; not applied (the last good generation stays enforced)",
  ),
  rateLimitRow(
    9,
    "False",
    "ProxyVersionUnknown",
    "It has per-client buckets and a selected proxy's Envoy is not known (istiod does not list it, its image tag gives no version); not applied until it is (the last good generation stays enforced)",
  ),
];

/** Where the message says a limit applies. */
function whereText(inForce: InForce): string {
  const gateway = inForce.contexts.length === 1 && inForce.contexts[0] === "GATEWAY";
  const sel = selectorText(inForce.selector);
  if (inForce.meshWide) return `ingress gateway Pods with ${sel} in every namespace`;
  return gateway ? "the ingress gateway" : `Pods with ${sel}`;
}

/** A full stop or what `\s` matches in a regular expression. */
const STOP_OR_SPACE = /[.\s]/;

/**
 * `s` without its trailing full stops and white space: `s.replace(/[.\s]+$/, "")`, which tries
 * the pattern at every position of a long message, where this reads from the end.
 */
function sentence(s: string): string {
  let end = s.length;
  while (end > 0 && STOP_OR_SPACE.test(s[end - 1])) end--;
  return end === s.length ? s : s.slice(0, end);
}

/**
 * The types of the conditions that report a problem (their Events are Warnings): every False one,
 * but NoPodSelected on the first look at enforcement (see `reconcileRateLimit`).
 */
function problemTypes(conditions: readonly Condition[], firstLook: boolean): string[] {
  const types: string[] = [];
  for (const c of conditions) {
    if (c.status === "False" && !(firstLook && c.reason === "NoPodSelected")) types.push(c.type);
  }
  return types;
}

/** The Plan for one RateLimit. Never throws; never writes the RateLimit's spec. */
export function reconcileRateLimit(input: RateLimitInput): Plan {
  const meta = readMeta(input.rateLimit, [
    RATELIMIT_CONDITION,
    ENFORCED_CONDITION,
    ACCEPTED_CONDITION,
    GLOBAL_ENFORCED_CONDITION,
  ]);
  const observed = input.envoyFilter;
  const ours = observed !== undefined && isOurs(observed, meta) ? observed : undefined;
  if (meta.deleting) {
    // The owner reference lets the garbage collector remove the filter; deleting it here as well
    // covers a filter without one.
    return { apply: [], delete: ours ? [filterRef(meta)] : [], events: [] };
  }
  const reach = reachOf(meta.namespace, input.meshRootNamespace ?? ISTIO_ROOT_NAMESPACE);
  const selected = podSelection(reach, input.pods);
  const scope: Scope = { meta, ours, reach, selected };
  const globalPart = globalPartRendered(input.globalEngine, ours);
  const verdict = judge(input, scope, globalPart);
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
        limitsText(spec, globalPart)
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
  const enforced = enforcement(inForce, inForce ? selected(inForce.selector) : [], {
    filters: input.otherFilters ?? [],
    root: input.meshRootNamespace ?? ISTIO_ROOT_NAMESPACE,
  });
  const accepted = acceptance(inForce, enforced.covered, input.proxies);
  const previousGlobal = meta.conditions.find((c) => c.type === GLOBAL_ENFORCED_CONDITION);
  const global = globalEnforcement(
    inForce,
    at(input.rateLimit, "spec", "global") !== undefined,
    input.globalEngine,
    globalPart,
    meta,
    { previous: previousGlobal, now: input.now, generation: meta.generation },
  );
  // A new wait for the engine counts from now: its start is the condition's transition time.
  const before = global?.restart
    ? meta.conditions.filter((c) => c.type !== GLOBAL_ENFORCED_CONDITION)
    : meta.conditions;
  const conditions = updateConditions(
    before,
    {
      set: [
        { type: row.type, status: row.status, reason: row.reason, message },
        enforced.condition,
        accepted.condition,
        ...(global ? [global.condition] : []),
      ],
      ...(global ? {} : { drop: [GLOBAL_ENFORCED_CONDITION] }),
    },
    kubeTime(input.now),
    meta.generation,
  );
  if (global?.requeueAfterMs !== undefined) plan.requeueAfterMs = global.requeueAfterMs;
  plan.status = {
    state: row.state,
    description: `${sentence(message)}. ${sentence(enforced.condition.message)}.`,
    ...(meta.generation !== undefined ? { observedGeneration: meta.generation } : {}),
    ...(enforcedGeneration !== undefined ? { enforcedGeneration } : {}),
    ...(enforced.podsSelected !== undefined
      ? { podsSelected: enforced.podsSelected, podsWithSidecar: enforced.podsWithSidecar }
      : {}),
    ...(inForce?.limits
      ? {
        mode: inForce.limits.shadow ? "Shadow" : "Enforcing",
        rates: [
          ...bucketRates(inForce.limits, enforced.podsWithSidecar ?? 0),
          ...globalRates(inForce.engine),
        ],
      }
      : {}),
    ...(accepted.proxies ? { proxies: accepted.proxies } : {}),
    conditions,
  };
  // NotApplied repeats what Ready's own Event says. A RateLimit applied together with its
  // workload usually sees no Pod for a moment: that first NoPodSelected is news, not a drop in
  // enforcement, so it is a Normal Event; once Pods were counted, losing them all is a Warning.
  const firstLook = !meta.conditions.some((c) => c.type === ENFORCED_CONDITION);
  // What the proxies accepted makes an Event when it is known (True or False): not while it is
  // Unknown, which every update passes through and an operator that does not ask istiod stays in.
  const unknownAccepted = accepted.condition.status === "Unknown"
    ? accepted.condition.reason
    : undefined;
  // The same for the global part: every edit passes through Unknown DomainNotLoaded.
  const unknownGlobal = global?.condition.status === "Unknown"
    ? global.condition.reason
    : undefined;
  plan.events = conditionEvents(meta.conditions, conditions, {
    now: problemTypes(conditions, firstLook),
    before: problemTypes(meta.conditions, firstLook),
  }).filter((e) =>
    e.reason !== "NotApplied" && e.reason !== unknownAccepted && e.reason !== unknownGlobal
  );
  return plan;
}
