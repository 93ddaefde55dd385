/**
 * Which module object is served: the one already served stays served; when none is, the oldest
 * (creationTimestamp, then namespace/name) takes over. Reconciles that see the same peers compute
 * the same answer, but caches differ in time, so the answer is only a candidate: it becomes served
 * by holding the module's claim Lease (claim.ts), whose create the API server admits once.
 */
import { type ParsedObjectMeta, parseObjectMeta } from "../../api/common.ts";
import { errorLines } from "../../api/issues.ts";
import { fitMessage } from "../../api/message.ts";
import { type KubeObject, objectKey } from "../../api/object.ts";
import { type ClaimInput, claimLease, claimRef, claimState, holderIdentity } from "./claim.ts";
import { REQUEUE_MS } from "./requeue.ts";
import { emptyPlan, type ObjectRef, type Plan } from "../plan.ts";

/** The fields of a module object the choice looks at. */
export interface Peer {
  metadata: { name: string; namespace?: string; creationTimestamp?: string; uid?: string };
  status?: { served?: string };
}

function older(a: Peer, b: Peer): number {
  const ta = a.metadata.creationTimestamp ?? "";
  const tb = b.metadata.creationTimestamp ?? "";
  if (ta !== tb) return ta < tb ? -1 : 1;
  const ka = objectKey(a);
  const kb = objectKey(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/** The served peer among all existing peers of one kind (the reconciled object included). */
export function servedPeer<P extends Peer>(peers: readonly P[]): P | undefined {
  const claimed = peers.filter((p) => p.status?.served === "True");
  const pool = claimed.length > 0 ? claimed : peers;
  return [...pool].sort(older)[0];
}

/**
 * The Peer fields of an object read from the cluster, whatever its shape; undefined when it has
 * no usable name. Reducers take peers unparsed so that one malformed peer cannot hide the others.
 */
export function asPeer(raw: unknown): Peer | undefined {
  if (raw === null || typeof raw !== "object") return undefined;
  const meta = (raw as { metadata?: unknown }).metadata;
  if (meta === null || typeof meta !== "object") return undefined;
  const { name, namespace, creationTimestamp, uid } = meta as Record<string, unknown>;
  if (typeof name !== "string" || name === "") return undefined;
  const status = (raw as { status?: unknown }).status;
  const served = status !== null && typeof status === "object"
    ? (status as { served?: unknown }).served
    : undefined;
  return {
    metadata: {
      name,
      ...(typeof namespace === "string" && namespace ? { namespace } : {}),
      ...(typeof creationTimestamp === "string" ? { creationTimestamp } : {}),
      ...(typeof uid === "string" && uid ? { uid } : {}),
    },
    ...(typeof served === "string" ? { status: { served } } : {}),
  };
}

/** Whether `self` is the served one among `peers`, and if not, which one is. */
export type ServeDecision = { served: true } | { served: false; servedKey: string };

/** Decides whether `self` is served; `peers` may or may not include `self`, and may be malformed. */
export function decideServed(self: Peer, peers: readonly unknown[]): ServeDecision {
  const selfKey = objectKey(self);
  const pool: Peer[] = [self];
  for (const raw of peers) {
    const p = asPeer(raw);
    if (p && objectKey(p) !== selfKey) pool.push(p);
  }
  const chosen = servedPeer(pool);
  if (!chosen || objectKey(chosen) === selfKey) return { served: true };
  return { served: false, servedKey: objectKey(chosen) };
}

/** The message a duplicate shows: which object is served, and what to do. */
export function duplicateMessage(kind: string, self: Peer, servedKey: string): string {
  return `Only one ${kind} is allowed per cluster and ${servedKey} is the one in use; ` +
    `${objectKey(self)} is ignored and installs nothing. Delete it, or delete ${servedKey} ` +
    `to make this one take over.`;
}

/** Metadata of a module object, parsed. */
export type ModuleMeta = ParsedObjectMeta;

/** What a module object is to its reducer, before its spec is looked at. */
export type ModuleObject =
  /** Not even its metadata can be read. */
  | { kind: "malformed"; message: string }
  /** Another object of the kind is served. */
  | { kind: "duplicate"; meta: ModuleMeta; message: string }
  /** The served one; `claimed` when its status already says so. */
  | { kind: "served"; meta: ModuleMeta; claimed: boolean }
  /**
   * It should be served but does not hold the claim Lease yet: create it, or first delete a claim
   * whose holder is gone. Nothing else may be written until the claim is observed as its own.
   */
  | { kind: "claiming"; meta: ModuleMeta; create: KubeObject[]; delete: ObjectRef[] };

/**
 * Classifies a module object of `kind` (e.g. `Serverless`) among its `peers`, given the module's
 * claim. Never throws.
 */
export function classifyModuleObject(
  kind: string,
  raw: unknown,
  peers: readonly unknown[],
  claim: ClaimInput,
): ModuleObject {
  const metadata = raw !== null && typeof raw === "object"
    ? (raw as { metadata?: unknown }).metadata
    : undefined;
  const parsed = parseObjectMeta(metadata);
  const self = asPeer(raw);
  if (!parsed.ok || !self) {
    const errors = parsed.ok ? ["metadata.name: is required (expected string)"] : errorLines(
      parsed.errors.map((e) => ({
        ...e,
        path: `metadata.${e.path}`.replace(".(root)", ""),
      })),
    );
    return { kind: "malformed", message: fitMessage(`The ${kind} object is invalid: `, errors) };
  }
  const meta = parsed.value;
  const claimed = self.status?.served === "True";
  const duplicate = (servedKey: string): ModuleObject => ({
    kind: "duplicate",
    meta,
    message: duplicateMessage(kind, self, servedKey),
  });
  const others = peers.map(asPeer).filter((p): p is Peer =>
    p !== undefined && objectKey(p) !== objectKey(self)
  ).map((p) => ({ identity: holderIdentity(p.metadata), key: objectKey(p) }));
  const held = claimState(claim, self.metadata, others);
  if (held.kind === "mine") return { kind: "served", meta, claimed };
  const decision = decideServed(self, peers);
  if (!decision.served) return duplicate(decision.servedKey);
  if (held.kind === "peer") return duplicate(held.key);
  // Deleting objects never claim: one that was served cleans up what it installed; one that never
  // was has nothing to clean up, and others see it served (or not) from its status.
  if (meta.deletionTimestamp) return { kind: "served", meta, claimed };
  if (held.kind === "stale") {
    return { kind: "claiming", meta, create: [], delete: [claimRef(claim)] };
  }
  return { kind: "claiming", meta, create: [claimLease(claim, self.metadata)], delete: [] };
}

/**
 * The Plan of an object that is claiming: create the claim (or delete a stale one) and nothing
 * else; its status is left alone until the claim is observed as its own.
 */
export function claimingPlan(obj: Extract<ModuleObject, { kind: "claiming" }>): Plan {
  return {
    ...emptyPlan(),
    create: obj.create,
    delete: obj.delete,
    requeueAfterMs: REQUEUE_MS.claim,
  };
}
