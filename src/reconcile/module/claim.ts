/**
 * The claim of a singleton module: one coordination.k8s.io/v1 Lease per module in the operator's
 * namespace, naming the module object that is served. Creating it is the only atomic step in the
 * choice of the served object: the API server accepts one create of a name and refuses the rest
 * with 409 AlreadyExists, whatever each reconcile's cache said.
 *
 * Why a Lease and not the status alone: the served flag lives on each module object, and no write
 * to one object can be made conditional on another. Two objects created within one second (the
 * resolution of creationTimestamp) each looked oldest to a reconcile whose cache did not yet show
 * the other's claim, and both were served (sweep seeds 100159, 100747, 101930).
 *
 * A claim outlives its holder only until some peer looks at it: a holder missing from the peers'
 * cache is gone (the claim was made by a reconcile that had the holder in that same cache, or in an
 * earlier process's, whose successor listed after the claim existed), so its claim is deleted and
 * a new one is made. After the last module object is deleted the Lease stays, naming no one.
 */
import { type KubeObject, objectKey } from "../../api/object.ts";
import { MANAGED_BY, MANAGED_BY_LABEL } from "../labels.ts";
import type { ObjectRef } from "../plan.ts";

/** Label on claim Leases: its value is the module (`serverless`, `keda`). */
export const CLAIM_LABEL = "operator.platform-project.io/claim";
/** Label selector of the claim watch. */
export const CLAIM_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY},${CLAIM_LABEL}`;
/** Annotation on a claim Lease: `namespace/name` of the holder, for people reading it. */
export const CLAIMED_BY_ANNOTATION = "operator.platform-project.io/claimed-by";

/** Where a module's claim lives: the operator's namespace and the module's Lease name. */
export interface ClaimSite {
  namespace: string;
  module: "serverless" | "keda";
}

/** A claim as the reducer reads it: where it lives and the Lease observed there (if any). */
export interface ClaimInput extends ClaimSite {
  /** The observed claim Lease, unparsed; undefined when there is none. */
  observed?: unknown;
}

/** The claim Lease's name for a module: `serverless-served`, `keda-served`. */
export function claimName(module: string): string {
  return `${module}-served`;
}

/** The identity a claim records: the object's uid, or its key when it has none. */
export function holderIdentity(meta: { name: string; namespace?: string; uid?: string }): string {
  return meta.uid ?? objectKey({ metadata: meta });
}

/** The claim Lease that names `holder` as served. */
export function claimLease(
  site: ClaimSite,
  holder: { name: string; namespace?: string; uid?: string },
): KubeObject {
  return {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: {
      name: claimName(site.module),
      namespace: site.namespace,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY, [CLAIM_LABEL]: site.module },
      annotations: { [CLAIMED_BY_ANNOTATION]: objectKey({ metadata: holder }) },
    },
    spec: { holderIdentity: holderIdentity(holder) },
  };
}

/** The reference of the claim Lease of `site`. */
export function claimRef(site: ClaimSite): ObjectRef {
  return {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    namespace: site.namespace,
    name: claimName(site.module),
  };
}

/** The holder identity an observed claim records; undefined when there is no usable claim. */
export function claimHolder(observed: unknown): string | undefined {
  if (observed === null || typeof observed !== "object") return undefined;
  const spec = (observed as { spec?: unknown }).spec;
  if (spec === null || typeof spec !== "object") return undefined;
  const holder = (spec as { holderIdentity?: unknown }).holderIdentity;
  return typeof holder === "string" && holder !== "" ? holder : undefined;
}

/** Whose a claim is, seen from one module object. */
export type ClaimState =
  /** No claim: the object that should be served creates it. */
  | { kind: "absent" }
  /** The object itself holds it. */
  | { kind: "mine" }
  /** An existing peer holds it: that peer is served. */
  | { kind: "peer"; key: string }
  /** Its holder no longer exists (or it names no one): delete it, then claim. */
  | { kind: "stale" };

/**
 * Whose `claim` is, for `self` among `peers` (each with its identity and key). A claim naming an
 * identity no peer has is stale.
 */
export function claimState(
  claim: ClaimInput,
  self: { name: string; namespace?: string; uid?: string },
  peers: readonly { identity: string; key: string }[],
): ClaimState {
  if (claim.observed === undefined || claim.observed === null) return { kind: "absent" };
  const holder = claimHolder(claim.observed);
  if (holder === undefined) return { kind: "stale" };
  if (holder === holderIdentity(self)) return { kind: "mine" };
  const peer = peers.find((p) => p.identity === holder);
  return peer ? { kind: "peer", key: peer.key } : { kind: "stale" };
}
