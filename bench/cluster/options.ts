/**
 * The control-plane benches' sizes and phases: defaults for a quick run (CI with --cluster) and
 * for the full run, which `deno task bench` flags narrow.
 */
/** Sizes of the control-plane benches. */
export interface ClusterOptions {
  /** RateLimits (and Pods) of a convergence run. */
  count: number;
  /** Rules of each RateLimit. */
  rules: number;
  /** Convergence runs (each: the baseline, then every subject). */
  runs: number;
  /** Length of the window at rest (the peer requeues every 3 minutes: a full run covers that). */
  steadyMs: number;
  /** RateLimits (with Pods, 1,000 a namespace) of the largest memory figure. */
  memoryMax: number;
  /** A small convergence (memory and time for the plot); undefined: none. */
  small?: number;
  /** Also converge `memoryMax` RateLimits in one namespace, operator against the baseline. */
  oneNamespace: boolean;
  /** Start-up measurements. */
  startupRuns: number;
  /**
   * Starts of the crowded phase measured for memory, each settled (peak over settled is judged by
   * the median of their ratios: one reading moved across the 10% line between runs).
   */
  memoryRuns: number;
  /** Create requests in flight. */
  width: number;
  /** Checkout of kyma-project/api-gateway to build the peer from; undefined: no peer. */
  peer?: string;
  /** An image tag (`./deno task image`) whose operator is measured as a subject of its own. */
  image?: string;
  /** The latency phase: RateLimits Ready, and changes of each kind timed among them. */
  latency: { size: number; changes: number };
  /** The phases to run (default: all of CLUSTER_PHASES); startup needs converge. */
  phases?: readonly ClusterPhase[];
}

/** The control-plane benches' phases, in run order (`--phases=`). */
export const CLUSTER_PHASES = [
  "idle",
  "small",
  "converge",
  "startup",
  "latency",
  "scale",
  "namespace",
  "crowded",
] as const;
/** One phase of the control-plane benches. */
export type ClusterPhase = typeof CLUSTER_PHASES[number];

/** Default sizes: `quick` (CI with --cluster) or the full run of issues 7 and 14. */
export function clusterOptions(quick: boolean, peer?: string): ClusterOptions {
  const common = { rules: 4, width: 16, ...(peer ? { peer } : {}) };
  return quick
    ? {
      ...common,
      count: 100,
      runs: 1,
      steadyMs: 10_000,
      memoryMax: 1_000,
      oneNamespace: false,
      startupRuns: 1,
      memoryRuns: 1,
      latency: { size: 100, changes: 10 },
    }
    : {
      ...common,
      count: 1_000,
      runs: 3,
      steadyMs: 240_000,
      memoryMax: 10_000,
      small: 100,
      oneNamespace: true,
      // Seven, not three: a start-up is under half a second, and one slow API answer moves it.
      startupRuns: 7,
      memoryRuns: 3,
      latency: { size: 1_000, changes: 50 },
    };
}
