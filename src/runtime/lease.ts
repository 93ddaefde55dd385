/** The coordination.k8s.io/v1 Lease as leader election reads and writes it. */
import type { KubeObject } from "../api/object.ts";
import { isoTime } from "../api/time.ts";

/** The Lease's spec as the election reads and writes it. */
export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

/** Formats epoch milliseconds as a Kubernetes MicroTime (`2006-01-02T15:04:05.000000Z`). */
export function microTime(ms: number): string {
  // toISOString always ends in `.sssZ`: three more zeros make microseconds (no regex needed).
  return `${isoTime(ms).slice(0, -1)}000Z`;
}

/** A new Lease `namespace/name` with `spec`. */
export function newLease(namespace: string, name: string, spec: LeaseSpec): KubeObject {
  return {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { name, namespace },
    spec,
  };
}

/**
 * The update of `lease` to `spec`, without the managedFields it was read with: the API server keeps
 * the live object's when an update carries none, and without them a renewal stays under 1 KiB,
 * so it goes over the shared HTTP/2 connection (transport.ts) and an idle replica opens no other.
 */
export function leaseWith(lease: KubeObject, spec: LeaseSpec): KubeObject {
  const { managedFields: _kept, ...metadata } = lease.metadata;
  return { ...lease, metadata, spec };
}
