/** What a Manager is configured with: its ports, controllers, leader election and timings. */
import type { Clock, Random } from "./clock.ts";
import type { Cluster } from "./cluster.ts";
import type { LocalSource } from "./local_types.ts";
import type { ControllerSpec } from "./controller_spec.ts";
import type { Logger } from "./log.ts";
import type { Metrics } from "./metrics.ts";
import type { ModuleImages } from "../api/images.ts";

/** The operator's namespace when neither `namespace` nor leader election names one. */
export const DEFAULT_NAMESPACE = "platform-system";

/** The leader election Lease's name unless `--lease-name` gives another. */
export const DEFAULT_LEASE_NAME = "platform-operator";

/** The operator's namespace: as given, else the leader election Lease's, else the default. */
export function operatorNamespace(opts: ManagerOptions): string {
  return opts.namespace ??
    (opts.leaderElection ? opts.leaderElection.namespace : DEFAULT_NAMESPACE);
}

/** Lease settings of leader election (client-go's names and meaning). */
export interface LeaderElectionOptions {
  /** Namespace of the coordination.k8s.io/v1 Lease, e.g. `platform-system`. */
  namespace: string;
  /** Name of the Lease, e.g. `platform-operator`. */
  name: string;
  /** How long a lease is valid after its last renewal, as seen by a standby; default 10 000. */
  leaseDurationMs?: number;
  /** The leader stops writing when it could not renew for this long; default 7 000 (< leaseDurationMs). */
  renewDeadlineMs?: number;
  /** Pause between acquire or renew attempts; default 2 000. */
  retryPeriodMs?: number;
}

/** Everything a Manager needs; all I/O and all chance come in here. */
export interface ManagerOptions {
  /** The API (live adapter or simulator), unwrapped: the manager counts calls into its metrics. */
  cluster: Cluster;
  /**
   * Types served from inside the operator (local_types.ts): their lists and watches never reach
   * the API server and do not count as API requests.
   */
  localSources?: readonly LocalSource[];
  clock: Clock;
  random: Random;
  log: Logger;
  /** Metrics to record into; a fresh set is made when absent (see `Manager.metrics`). */
  metrics?: Metrics;
  controllers: ControllerSpec[];
  images: ModuleImages;
  /**
   * The operator's namespace, where it keeps the module claims; default: the leader election
   * Lease's namespace, else `platform-system`.
   */
  namespace?: string;
  /** This replica's name (the pod name): the Lease holder identity and the Events' reporting instance. */
  identity: string;
  /** `false` runs as the only replica: it leads at once (tests, the simulator, local runs). */
  leaderElection: false | LeaderElectionOptions;
  /** Every primary is reconciled again after this long, as a safety net; default 600 000 (10 min). */
  resyncPeriodMs?: number;
  /** Reconciles of one controller running at once (never two of one key); default DEFAULT_CONCURRENCY. */
  concurrency?: number;
  /** Server-side timeout of each watch request; default 300. */
  watchTimeoutSeconds?: number;
  /** A watch that delivers no event or bookmark for this long is aborted and restarted; default 90 000. */
  watchIdleMs?: number;
  /** Page size of the initial list; default DEFAULT_PAGE_SIZE (cache/watcher_state.ts). */
  pageSize?: number;
  /**
   * Reconcile nothing, and be not ready, until `Manager.release()`. The watches list and the Lease
   * is campaigned for meanwhile: start-up runs its cluster checks beside them, not before them.
   */
  held?: boolean;
  /**
   * Told each time this replica stops leading, with the elector's reason: the simulator records a
   * lost lead as a disturbance. Never called without leader election.
   */
  onStoppedLeading?: (reason: string) => void;
}
