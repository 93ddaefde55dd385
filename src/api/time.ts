/** Kubernetes time formats. */

/**
 * The last second formatted and its text: callers format the same second many times in a row
 * (every write of a simulated step, every condition of a reconcile), and a Date's ISO string is
 * costly next to a number compare.
 */
let lastSecond = Number.NaN;
let lastText = "";

/** Formats epoch milliseconds as a Kubernetes timestamp (RFC 3339, UTC, whole seconds). */
export function kubeTime(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== lastSecond) {
    lastText = new Date(second * 1000).toISOString().replace(".000Z", "Z");
    lastSecond = second;
  }
  return lastText;
}
