/**
 * What a RateLimit's reconcile reads, and its verdict on the current generation: why it cannot be
 * applied (invalid, no mesh, mesh-wide, a conflict) or what applying it takes, and which filter in
 * place may stay when it is refused. The reducer (mod.ts) turns these into a Plan.
 */
import type { RateLimit } from "../../api/ratelimit.ts";
import type { KubeObject } from "../../api/object.ts";
import type { ApplyOutcome } from "../plan.ts";
import { type EnforcedSelectorOf, olderConflicts, podLabelsOf, selectPods } from "./conflict.ts";
import { labelIndex } from "./label_index.ts";
import { type InForce, selectorText } from "./enforcement.ts";
import { filterSelector, isOurs, type Meta } from "./meta.ts";
import { type LastGood, namesText } from "./messages.ts";
import {
  filterContexts,
  meshWideProblem,
  patchContexts,
  podsInReach,
  type Reach,
  strayPods,
} from "./reach.ts";
import { judgeSpec } from "./spec.ts";
import { filterLimits } from "./inforce.ts";

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
export type Verdict =
  | { reason: "InvalidSpec" | "MeshMissing" | "Conflict" | "MeshWide"; problems: string[] }
  | { reason: "Applied" | "ApplyFailed"; problems?: string[]; desired: KubeObject; rl: RateLimit };

function creationOf(raw: unknown): string {
  const t = (raw as { metadata?: { creationTimestamp?: unknown } } | null)?.metadata
    ?.creationTimestamp;
  return typeof t === "string" ? t : "";
}

/** Positions of Pods by label, in a long frozen list of them. */
const podsLabelled = labelIndex(podLabelsOf);

/**
 * The input's Pods in reach that a selector selects, made once a reconcile for each selector
 * object (the spec's, the kept filter's): conflict detection and enforcement read the same few
 * Pods rather than each scanning the namespace. A long frozen list of Pods is looked up by label
 * (label_index.ts) rather than read whole.
 */
export function podSelection(reach: Reach, pods: readonly unknown[]) {
  const made = new Map<Readonly<Record<string, string>>, readonly unknown[]>();
  const select = (selector: Readonly<Record<string, string>>): readonly unknown[] => {
    let first: [string, string] | undefined;
    for (const k in selector) {
      first = [k, selector[k]];
      break;
    }
    const positions = first && podsLabelled(pods, [first]);
    const candidates = positions ? positions.map((i) => pods[i]) : pods;
    // Selected, then in reach: of a namespace's Pods, few are selected.
    return podsInReach(reach, selectPods(candidates, selector));
  };
  return (selector: Readonly<Record<string, string>>): readonly unknown[] => {
    let list = made.get(selector);
    if (!list) made.set(selector, list = select(selector));
    return list;
  };
}

/** The Pods a selector selects, of those the reconcile was given. */
export type Selection = ReturnType<typeof podSelection>;

/**
 * The selector an older peer's own EnvoyFilter holds, for conflict detection; undefined when the
 * input gives no peer's filter (then no peer holds one).
 */
function enforcedOf(input: RateLimitInput): EnforcedSelectorOf | undefined {
  const peerFilter = input.peerFilter;
  if (!peerFilter) return undefined;
  return (namespace, name) => {
    const ef = peerFilter(namespace, name);
    return ef && isOurs(ef, { name }) ? filterSelector(ef) : undefined;
  };
}

/** What judging and keeping read besides the input: where the filter reaches, and its Pods. */
export interface Scope {
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

/** Why the current generation cannot be applied, or what applying it takes. */
export function judge(input: RateLimitInput, scope: Scope): Verdict {
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
  return {
    namespace: reach.namespace,
    selector,
    contexts: filterContexts(filter),
    meshWide: reach.meshWide,
    limits: filterLimits(filter),
  };
}
