/**
 * The words of a RateLimit's Ready condition: what is wrong with the current generation (the field
 * and the rule come from validation), what stays in force instead, and what a good one enforces.
 * Lists of problems and of names are cut to fit the CRD's limit on a message, counting the rest.
 */
import { fitMessage, joinWithin } from "../../api/message.ts";
import type { RateLimitSpec } from "../../api/ratelimit.ts";
import type { KubeObject } from "../../api/object.ts";
import type { InForce } from "./enforcement.ts";
import { renderedGeneration } from "./envoyfilter.ts";

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

/** What a spec enforces, in short: the default bucket and the number of rules. */
export function limitsText(spec: RateLimitSpec): string {
  const d = spec.local.defaultBucket;
  const rules = spec.local.buckets.length;
  const shadow = spec.enforce ? "" : "in shadow mode (counts, rejects nothing), ";
  return `${shadow}default bucket ${d.maxTokens} tokens, ${d.tokensPerFill} added every ${d.fillInterval}${
    rules > 0 ? `; ${rules} rule bucket${rules === 1 ? "" : "s"}` : ""
  }`;
}
