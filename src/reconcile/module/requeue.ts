/** Requeue intervals (ms) while a module waits for something no watch may report. */
export const REQUEUE_MS = {
  /** After claiming: the next pass installs. */
  claim: 1_000,
  /** While objects are applied or Deployments roll out. */
  verifying: 5_000,
  /** While installed objects are being deleted. */
  deleting: 2_000,
  /** After a failed write or a replica failure. */
  failure: 10_000,
  /** While deletion waits for the user to delete their objects. */
  blocked: 30_000,
} as const;
