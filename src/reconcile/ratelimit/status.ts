/**
 * What the reconcile says: the verdict on the current generation (why it cannot be applied, or
 * what applying it takes), which filter may stay for a refused one, whether the limit in place
 * reaches a proxy (`Enforced`), and the messages.
 */
import { contextOf, type ProxyContext } from "../../api/mesh.ts";
import { fitMessage, joinWithin } from "../../api/message.ts";
import { selects } from "../../api/selector.ts";
import { inAmbientMesh, isActivePod, meshProxyOf, podName, podNamespace } from "../../api/pod.ts";
import type { ConditionInput } from "../conditions.ts";
import {
  filterContexts,
  meshWideProblem,
  namedList,
  olderOf,
  patchContexts,
  plural,
  podLabelsOf,
  proxyEnvoys,
  type Reach,
  type Scope,
  selectorText,
  strayPods,
} from "./scope.ts";
import {
  type BucketRate,
  type EngineObservation,
  type EnginePod,
  type FilterLimits,
  filterLimits,
  filterSelector,
  isOtherRateLimitFilter,
  type ProxyObservation,
  rateLimitFilterPatches,
  type RateLimitInput,
} from "./input.ts";
import { engineDomainOfFilter, rlconfigLines } from "./engine_config.ts";
import { parseRlconfigLine } from "../../api/engine_status.ts";
import type { Condition } from "../../api/common.ts";
import {
  exportsLimitStats,
  parseSpec,
  renderedGeneration,
  renderSpec,
  statsHint,
} from "./render.ts";
import {
  ENGINE_DOMAIN_ANNOTATION,
  GLOBAL_ENGINE_SERVICE,
  globalDomain,
} from "../../api/global_engine.ts";
import type { RateLimit, RateLimitSpec } from "../../api/ratelimit.ts";
import type { KubeObject } from "../../api/object.ts";
import type { HeldLimits } from "../../api/istiod.ts";
import { PER_CLIENT_NEEDS } from "../../api/envoy.ts";

// Whether the limit in place bites (docs/design.md: `Ready` says the filter is stored; this says beside
// it whether any proxy applies it). An EnvoyFilter reaches only Pods with a mesh proxy, so the
// figures are the Pods the enforced selector selects and how many of them have a sidecar, and the
// `Enforced` condition is False, with a reason a user can act on, when the limit protects nothing
// or leaves some Pods out. Every figure comes from the observed Pods: the same Pods give the same
// status, so nothing is written at rest.

/** The condition type that reports enforcement. */
export const ENFORCED_CONDITION = "Enforced";

/** A reason of the Enforced condition and what it means, as data (a test walks it). */
export interface EnforcedRow {
  status: "True" | "False";
  reason: string;
  meaning: string;
}

/** Every Enforced condition the operator writes. */
export const ENFORCED_ROWS: readonly EnforcedRow[] = [
  {
    status: "True",
    reason: "Enforced",
    meaning: "Every selected Pod has a mesh sidecar: the limit applies to all of them",
  },
  {
    status: "False",
    reason: "SidecarMissing",
    meaning: "Some selected Pods have no mesh sidecar: their requests are not limited",
  },
  {
    status: "False",
    reason: "NoPodSelected",
    meaning: "No Pod is selected: the limit protects nothing yet",
  },
  {
    status: "False",
    reason: "ProxyMismatch",
    meaning:
      "Some selected Pods run another kind of proxy (a gateway's router, or a sidecar) than the filter patches: their requests are not limited",
  },
  { status: "False", reason: "NotApplied", meaning: "No limit is in place" },
];

/** The limit in place: which Pods its filter selects, where, and which proxies take it. */
export interface InForce {
  namespace: string;
  selector: Readonly<Record<string, string>>;
  /** The patch contexts its filter uses: only proxies applying one of them take it. */
  contexts: readonly ProxyContext[];
  /** True in the mesh's root namespace: the filter reaches Pods of every namespace. */
  meshWide: boolean;
  /** What its filter enforces (mode, buckets); undefined when the filter cannot be read. */
  limits?: FilterLimits;
  /**
   * With a global part: the lines the engine's `/rlconfig` prints once it holds the filter's
   * domain as the filter carries it (`engineLinesOf`), or why they cannot be read.
   */
  engine?: EngineLines;
}

/** The figures and the condition of enforcement. */
export interface Enforcement {
  condition: ConditionInput;
  /** Absent when no limit is in place. */
  podsSelected?: number;
  podsWithSidecar?: number;
  /** The selected Pods whose proxy takes the filter (`podsWithSidecar` of them). */
  covered: readonly unknown[];
}

/**
 * Enforcement of `inForce` over `pods` (any Pods; those of other namespaces, finished or being
 * deleted, or not selected are skipped), or NotApplied when no limit is in place.
 */
export function enforcement(
  inForce: InForce | undefined,
  pods: readonly unknown[],
  others: { filters: readonly KubeObject[]; root: string } = { filters: [], root: "" },
): Enforcement {
  const condition = (reason: string, message: string): ConditionInput => {
    const row = ENFORCED_ROWS.find((r) => r.reason === reason)!;
    return { type: ENFORCED_CONDITION, status: row.status, reason, message };
  };
  if (!inForce) {
    return {
      condition: condition("NotApplied", "No limit is in place, so no Pod is protected"),
      covered: [],
    };
  }
  const selected: unknown[] = [];
  for (const pod of pods) {
    const labels = podLabelsOf(pod);
    const ns = podNamespace(pod);
    if (labels === undefined || !isActivePod(pod)) continue;
    if (!inForce.meshWide && ns !== inForce.namespace) continue;
    if (selects(inForce.selector, labels)) selected.push(pod);
  }
  const nameOf = (p: unknown) => inForce.meshWide ? `${podNamespace(p)}/${podName(p)}` : podName(p);
  const without: string[] = [];
  const ambient: string[] = [];
  const mismatched: string[] = [];
  const covered: unknown[] = [];
  for (const p of selected) {
    const proxy = meshProxyOf(p);
    if (proxy === undefined) {
      without.push(nameOf(p));
      if (inAmbientMesh(p)) ambient.push(nameOf(p));
    } else if (!inForce.contexts.includes(contextOf(proxy))) mismatched.push(nameOf(p));
    else covered.push(p);
  }
  without.sort();
  ambient.sort();
  mismatched.sort();
  const figures = {
    podsSelected: selected.length,
    podsWithSidecar: covered.length,
    covered,
  };
  const sel = selectorText(inForce.selector);
  const gateway = inForce.contexts.length === 1 && inForce.contexts[0] === "GATEWAY";
  const noun = `${gateway ? "ingress gateway " : ""}Pod`;
  const where = inForce.meshWide ? "any namespace" : `namespace ${inForce.namespace}`;
  if (selected.length === 0) {
    const message = gateway
      ? `No ingress gateway Pod (${sel} in ${where}) exists, so the limit protects nothing yet`
      : `No Pod in ${where} has ${sel}, so the limit protects nothing yet; check spec.selectorLabels against the workload's Pod labels`;
    return { condition: condition("NoPodSelected", message), ...figures };
  }
  if (without.length > 0) {
    const one = without.length === 1;
    // Istio's ambient mode carries a Pod's traffic through the node's ztunnel, which no
    // EnvoyFilter reaches; a Pod with a sidecar is taken out of it (istio-cni's enablement).
    const inAmbient = ambient.length === 0
      ? ""
      : `; ${
        ambient.length === without.length
          ? one ? "it is" : "they are"
          : `${ambient.length} of them (${namedList(ambient)}) ${
            ambient.length === 1 ? "is" : "are"
          }`
      } in Istio's ambient mode, whose ztunnel an EnvoyFilter does not reach`;
    const message = `${without.length} of ${
      plural(selected.length, noun, `${noun}s`)
    } with ${sel} ${one ? "has" : "have"} no mesh sidecar, so ${
      one ? "its" : "their"
    } requests are not limited: ${namedList(without)}${inAmbient}; enable sidecar injection for ${
      one ? "it" : "them"
    } (e.g. namespace label istio-injection=enabled${
      inAmbient ? "; a Pod with a sidecar leaves ambient mode" : ""
    }) and restart ${one ? "it" : "them"}`;
    return { condition: condition("SidecarMissing", message), ...figures };
  }
  if (mismatched.length > 0) {
    const one = mismatched.length === 1;
    const patched = gateway ? "a gateway's (GATEWAY)" : "a sidecar's (SIDECAR_INBOUND)";
    const message = `${mismatched.length} of ${
      plural(selected.length, noun, `${noun}s`)
    } with ${sel} ${one ? "runs" : "run"} a proxy that does not apply ${patched} patches, so ${
      one ? "its" : "their"
    } requests are not limited: ${namedList(mismatched)}`;
    return { condition: condition("ProxyMismatch", message), ...figures };
  }
  const has = gateway ? "runs the gateway's proxy" : "has a mesh sidecar";
  const hidden = selected.filter((p) => !exportsLimitStats(p)).map(nameOf).sort();
  const message =
    (selected.length === 1
      ? `Enforced on the one ${noun} with ${sel}, which ${has}`
      : `Enforced on all ${selected.length} ${noun}s with ${sel}: each ${has}`) +
    statsHint(hidden.length, selected.length, namedList(hidden)) +
    otherFiltersHint(covered, others.filters, others.root);
  return { condition: condition("Enforced", message), ...figures };
}

/**
 * EnvoyFilters not this operator's that patch a rate limit filter into a proxy of `covered`
 * (`namespace/name`, sorted): each reaches a Pod of its own namespace, or any when it is in the
 * mesh's `root` namespace, that its workload selector (none: every Pod) selects, through a patch
 * of that Pod's proxy context (or of any).
 */
export function otherFiltersOn(
  covered: readonly unknown[],
  filters: readonly KubeObject[],
  root: string,
): string[] {
  const out = new Set<string>();
  for (const f of filters) {
    if (!isOtherRateLimitFilter(f)) continue;
    const ns = f.metadata.namespace;
    const selector = filterSelector(f);
    const contexts = rateLimitFilterPatches(f).map((p) => p.context);
    const reaches = covered.some((p) => {
      const proxy = meshProxyOf(p);
      const labels = podLabelsOf(p);
      return proxy !== undefined && labels !== undefined &&
        (ns === podNamespace(p) || ns === root) &&
        (selector === undefined || selects(selector, labels)) &&
        contexts.some((c) => c === undefined || c === "ANY" || c === contextOf(proxy));
    });
    if (reaches) out.add(`${ns}/${f.metadata.name}`);
  }
  return [...out].sort();
}

/** What another rate limit filter on the same proxies does, for the Enforced message. */
function otherFiltersHint(
  covered: readonly unknown[],
  filters: readonly KubeObject[],
  root: string,
): string {
  const found = otherFiltersOn(covered, filters, root);
  if (found.length === 0) return "";
  const one = found.length === 1;
  const them = one ? "that filter" : "those filters";
  return `; ${one ? "EnvoyFilter" : "EnvoyFilters"} ${namedList(found)}, not this operator's, ${
    one ? "patches" : "patch"
  } a rate limit filter into the same proxies: a request passes both, which gives limits neither sets (remove ${them} or this RateLimit)`;
}

// Whether the proxies took the limit in place (`Accepted`): what istiod says of each selected
// Pod's proxy (src/api/istiod.ts), never assumed. True only when every proxy that takes the filter
// acknowledged the push it holds and istiod's dump of that push shows the limit in force, confirmed
// by a later answer (a later push still under way does not change what it holds); False when one rejected what istiod sent it (Envoy keeps its previous config,
// which may not hold this limit); Unknown, with the reason, in every other case.

/** The condition type that reports what the proxies accepted. */
export const ACCEPTED_CONDITION = "Accepted";

/** A reason of the Accepted condition and what it means, as data (a test walks it). */
export interface AcceptedRow {
  status: "True" | "False" | "Unknown";
  reason: string;
  meaning: string;
}

/** Every Accepted condition the operator writes. */
export const ACCEPTED_ROWS: readonly AcceptedRow[] = [
  {
    status: "True",
    reason: "Accepted",
    meaning:
      "Every selected proxy acknowledged the config istiod sent it, and istiod shows the limit in force in it",
  },
  {
    status: "False",
    reason: "ProxyTooOld",
    meaning:
      "The limit in force has per-client buckets and a selected proxy runs an Istio older than 1.26 (istiod says so, or its image while istiod does not list it), whose Envoy (before 1.34) refuses them: it rejects the config and keeps its previous one, which does not hold this limit",
  },
  {
    status: "False",
    reason: "ProxyRejected",
    meaning:
      "A selected proxy rejected the config istiod sent it: it keeps its previous config, which may not hold this limit",
  },
  {
    status: "Unknown",
    reason: "Pending",
    meaning:
      "Some selected proxies are not connected to istiod, have not acknowledged its last push, or hold an earlier limit yet",
  },
  {
    status: "Unknown",
    reason: "NotVerifiable",
    meaning:
      "istiod does not let the operator read what the proxies hold (a token of istiod's root namespace is needed)",
  },
  {
    status: "Unknown",
    reason: "IstiodUnavailable",
    meaning: "istiod could not be asked: unreachable, the token refused, or no answer yet",
  },
  {
    status: "Unknown",
    reason: "IstiodNotAsked",
    meaning:
      "The operator does not ask istiod (--istiod-service or --istiod-url), so what the proxies hold is not known",
  },
  {
    status: "Unknown",
    reason: "NoProxySelected",
    meaning: "No selected Pod runs a proxy that takes the limit",
  },
  { status: "Unknown", reason: "NotApplied", meaning: "No limit is in place" },
];

/** The proxies of the selected Pods, by where they stand (status.proxies). */
export interface ProxyCounts {
  accepted: number;
  rejected: number;
  pending: number;
  notConnected: number;
}

/** The Accepted condition and, when istiod answered, the counts. */
export interface Acceptance {
  condition: ConditionInput;
  proxies?: ProxyCounts;
}

/**
 * True when a proxy holds exactly `limits` of ours, as one config: the same route digest
 * (input.ts `FilterLimits.digest`: which render of which RateLimit its routes got, so an edit
 * that keeps the buckets but changes what they match is not taken for held before it is), and
 * the same mode and buckets. A route without a digest does not hold a filter that has one (every
 * filter this operator writes has one; a dump without is of an older operator's filter); only
 * when the filter in force has none either (written by an older operator, not yet rendered
 * again) are mode and buckets all there is to compare.
 */
function holdsExactly(held: readonly HeldLimits[], limits: FilterLimits): boolean {
  if (held.length !== 1) return false;
  const h = held[0];
  return h.digest === limits.digest && h.shadow === limits.shadow &&
    h.buckets.length === limits.buckets.length &&
    h.buckets.every((b, i) => {
      const l = limits.buckets[i];
      return b.maxTokens === l.maxTokens && b.tokensPerFill === l.tokensPerFill &&
        b.fillInterval === l.fillInterval;
    });
}

/**
 * What the proxies of `covered` (the selected Pods whose proxy takes the filter) say of the limit
 * in force, from `observed` (undefined: the operator does not ask istiod).
 */
export function acceptance(
  inForce: InForce | undefined,
  covered: readonly unknown[],
  observed: ProxyObservation | undefined,
): Acceptance {
  const condition = (reason: string, message: string): ConditionInput => {
    const row = ACCEPTED_ROWS.find((r) => r.reason === reason)!;
    return { type: ACCEPTED_CONDITION, status: row.status, reason, message };
  };
  if (!inForce) return { condition: condition("NotApplied", "No limit is in place") };
  const perClient = inForce.limits?.perClient === true;
  if (!observed) {
    return {
      condition: condition(
        "IstiodNotAsked",
        `The operator does not ask istiod (--istiod-service or --istiod-url), so whether the proxies accepted the limit is not known${
          perClient
            ? `, nor which Envoy they run: its per-client buckets need ${PER_CLIENT_NEEDS}`
            : ""
        }`,
      ),
    };
  }
  const istiod = observed.istiod;
  if (!istiod || !istiod.reachable) {
    return {
      condition: condition(
        "IstiodUnavailable",
        istiod
          ? `istiod could not be asked (${istiod.reason}): ${istiod.message}`
          : "No answer from istiod yet",
      ),
    };
  }
  if (covered.length === 0) {
    return {
      condition: condition("NoProxySelected", "No selected Pod runs a proxy that takes the limit"),
      proxies: { accepted: 0, rejected: 0, pending: 0, notConnected: 0 },
    };
  }
  const nameOf = (p: unknown) => inForce.meshWide ? `${podNamespace(p)}/${podName(p)}` : podName(p);
  // Per-client buckets reach only proxies whose Envoy has dynamic descriptors (1.34 and later).
  const envoys = perClient ? proxyEnvoys(covered, observed, inForce.meshWide) : undefined;
  const rejected: string[] = [];
  const notConnected: string[] = [];
  const pending: string[] = [];
  const unverifiable: string[] = [];
  const other: string[] = [];
  let accepted = 0;
  let firstRejection = "";
  let firstRefusal = "";
  for (const p of covered) {
    const s = observed.byPod.get(`${podNamespace(p)}/${podName(p)}`);
    if (!s) {
      notConnected.push(nameOf(p));
      continue;
    }
    const v = s.verdict;
    if (v.state === "Rejected") {
      rejected.push(nameOf(p));
      firstRejection ||= `${nameOf(p)} rejected the ${v.type} istiod sent it: ${v.error}`;
    } else if (!s.held || (v.state === "Pending" && "error" in s.held)) pending.push(nameOf(p));
    else if ("error" in s.held) {
      unverifiable.push(nameOf(p));
      firstRefusal ||= `${s.held.error}: ${s.held.message}`;
    } else if (!holdsExactly(s.held.limits, inForce.limits ?? { shadow: false, buckets: [] })) {
      (v.state === "Pending" ? pending : other).push(nameOf(p));
    } else if (!s.held.confirmed) pending.push(nameOf(p));
    // Acknowledged, or a push under way (of someone else's change: Envoy keeps what it holds
    // until it acknowledges or rejects, and what it holds is this limit).
    else accepted++;
  }
  const proxies: ProxyCounts = {
    accepted,
    rejected: rejected.length,
    pending: pending.length + unverifiable.length + other.length,
    notConnected: notConnected.length,
  };
  const total = covered.length;
  const of = (n: number) => `${n} of ${plural(total, "proxy", "proxies")}`;
  if (envoys && envoys.tooOld.length > 0) {
    const n = envoys.tooOld.length;
    const others = rejected.length > 0
      ? `; ${of(rejected.length)} rejected the config istiod sent`
      : "";
    return {
      condition: condition(
        "ProxyTooOld",
        `${of(n)} ${
          n === 1 ? "runs" : "run"
        } an Envoy that refuses the per-client buckets of the limit in force (they need ${PER_CLIENT_NEEDS}): ${
          namedList(envoys.tooOld)
        }; such a proxy rejects the config and keeps its previous one, which does not hold this limit: upgrade ${
          n === 1 ? "it" : "them"
        }${others}`,
      ),
      proxies,
    };
  }
  if (rejected.length > 0) {
    const more = rejected.length > 1
      ? ` (and ${rejected.length - 1} more: ${namedList(rejected.slice(1))})`
      : "";
    return {
      condition: condition(
        "ProxyRejected",
        `${
          of(rejected.length)
        } rejected the config istiod sent: ${firstRejection}${more}; such a proxy keeps its previous config, which may not hold this limit (another EnvoyFilter on the same workload can make the listener invalid)`,
      ),
      proxies,
    };
  }
  if (unverifiable.length > 0) {
    return {
      condition: condition(
        "NotVerifiable",
        `istiod does not show the operator what ${
          of(unverifiable.length)
        } hold (${firstRefusal}): give the operator a token of istiod's root namespace`,
      ),
      proxies,
    };
  }
  if (notConnected.length + pending.length + other.length > 0) {
    const parts = [
      notConnected.length > 0 ? `not connected to istiod: ${namedList(notConnected)}` : "",
      pending.length > 0 ? `not yet acknowledged: ${namedList(pending)}` : "",
      other.length > 0 ? `holding another limit than the one in force: ${namedList(other)}` : "",
      // Whether they can take per-client buckets is not known either: say so, do not assume.
      envoys && envoys.unknown.length > 0
        ? `per-client buckets need ${PER_CLIENT_NEEDS}, and neither istiod nor the proxy image says which Envoy runs in ${
          namedList(envoys.unknown)
        }`
        : "",
    ].filter((x) => x);
    return {
      condition: condition(
        "Pending",
        `${of(notConnected.length + pending.length + other.length)} have not taken the limit yet; ${
          parts.join("; ")
        }`,
      ),
      proxies,
    };
  }
  return {
    condition: condition(
      "Accepted",
      total === 1
        ? "The one proxy acknowledged the config holding the limit in force"
        : `All ${total} proxies acknowledged the config holding the limit in force`,
    ),
    proxies,
  };
}

// The words of a RateLimit's Ready condition: what is wrong with the current generation (the field
// and the rule come from validation), what stays in force instead, and what a good one enforces.
// Lists of problems and of names are cut to fit the CRD's limit on a message, counting the rest.

/** Our filter, kept for a refused generation, or why it had to go; undefined: there was none. */
export type LastGood = { filter: KubeObject; inForce: InForce } | { withdrawn: string } | undefined;

/** The most characters a list of RateLimit names takes in a message. */
const NAMES_MAX = 1024;

function generationText(g: number | undefined): string {
  return g === undefined ? "the new spec" : `generation ${g}`;
}

/** "ns/a, ns/b": RateLimits by namespace/name, cut with a count when there are many. */
export function namesText(keys: readonly string[]): string {
  return joinWithin(keys, NAMES_MAX, {
    separator: ", ",
    noun: "RateLimits",
  });
}

/** "generation 2 still enforced by EnvoyFilter ns/name". */
export function keptText(filter: KubeObject): string {
  const g = renderedGeneration(filter);
  const which = g === undefined ? "an earlier generation" : `generation ${g}`;
  return `${which} still enforced by EnvoyFilter ${filter.metadata.namespace}/${filter.metadata.name}`;
}

/** What the Ready condition says of a refusal, given what stays in force. */
export function refusal(
  reason: string,
  problems: readonly string[],
  generation: number | undefined,
  kept: LastGood,
): string {
  if (reason === "MeshMissing") return fitMessage("", problems);
  const gen = generationText(generation);
  if (kept === undefined) {
    return reason === "InvalidSpec"
      ? fitMessage("Invalid spec, limit not applied: ", problems)
      : fitMessage("", problems, "; this one is not applied");
  }
  const rest = "withdrawn" in kept
    ? `the limit of an earlier generation was withdrawn because ${kept.withdrawn}; limit not applied`
    : keptText(kept.filter);
  return reason === "InvalidSpec"
    ? fitMessage(`Invalid spec, ${gen} rejected: `, problems, `; ${rest}`)
    : fitMessage("", problems, `, so ${gen} is not applied; ${rest}`);
}

/** What a failed apply says: the API server's answer, and what stays in force. */
export function applyFailure(problems: readonly string[], ours: KubeObject | undefined): string {
  return fitMessage("", problems, `; ${ours ? keptText(ours) : "limit not applied"}`);
}

/**
 * What a spec enforces, in short: the default bucket and the number of rules; and its global
 * rules when `global` says they are rendered, or that they wait for the engine.
 */
export function limitsText(spec: RateLimitSpec, global: boolean): string {
  const shadow = spec.enforce ? "" : "in shadow mode (counts, rejects nothing), ";
  const parts: string[] = [];
  if (spec.local) {
    const d = spec.local.defaultBucket;
    const rules = spec.local.buckets.length;
    parts.push(
      `default bucket ${d.maxTokens} tokens, ${d.tokensPerFill} added every ${d.fillInterval}${
        rules > 0 ? `; ${rules} rule bucket${rules === 1 ? "" : "s"}` : ""
      }`,
    );
  }
  const g = spec.global;
  if (g && global) {
    const rules = g.rules?.length ?? 0;
    const d = g.default?.limit;
    parts.push(
      `global ${
        [
          rules > 0 ? `${rules} rule${rules === 1 ? "" : "s"}` : "",
          d ? `default ${d.requests} a ${d.unit.toLowerCase()}` : "",
        ].filter((x) => x).join(", ")
      }, failure mode ${g.failureMode}`,
    );
  } else if (g) parts.push("the global limits wait for the engine (see GlobalEnforced)");
  return shadow + parts.join("; ");
}

// Whether the global part is enforced (`GlobalEnforced`, only for a RateLimit with spec.global or
// a global part in place), read back from the engine's Pods (src/api/engine_status.ts), never
// assumed. The global filter goes into the EnvoyFilter once an engine Pod is seen Ready: a filter
// asking an engine that is not there fails every request's call (refused with 500 under
// failureMode Deny). Once in place it stays while the engine is installed, Ready or not, so that a
// Redis or engine outage applies the failure mode the RateLimit chose (and rewrites no filter);
// it goes when the engine is gone (no Pod, or the operator no longer runs it).

/** The condition type that reports the global part. */
export const GLOBAL_ENFORCED_CONDITION = "GlobalEnforced";

/**
 * How long an engine Ready may go without the domain in force before DomainNotLoaded turns False:
 * an engine loads a push within milliseconds (docs/global-engine.md), and the poller reads it
 * back within a second of the push; an engine that reconnects to the operator takes up to its
 * xDS backoff (1 s) more.
 */
export const DOMAIN_LOAD_BOUND_MS = 30_000;

/** Every GlobalEnforced condition the operator writes. */
export const GLOBAL_ENFORCED_ROWS: readonly AcceptedRow[] = [
  {
    status: "True",
    reason: "Enforced",
    meaning:
      "Every Ready engine Pod has loaded exactly this RateLimit's domain as in force and reaches Redis, as each says (its /rlconfig and /healthcheck)",
  },
  {
    status: "False",
    reason: "EngineNotInstalled",
    meaning:
      "The operator does not run the rate limit engine, or the engine has no Pod: the global filter is left out of the EnvoyFilter (or, in place, every call fails and the failure mode applies)",
  },
  {
    status: "False",
    reason: "EngineNotReady",
    meaning:
      "The engine has Pods but none is Ready: a global part already in place applies its failure mode; one not yet in place waits",
  },
  {
    status: "False",
    reason: "RedisUnreachable",
    meaning:
      "An engine Pod cannot reach Redis (its /healthcheck fails): the calls it takes fail and the failure mode applies",
  },
  {
    status: "Unknown",
    reason: "DomainNotLoaded",
    meaning:
      "A Ready engine Pod does not hold this domain as in force yet (a push under way): it admits the domain's requests without counting them",
  },
  {
    status: "False",
    reason: "DomainNotLoaded",
    meaning:
      "A Ready engine Pod has not held this domain as in force for 30 s: it admits the domain's requests without counting them",
  },
  {
    status: "Unknown",
    reason: "EngineNotVerified",
    meaning:
      "The operator cannot read back what the engine holds: its Pods not read yet or not listed, a Pod not answering, or the filter's engine configuration unreadable",
  },
  {
    status: "False",
    reason: "NotApplied",
    meaning:
      "This generation is not applied (see Ready), and the limit in place has no global part",
  },
];

/**
 * Whether the current generation renders the global part: once some engine Pod is Ready; or, when
 * `ours` (our filter in place) holds it already, as long as the engine is not known to be gone.
 */
export function globalPartRendered(
  engine: EngineObservation | undefined,
  ours: KubeObject | undefined,
): boolean {
  if (!engine) return false;
  if (engine.pods.some((p) => p.ready)) return true;
  if (!ours || filterLimits(ours)?.global === undefined) return false;
  return !(engine.listing?.listed === true && engine.pods.length === 0);
}

/** Why the global part is not rendered, for the Ready message of a global-only RateLimit. */
export function engineAbsence(engine: EngineObservation | undefined): string {
  if (!engine) return "the operator does not run the rate limit engine (--global-redis-secret)";
  if (!engine.listing) return "the rate limit engine's Pods have not been read yet";
  if (!engine.listing.listed) {
    return `the rate limit engine's Pods cannot be listed (${engine.listing.message})`;
  }
  if (engine.pods.length === 0) {
    return `the rate limit engine has no Pod in namespace ${GLOBAL_ENGINE_SERVICE.namespace}`;
  }
  return `no rate limit engine Pod is Ready (${namedList(engine.pods.map((p) => p.name))})`;
}

/** What the expected engine lines of a filter in place are: `rlconfigLines` of its annotation. */
export type EngineLines = { lines: readonly string[] } | { problem: string };

/** The engine lines a filter carries (engine_config.ts), or why they cannot be read. */
export function engineLinesOf(filter: KubeObject): EngineLines {
  const problems: string[] = [];
  const config = engineDomainOfFilter(filter, problems);
  if (config) return { lines: rlconfigLines(config) };
  return {
    problem: problems[0] ??
      `EnvoyFilter ${filter.metadata.namespace}/${filter.metadata.name} carries no engine configuration (${ENGINE_DOMAIN_ANNOTATION})`,
  };
}

/** GlobalEnforced, and when to look again (a push under way turns False at its bound). */
export interface GlobalEnforcement {
  condition: ConditionInput;
  /** Reconcile again after this long even with nothing new. */
  requeueAfterMs?: number;
  /**
   * True when the condition starts a new wait (DomainNotLoaded after another reason): its
   * `lastTransitionTime` must be now even when its status stays the same, since the bound counts
   * from it.
   */
  restart?: boolean;
}

/** The previous GlobalEnforced condition and the time, to bound a push under way. */
export interface GlobalClock {
  previous: Condition | undefined;
  now: number;
  generation: number | undefined;
}

/**
 * GlobalEnforced for a RateLimit whose spec asks for global limits (`wanted`) or whose limit in
 * place has them; undefined when neither (the condition is then dropped). `rendered`: whether
 * this generation renders the global part (`globalPartRendered`).
 */
export function globalEnforcement(
  inForce: InForce | undefined,
  wanted: boolean,
  engine: EngineObservation | undefined,
  rendered: boolean,
  meta: { namespace: string; name: string },
  clock: GlobalClock,
): GlobalEnforcement | undefined {
  const condition = (
    reason: string,
    message: string,
    status?: "False" | "Unknown",
  ): ConditionInput => {
    const row = GLOBAL_ENFORCED_ROWS.find((r) =>
      r.reason === reason && (status === undefined || r.status === status)
    )!;
    return { type: GLOBAL_ENFORCED_CONDITION, status: row.status, reason, message };
  };
  const done = (reason: string, message: string) => ({ condition: condition(reason, message) });
  const held = inForce?.limits?.global;
  const domain = globalDomain(meta.namespace, meta.name);
  const names = (pods: readonly EnginePod[]) => namedList(pods.map((p) => p.name));
  if (!held) {
    if (!wanted) return undefined;
    if (rendered) {
      return done(
        "NotApplied",
        "This generation is not applied (see Ready), and the limit in place has no global part",
      );
    }
    const local = inForce?.limits && inForce.limits.buckets.length > 0;
    const rest = `so the global limits are not sent to the proxies and nothing counts them; ${
      local ? "the local limits apply meanwhile" : "no local limit applies either"
    }`;
    if (!engine) {
      return done(
        "EngineNotInstalled",
        `The operator does not run the rate limit engine (--global-redis-secret), ${rest}`,
      );
    }
    if (!engine.listing || !engine.listing.listed) {
      return done("EngineNotVerified", `${upper(engineAbsence(engine))}, ${rest}`);
    }
    if (engine.pods.length === 0) {
      return done("EngineNotInstalled", `${upper(engineAbsence(engine))}, ${rest}`);
    }
    const lost = engine.pods.filter((p) => p.redis === "Unreachable");
    if (lost.length > 0) {
      return done(
        "RedisUnreachable",
        `No rate limit engine Pod is Ready: ${
          plural(lost.length, "Pod", "Pods")
        } cannot reach Redis (${names(lost)}), ${rest}`,
      );
    }
    return done("EngineNotReady", `${upper(engineAbsence(engine))}, ${rest}`);
  }
  // The global part is in place: what happens to a call the engine does not answer.
  const failing = held.failureMode === "Deny"
    ? "failure mode Deny: requests it limits are refused with 500"
    : "failure mode Allow: requests are admitted without the global limits";
  const where = `domain ${domain}`;
  if (!engine || !engine.listing || !engine.listing.listed) {
    return done(
      "EngineNotVerified",
      `The global limits are sent to the engine as ${where}, but ${
        engineAbsence(engine)
      }, so whether it holds them and reaches Redis is not known (when it does not answer: ${failing})`,
    );
  }
  if (engine.pods.length === 0) {
    return done(
      "EngineNotInstalled",
      `The rate limit engine has no Pod in namespace ${GLOBAL_ENGINE_SERVICE.namespace}: every call for ${where} fails (${failing})`,
    );
  }
  const ready = engine.pods.filter((p) => p.ready);
  if (ready.length === 0) {
    const lost = engine.pods.filter((p) => p.redis === "Unreachable");
    return lost.length > 0
      ? done(
        "RedisUnreachable",
        `No rate limit engine Pod is Ready: ${
          plural(lost.length, "Pod", "Pods")
        } cannot reach Redis (${names(lost)}), so every call for ${where} fails (${failing})`,
      )
      : done(
        "EngineNotReady",
        `None of the rate limit engine's ${plural(engine.pods.length, "Pod", "Pods")} is Ready (${
          names(engine.pods)
        }), so every call for ${where} fails (${failing})`,
      );
  }
  const lost = ready.filter((p) => p.redis === "Unreachable");
  if (lost.length > 0) {
    return done(
      "RedisUnreachable",
      `${of(lost.length, ready.length)} cannot reach Redis (${
        names(lost)
      }): the calls for ${where} they take fail (${failing})`,
    );
  }
  const expected = inForce?.engine ?? { problem: "the filter in place was not read" };
  if ("problem" in expected) {
    return done(
      "EngineNotVerified",
      `What the engine should hold of ${where} cannot be read: ${expected.problem}`,
    );
  }
  const unread = ready.filter((p) => p.loaded === undefined || p.redis === "Unknown");
  const missing: EnginePod[] = [];
  const other: EnginePod[] = [];
  for (const p of ready) {
    if (p.loaded === undefined) continue;
    const lines = p.loaded[domain];
    if (lines === undefined) missing.push(p);
    else if (!sameLines(lines, expected.lines)) other.push(p);
  }
  if (missing.length + other.length > 0) {
    const previous = clock.previous;
    const waiting = previous?.reason === "DomainNotLoaded" &&
      previous.observedGeneration === clock.generation;
    // Unknown since the wait began (its transition time); once False, False until it holds.
    const since = waiting ? Date.parse(previous.lastTransitionTime) : clock.now;
    const elapsed = !Number.isFinite(since) || previous?.status === "False" && waiting
      ? DOMAIN_LOAD_BOUND_MS
      : clock.now - since;
    const parts = [
      missing.length > 0 ? `not holding it: ${names(missing)}` : "",
      other.length > 0 ? `holding another version of it: ${names(other)}` : "",
    ].filter((x) => x).join("; ");
    const message = `${of(missing.length + other.length, ready.length)} ${
      missing.length + other.length === 1 ? "has" : "have"
    } not loaded ${where} as in force (${parts}): such an engine admits the domain's requests without counting them (it answers OK for a domain it does not hold; the failure mode applies only when it does not answer)`;
    if (elapsed >= DOMAIN_LOAD_BOUND_MS) {
      return {
        condition: condition(
          "DomainNotLoaded",
          `${message}, for ${DOMAIN_LOAD_BOUND_MS / 1000} s or more`,
          "False",
        ),
      };
    }
    return {
      condition: condition("DomainNotLoaded", message, "Unknown"),
      requeueAfterMs: DOMAIN_LOAD_BOUND_MS - elapsed,
      ...(waiting ? {} : { restart: true }),
    };
  }
  if (unread.length > 0) {
    const first = unread.find((p) => p.error)?.error;
    return done(
      "EngineNotVerified",
      `What ${of(unread.length, ready.length)} ${
        unread.length === 1 ? "holds" : "hold"
      } cannot be read (${names(unread)}${
        first ? `: ${first.reason}, ${first.message}` : ""
      }), so whether they hold ${where} and reach Redis is not known (when the engine does not answer: ${failing})`,
    );
  }
  // Said without counting or naming Pods: an engine Pod restarting does not rewrite the status of
  // every RateLimit with a global part while they stay enforced.
  return done(
    "Enforced",
    `Enforced: every Ready rate limit engine Pod holds ${where} as in force and reaches Redis (when the engine does not answer: ${failing})`,
  );
}

/** "2 of 3 Ready rate limit engine Pods". */
function of(n: number, total: number): string {
  return `${n} of ${plural(total, "Ready rate limit engine Pod", "Ready rate limit engine Pods")}`;
}

function upper(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** True when two sorted lists of engine lines are equal. */
function sameLines(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((l, i) => l === b[i]);
}

/**
 * Each global rule's limit for the workload as a whole, beside the local buckets' rates in
 * `status.rates`: read from the engine lines of the filter in place (one a rule, its limit on
 * its last entry), `global.<rule>` with the rule's index or `default`.
 */
export function globalRates(engine: EngineLines | undefined): BucketRate[] {
  if (!engine || "problem" in engine) return [];
  const out: BucketRate[] = [];
  for (const line of engine.lines) {
    const read = parseRlconfigLine(line);
    if ("problem" in read) continue;
    const rule = read.path.slice("rule_".length).split(".")[0];
    out.push({
      bucket: `global.${rule}`,
      workload: `${read.requestsPerUnit}/${UNIT_TEXT[read.unit]}`,
    });
  }
  return out.sort((a, b) => ruleOrder(a.bucket) - ruleOrder(b.bucket));
}

/** The engine's units as a rate's interval reads (`100/1m`). */
const UNIT_TEXT: Readonly<Record<string, string>> = {
  SECOND: "1s",
  MINUTE: "1m",
  HOUR: "1h",
  DAY: "1d",
  WEEK: "7d",
  MONTH: "30d",
  YEAR: "365d",
  UNKNOWN: "?",
};

/** Rules by index, the default last. */
function ruleOrder(bucket: string): number {
  const n = Number(bucket.slice("global.".length));
  return Number.isInteger(n) ? n : Number.MAX_SAFE_INTEGER;
}

// What a RateLimit's reconcile reads, and its verdict on the current generation: why it cannot be
// applied (invalid, no mesh, mesh-wide, a conflict) or what applying it takes, and which filter in
// place may stay when it is refused. The reducer (mod.ts) turns these into a Plan.

/** Why the current generation cannot be applied, or what applying it takes. */
export type Verdict =
  | {
    reason:
      | "InvalidSpec"
      | "MeshMissing"
      | "Conflict"
      | "MeshWide"
      | "ProxyTooOld"
      | "ProxyVersionUnknown"
      | "EngineNotInstalled";
    problems: string[];
  }
  | { reason: "Applied" | "ApplyFailed"; problems?: string[]; desired: KubeObject; rl: RateLimit };

/** Why the current generation cannot be applied, or what applying it takes. */
export function judge(input: RateLimitInput, scope: Scope, globalPart: boolean): Verdict {
  const { meta, ours, reach, selected } = scope;
  // Parse and validate, choose the patch contexts from the Pods the spec selects, then render
  // with them: each room is entered in turn, and none calls back into this one.
  const parsed = parseSpec(input.rateLimit);
  if (!parsed.ok) return { reason: "InvalidSpec", problems: parsed.problems };
  const selector = parsed.rl.spec.selectorLabels;
  const held = ours ? filterContexts(ours) : undefined;
  const contexts = patchContexts(selected(selector), selector, reach, held);
  const spec = renderSpec(parsed, meta.namespace, contexts, input.maxFilterBytes, {
    global: globalPart,
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
  const perClient = perClientRefusal(input, scope, rl.spec, contexts);
  if (perClient) return { reason: perClient.reason, problems: [perClient.problem] };
  if (rl.spec.local === undefined && !globalPart) {
    return {
      reason: "EngineNotInstalled",
      problems: [
        `spec.global: ${
          engineAbsence(input.globalEngine)
        }, and without spec.local there is nothing else to apply`,
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

/**
 * Why a generation with per-client buckets is not applied. `ProxyTooOld`: a selected proxy that
 * would take it runs an Envoy that refuses them (envoy.ts `refusesPerClient`), as istiod says or,
 * when istiod does not list it, its image tag. Sending it would not protect that Pod (its proxy
 * rejects the config and keeps its previous one) and would stop every later push of that listener
 * or route configuration reaching it, other teams' included; refusing keeps the last good
 * generation's filter, and with it the enforcement that works. `ProxyVersionUnknown`: while the
 * operator asks istiod, a selected proxy istiod does not list and whose image says no version
 * could be that old proxy, away for a moment (reconnecting, istiod restarting, a new Pod not yet
 * connected): it would take the push once back, so the generation waits until istiod lists it
 * (a listed proxy whose version is unreadable is not waited for: nothing more will be known, and
 * istiod reads such a version as the newest). Without istiod nothing is waited for. The
 * generation already in force is not refused again: its filter is in place either way, and
 * `Accepted` names the proxies that refuse it.
 */
function perClientRefusal(
  input: RateLimitInput,
  scope: Scope,
  spec: RateLimitSpec,
  contexts: readonly ProxyContext[],
): { reason: "ProxyTooOld" | "ProxyVersionUnknown"; problem: string } | undefined {
  const at = (spec.local?.buckets ?? []).findIndex((r) => r.perClient !== undefined);
  if (at < 0) return undefined;
  const { meta, ours, reach, selected } = scope;
  if (ours && meta.generation !== undefined && renderedGeneration(ours) === meta.generation) {
    return undefined;
  }
  const takers = selected(spec.selectorLabels).filter((p) => {
    const proxy = isActivePod(p) ? meshProxyOf(p) : undefined;
    return proxy !== undefined && contexts.includes(contextOf(proxy));
  });
  const { tooOld, unlisted } = proxyEnvoys(takers, input.proxies, reach.meshWide);
  const needs = `spec.local.buckets[${at}].perClient: per-client buckets need ${PER_CLIENT_NEEDS}`;
  if (tooOld.length > 0) {
    const one = tooOld.length === 1;
    return {
      reason: "ProxyTooOld",
      problem: `${needs}, and ${
        plural(tooOld.length, "selected proxy reports", "selected proxies report")
      } an older one, which refuses the filter: ${namedList(tooOld)}; upgrade ${
        one ? "its" : "their"
      } proxy (restart the Pod with a newer sidecar) or keep ${
        one ? "that Pod" : "those Pods"
      } out of spec.selectorLabels`,
    };
  }
  if (!input.proxies || unlisted.length === 0) return undefined;
  const one = unlisted.length === 1;
  return {
    reason: "ProxyVersionUnknown",
    problem: `${needs}, and which Envoy ${
      plural(unlisted.length, "selected proxy runs", "selected proxies run")
    } is not known: istiod does not list ${one ? "it" : "them"} (not connected${
      input.proxies.istiod?.reachable ? "" : ", or istiod not answering"
    }) and ${one ? "its image tag gives" : "their image tags give"} no Istio version: ${
      namedList(unlisted)
    }; it is applied once istiod lists ${one ? "it" : "them"} with an Envoy that takes them`,
  };
}

/** Whether our filter in place may stay for a refused generation, or why it must go. */
export function keep(input: RateLimitInput, scope: Scope): LastGood {
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

/** The limit a filter of ours holds in place. */
export function inForceOf(
  reach: Reach,
  selector: Record<string, string>,
  filter: KubeObject,
): InForce {
  const limits = filterLimits(filter);
  return {
    namespace: reach.namespace,
    selector,
    contexts: filterContexts(filter),
    meshWide: reach.meshWide,
    limits,
    ...(limits?.global ? { engine: engineLinesOf(filter) } : {}),
  };
}
