/**
 * Which module object is served (DESIGN.md "Singletons"): the one already served stays served;
 * when none is, the oldest (creationTimestamp, then namespace/name) takes over. Every reconcile of
 * every peer computes the same answer from the same peers, so two can never both claim it.
 */
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
