/** Kubernetes time formats. */

/** Formats epoch milliseconds as a Kubernetes timestamp (RFC 3339, UTC, whole seconds). */
export function kubeTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}
