/**
 * Which module object is served (DESIGN.md "Singletons"): the one already served stays served;
 * when none is, the oldest (creationTimestamp, then namespace/name) takes over. Every reconcile of
 * every peer computes the same answer from the same peers, so two can never both claim it.
 */
import type { z } from "zod";
import { ObjectMetaSchema } from "../api/common.ts";
import { formatErrors, toFieldErrors } from "../api/issues.ts";
import { objectKey } from "../runtime/cluster.ts";

/** The fields of a module object the choice looks at. */
export interface Peer {
  metadata: { name: string; namespace?: string; creationTimestamp?: string };
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
  const { name, namespace, creationTimestamp } = meta as Record<string, unknown>;
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
export type ModuleMeta = z.output<typeof ObjectMetaSchema>;

/** What a module object is to its reducer, before its spec is looked at. */
export type ModuleObject =
  /** Not even its metadata can be read. */
  | { kind: "malformed"; message: string }
  /** Another object of the kind is served. */
  | { kind: "duplicate"; meta: ModuleMeta; message: string }
  /** The served one; `claimed` when its status already says so. */
  | { kind: "served"; meta: ModuleMeta; claimed: boolean };

/** Classifies a module object of `kind` (e.g. `Serverless`) among its `peers`. Never throws. */
export function classifyModuleObject(
  kind: string,
  raw: unknown,
  peers: readonly unknown[],
): ModuleObject {
  const metadata = raw !== null && typeof raw === "object"
    ? (raw as { metadata?: unknown }).metadata
    : undefined;
  const parsed = ObjectMetaSchema.safeParse(metadata);
  const self = asPeer(raw);
  if (!parsed.success || !self) {
    const errors = parsed.success ? "metadata.name: is required (expected string)" : formatErrors(
      toFieldErrors(parsed.error, metadata).map((e) => ({
        ...e,
        path: `metadata.${e.path}`.replace(".(root)", ""),
      })),
    );
    return { kind: "malformed", message: `The ${kind} object is invalid: ${errors}` };
  }
  const decision = decideServed(self, peers);
  if (!decision.served) {
    return {
      kind: "duplicate",
      meta: parsed.data,
      message: duplicateMessage(kind, self, decision.servedKey),
    };
  }
  return { kind: "served", meta: parsed.data, claimed: self.status?.served === "True" };
}
