/**
 * What the RateLimit reducer reads of objects however malformed they are: a RateLimit's identity
 * and previous conditions, and whether an EnvoyFilter is one this operator made for it (and which
 * Pods it selects).
 */
import type { Condition } from "../../api/common.ts";
import { at, isObject, stringMap } from "../../api/json.ts";
import { apiVersionOf, RESOURCES } from "../../api/resources.ts";
import type { KubeObject } from "../../api/object.ts";
import { MANAGED_BY, MANAGED_BY_LABEL, MODULE_LABEL } from "../labels.ts";
import type { ObjectRef } from "../plan.ts";

/** What can be read of any RateLimit object. */
export interface Meta {
  name: string;
  namespace: string;
  uid?: string;
  generation?: number;
  deleting: boolean;
  /** Its previous conditions of the types the reducer writes. */
  conditions: Condition[];
}

function isCondition(c: unknown): c is Condition {
  return isObject(c) && typeof c.type === "string" && typeof c.status === "string" &&
    typeof c.reason === "string" && typeof c.message === "string" &&
    typeof c.lastTransitionTime === "string";
}

/** Reads a RateLimit's metadata and its previous conditions of `types`. */
export function readMeta(obj: unknown, types: readonly string[]): Meta {
  const str = (v: unknown) => (typeof v === "string" ? v : undefined);
  const metadata = at(obj, "metadata");
  const gen = at(metadata, "generation");
  const conds = at(obj, "status", "conditions");
  // The first condition of each type, of those given.
  const conditions: Condition[] = [];
  if (Array.isArray(conds)) {
    for (const c of conds) {
      if (
        isCondition(c) && types.includes(c.type) && !conditions.some((d) => d.type === c.type)
      ) conditions.push(c);
    }
  }
  return {
    name: str(at(metadata, "name")) ?? "",
    namespace: str(at(metadata, "namespace")) ?? "default",
    uid: str(at(metadata, "uid")),
    generation: Number.isSafeInteger(gen) && (gen as number) >= 0 ? gen as number : undefined,
    deleting: at(metadata, "deletionTimestamp") !== undefined,
    conditions,
  };
}

/** True when the EnvoyFilter was made by this operator for this RateLimit. */
export function isOurs(ef: KubeObject, meta: Pick<Meta, "name" | "uid">): boolean {
  const labels = ef.metadata.labels ?? {};
  if (labels[MANAGED_BY_LABEL] !== MANAGED_BY || labels[MODULE_LABEL] !== "ratelimit") return false;
  const owners = ef.metadata.ownerReferences ?? [];
  if (owners.length === 0) return meta.uid === undefined;
  return owners.some((o) =>
    o.kind === "RateLimit" && o.name === meta.name && (meta.uid === undefined || o.uid === meta.uid)
  );
}

/** True when the EnvoyFilter carries this operator's RateLimit labels (whoever it belongs to). */
export function isRateLimitFilter(ef: KubeObject): boolean {
  const labels = ef.metadata.labels ?? {};
  return labels[MANAGED_BY_LABEL] === MANAGED_BY && labels[MODULE_LABEL] === "ratelimit";
}

/** The workload selector of an EnvoyFilter, when it is a non-empty map of strings. */
export function filterSelector(ef: KubeObject): Record<string, string> | undefined {
  const labels = stringMap(at(ef, "spec", "workloadSelector", "labels"));
  return labels && Object.keys(labels).length > 0 ? labels : undefined;
}

/** The reference of a RateLimit's EnvoyFilter (same namespace and name). */
export function filterRef(meta: Pick<Meta, "name" | "namespace">): ObjectRef {
  return {
    apiVersion: apiVersionOf(RESOURCES.EnvoyFilter),
    kind: RESOURCES.EnvoyFilter.kind,
    namespace: meta.namespace,
    name: meta.name,
  };
}
