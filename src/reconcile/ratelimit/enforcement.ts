/**
 * Whether the limit in place bites (docs/design.md: `Ready` says the filter is stored; this says beside
 * it whether any proxy applies it). An EnvoyFilter reaches only Pods with a mesh proxy, so the
 * figures are the Pods the enforced selector selects and how many of them have a sidecar, and the
 * `Enforced` condition is False, with a reason a user can act on, when the limit protects nothing
 * or leaves some Pods out. Every figure comes from the observed Pods: the same Pods give the same
 * status, so nothing is written at rest.
 */
import { contextOf, type ProxyContext } from "../../api/mesh.ts";
import { joinWithin } from "../../api/message.ts";
import { selects } from "../../api/selector.ts";
import { isActivePod, meshProxyOf, podName, podNamespace } from "../../api/pod.ts";
import type { ConditionInput } from "../conditions.ts";
import { podLabelsOf } from "./conflict.ts";
import type { FilterLimits } from "./inforce.ts";
import { exportsLimitStats, statsHint } from "./stats_hint.ts";

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

/** Pod names a message lists before it says "and N more". */
export const NAMED_PODS = 3;

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
}

/** The figures and the condition of enforcement. */
export interface Enforcement {
  condition: ConditionInput;
  /** Absent when no limit is in place. */
  podsSelected?: number;
  podsWithSidecar?: number;
}

/** The most characters a selector takes in a message (a selector may have 256 long labels). */
const SELECTOR_TEXT_MAX = 1024;

/**
 * `app=httpbin,tier=web`: a selector as users write it on the command line; a long one is cut,
 * counting the labels left out (`app=httpbin and 255 more labels`).
 */
export function selectorText(selector: Readonly<Record<string, string>>): string {
  const labels = Object.entries(selector).map(([k, v]) => `${k}=${v}`);
  return joinWithin(labels, SELECTOR_TEXT_MAX, { separator: ",", noun: "labels" });
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** `a, b, c and 4 more`: the first names of a list, and how many are left out. */
export function namedList(names: readonly string[]): string {
  const shown = names.slice(0, NAMED_PODS).join(", ");
  const more = names.length - NAMED_PODS;
  return more > 0 ? `${shown} and ${more} more` : shown;
}

/**
 * Enforcement of `inForce` over `pods` (any Pods; those of other namespaces, finished or being
 * deleted, or not selected are skipped), or NotApplied when no limit is in place.
 */
export function enforcement(
  inForce: InForce | undefined,
  pods: readonly unknown[],
): Enforcement {
  const condition = (reason: string, message: string): ConditionInput => {
    const row = ENFORCED_ROWS.find((r) => r.reason === reason)!;
    return { type: ENFORCED_CONDITION, status: row.status, reason, message };
  };
  if (!inForce) {
    return {
      condition: condition("NotApplied", "No limit is in place, so no Pod is protected"),
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
  const mismatched: string[] = [];
  for (const p of selected) {
    const proxy = meshProxyOf(p);
    if (proxy === undefined) without.push(nameOf(p));
    else if (!inForce.contexts.includes(contextOf(proxy))) mismatched.push(nameOf(p));
  }
  without.sort();
  mismatched.sort();
  const figures = {
    podsSelected: selected.length,
    podsWithSidecar: selected.length - without.length - mismatched.length,
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
    const message = `${without.length} of ${
      plural(selected.length, noun, `${noun}s`)
    } with ${sel} ${one ? "has" : "have"} no mesh sidecar, so ${
      one ? "its" : "their"
    } requests are not limited: ${namedList(without)}; enable sidecar injection for ${
      one ? "it" : "them"
    } (e.g. namespace label istio-injection=enabled) and restart ${one ? "it" : "them"}`;
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
    statsHint(hidden.length, selected.length, namedList(hidden));
  return { condition: condition("Enforced", message), ...figures };
}
