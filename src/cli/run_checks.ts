/**
 * The operator's startup checks as `mod.ts run` repeats them: one run, and the loop that retries
 * until they pass, saying once what to do about each problem.
 */
import { RESOURCES } from "../api/resources.ts";
import type { LiveCluster } from "../kube/live_cluster.ts";
import { type CheckedType, preflight, type Problem } from "../kube/preflight.ts";
import type { FirstLists } from "../kube/first_lists.ts";
import type { Backoff, Clock, Cluster, ControllerSpec, Logger } from "../runtime/mod.ts";
import { metricsReviewed } from "./metrics_endpoint.ts";
import type { RunOptions } from "./run_flags.ts";
import { discoveryChecks } from "../kube/istiod_endpoints.ts";

/**
 * One run of the startup checks: the problems found, none when the operator can start. `listed`
 * gives the answers of lists sent already (first_lists.ts), so those types are not probed again.
 */
export function checkCluster(
  cluster: Cluster,
  live: LiveCluster,
  opts: RunOptions,
  controllers: readonly ControllerSpec[],
  listed?: FirstLists["answer"],
): Promise<Problem[]> {
  const types: CheckedType[] = controllers.flatMap((c) => [
    { type: c.primary },
    // Types served inside the operator need no CRD and no grant.
    ...c.watches.filter((w) => !w.local),
  ]);
  return preflight(cluster, {
    types,
    alsoUses: [
      RESOURCES.Event,
      ...(opts.leaderElect ? [RESOURCES.Lease] : []),
      // Reviewing the scrapers of /metrics (metrics_endpoint.ts).
      ...(metricsReviewed(opts.metricsAddr)
        ? [RESOURCES.TokenReview, RESOURCES.SubjectAccessReview]
        : []),
    ],
    leaseNamespace: opts.leaderElect ? opts.leaseNamespace : undefined,
    // Finding istiod's replicas (--istiod-service): its EndpointSlices, in its namespace only.
    alsoChecks: discoveryChecks(opts.istiodServices),
    ...(listed ? { listed } : {}),
    server: live.connection.server,
    source: live.connection.source,
  }).catch((
    err,
  ) => [{ kind: "error", message: `startup checks failed: ${(err as Error).message}` }]);
}

/**
 * Runs the startup checks, whose first run found `problems` (none: they passed), until they pass
 * (true) or shutdown aborts (false). A problem is logged once, as one line saying what to do; while
 * it stays the same, retries log at debug level.
 */
export async function waitUntilUsable(
  check: () => Promise<Problem[]>,
  problems: Problem[],
  log: Logger,
  clock: Clock,
  backoff: Backoff,
  shutdown: AbortSignal,
): Promise<boolean> {
  let last = "";
  for (;;) {
    if (problems.length === 0) {
      log.info("cluster checks passed: CRDs installed, access granted");
      return true;
    }
    if (shutdown.aborted) return false;
    const delay = backoff.next();
    const summary = problems.map((p) => p.message).join("\n");
    if (summary !== last) {
      problems.forEach((p) =>
        log.error(p.message, { check: p.kind, details: p.details, retryInMs: delay })
      );
    } else log.debug("cluster checks still failing; retrying", { retryInMs: delay });
    last = summary;
    try {
      await clock.sleep(delay, shutdown);
    } catch {
      return false;
    }
    problems = await check();
  }
}
