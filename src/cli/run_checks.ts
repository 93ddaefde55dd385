/**
 * The operator's startup checks as `mod.ts run` repeats them: one run, and the loop that retries
 * until they pass, saying once what to do about each problem.
 */
import { RESOURCES } from "../api/resources.ts";
import type { ResourceType } from "../api/object.ts";
import type { LiveCluster } from "../kube/live_cluster.ts";
import {
  type CheckedType,
  deniedText,
  forbiddenMessage,
  preflight,
  type Problem,
} from "../kube/preflight.ts";
import type { FirstLists } from "../kube/first_lists.ts";
import type { Backoff, Clock, Cluster, ControllerSpec, Logger } from "../runtime/mod.ts";
import { metricsReviewed } from "./metrics_endpoint.ts";
import type { RunOptions } from "./run_flags.ts";
import { discoveryChecks } from "../kube/istiod_endpoints.ts";
import { type AccessCheck, partChecks } from "../kube/self_access.ts";
import { partRoleName, type RbacPart } from "../kube/rbac.ts";
import { CONTROLLER_NAMES } from "../controllers/registry.ts";
import { GLOBAL_ENGINE_SERVICE } from "../api/global_engine.ts";

/** The part of the operator's RBAC (rbac.ts) a controller's grants are in, by its name. */
export function partOfController(name: string): RbacPart {
  if ((CONTROLLER_NAMES as readonly string[]).includes(name)) return name as RbacPart;
  // The global rate limit engine's controller (with --global-redis-secret).
  if (name === "engine") return "global-engine";
  throw new Error(`controller ${name} has no part in src/kube/rbac.ts`);
}

/** Where each part's grants come from, said in a startup check's message. */
function grantOf(part: RbacPart): string {
  const role = partRoleName(part);
  switch (part) {
    case "operator":
      return `the operator itself needs ClusterRole ${role} and Role platform-operator-leader-election (deploy/base; with --lease-namespace outside platform-system grant the leases Role there too)`;
    case "global-engine":
      return `the global rate limit engine (--global-redis-secret) needs Role ${role} in namespace ${GLOBAL_ENGINE_SERVICE.namespace} (the deploy/global-engine component; Helm globalEngine.redisSecret)`;
    default:
      return `controller ${part} needs ClusterRole ${role} (the deploy/${part} component of kubectl apply -k deploy/; Helm modules.${part}.enabled=true), or run without it (--controllers)`;
  }
}

/**
 * The access the operator needs to run `controllers`, each check with the part it is for: the
 * operator's own (`alsoUses`: Events, Leases, the reviews of /metrics' readers) and each enabled
 * controller's every row of the RBAC table, each where the part's roles grant it.
 */
export function enabledAccess(
  controllers: readonly ControllerSpec[],
  alsoUses: readonly ResourceType[],
  leaseNamespace: string | undefined,
): { check: AccessCheck; part: RbacPart }[] {
  const namespaces = {
    "lease-namespace": leaseNamespace,
    "engine-namespace": GLOBAL_ENGINE_SERVICE.namespace,
  };
  const all = Object.values(RESOURCES);
  const parts: [RbacPart, readonly ResourceType[]][] = [
    ["operator", alsoUses],
    ...controllers.map((c): [RbacPart, readonly ResourceType[]] => [partOfController(c.name), all]),
  ];
  return parts.flatMap(([part, types]) =>
    partChecks(part, types, namespaces).map((check) => ({ check, part }))
  );
}

/**
 * The problem of `denied` checks: every denied verb and resource, and for each part one fix
 * naming what it misses and the role that grants it (istiod's checks: what `extra` says).
 */
export function forbiddenByPart(
  denied: readonly AccessCheck[],
  parts: ReadonlyMap<AccessCheck, RbacPart>,
  extra: ReadonlyMap<AccessCheck, string>,
): Problem {
  const fixes = new Map<string, AccessCheck[]>();
  for (const c of denied) {
    const part = parts.get(c);
    const fix = part ? grantOf(part) : extra.get(c) ?? "grant it";
    fixes.set(fix, [...(fixes.get(fix) ?? []), c]);
  }
  return forbiddenMessage(
    deniedText(denied),
    [...fixes].map(([fix, checks]) =>
      parts.has(checks[0]) ? `${fix}: missing ${deniedText(checks).join("; ")}` : fix
    ),
  );
}

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
  const alsoUses = [
    RESOURCES.Event,
    ...(opts.leaderElect ? [RESOURCES.Lease] : []),
    // Reviewing the scrapers of /metrics (metrics_endpoint.ts).
    ...(metricsReviewed(opts.metricsAddr)
      ? [RESOURCES.TokenReview, RESOURCES.SubjectAccessReview]
      : []),
  ];
  const leaseNamespace = opts.leaderElect ? opts.leaseNamespace : undefined;
  const access = enabledAccess(controllers, alsoUses, leaseNamespace);
  // Finding istiod's replicas (--istiod-service): its EndpointSlices, in its namespace only.
  const istiod = discoveryChecks(opts.istiodServices);
  const parts = new Map(access.map((a) => [a.check, a.part]));
  const extra = new Map(istiod.map((e) => [e.check, e.grantedBy]));
  return preflight(cluster, {
    types,
    alsoUses,
    leaseNamespace,
    alsoChecks: istiod,
    access: {
      checks: access.map((a) => a.check),
      forbidden: (denied) => forbiddenByPart(denied, parts, extra),
    },
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
