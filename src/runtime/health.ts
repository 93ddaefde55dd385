/**
 * What /healthz and /readyz answer. The HTTP server belongs to the live adapter; it turns a
 * ManagerStatus into a ProbeResult here so the rule lives in one place.
 */

/** What the manager reports about itself. */
export interface ManagerStatus {
  /** The manager is running (started, not stopped, not crashed). /healthz. */
  healthy: boolean;
  /** Caches synced and either leading or standing by with a working view of the Lease. /readyz. */
  ready: boolean;
  /** This replica holds the lease (always true without leader election once started). */
  leading: boolean;
  /** Every required watch has finished its initial list. */
  synced: boolean;
  /** Keys waiting in all queues (not counting delayed requeues). */
  queued: number;
  /** Reconciles running now. */
  inFlight: number;
}

/** An HTTP answer of a probe. */
export interface ProbeResult {
  status: 200 | 503;
  body: string;
}

/** /healthz: 200 while the manager runs. */
export function healthz(s: ManagerStatus): ProbeResult {
  return s.healthy ? { status: 200, body: "ok\n" } : { status: 503, body: "not running\n" };
}

/** /readyz: 200 once caches are synced and while leading or standing by correctly; else why not. */
export function readyz(s: ManagerStatus): ProbeResult {
  if (s.ready) return { status: 200, body: s.leading ? "ok: leading\n" : "ok: standby\n" };
  const why = !s.healthy
    ? "not running"
    : !s.synced
    ? "caches not synced yet"
    : "cannot reach the leader election Lease";
  return { status: 503, body: `not ready: ${why}\n` };
}
