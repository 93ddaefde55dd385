/**
 * What the Deployment controller reads of a Deployment's Pod template and Pods: the template's
 * hash (the pod-template-hash label of the Pods it makes), readiness, and the rollout's budget.
 */
import type { KubeObject } from "../../src/api/object.ts";
import type { JsonObject } from "../../src/api/json.ts";
import { stableJson } from "../../src/reconcile/hash.ts";
import { hash32 } from "../prng.ts";

/** True when a Pod reports Ready and is not being deleted. */
export function podReady(pod: KubeObject): boolean {
  const conds = (pod.status as { conditions?: { type: string; status: string }[] } | undefined)
    ?.conditions;
  return !pod.metadata.deletionTimestamp &&
    !!conds?.some((c) => c.type === "Ready" && c.status === "True");
}

/** How many of `desired` Pods a rollout of `d` may take down (its maxUnavailable, 25% by default). */
export function maxUnavailable(d: KubeObject, desired: number): number {
  const v =
    (d.spec as { strategy?: { rollingUpdate?: { maxUnavailable?: number | string } } }).strategy
      ?.rollingUpdate?.maxUnavailable ?? "25%";
  if (typeof v === "number") return v;
  return Math.floor((desired * Number(v.replace("%", ""))) / 100);
}

/** Template hashes of stored (frozen) templates: a Deployment is reconciled on every Pod change. */
const templateHashes = new WeakMap<object, string>();

/** The pod-template-hash of a template (of an empty one when there is none). */
export function templateHash(template: JsonObject | undefined): string {
  const known = template && templateHashes.get(template);
  if (known !== undefined) return known;
  const hash = hash32(stableJson(template ?? {})).toString(16).padStart(8, "0").slice(0, 10);
  if (template && Object.isFrozen(template)) templateHashes.set(template, hash);
  return hash;
}
