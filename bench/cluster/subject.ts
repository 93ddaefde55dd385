/**
 * What the control-plane benches measure, the same way for each: this operator, and the peer
 * (Kyma's RateLimit controller) when a checkout is given. Each is started as its own process
 * against the bench's cluster and read through its metrics, /proc and its log.
 */
import { RESOURCES } from "../../src/api/resources.ts";
import type { ResourceType } from "../../src/api/object.ts";
import { OPERATOR_USER } from "../../tools/cluster/mod.ts";
import { join } from "node:path";
import { BENCH_DIR, type BenchCluster } from "./env.ts";
import {
  extraDenoArgs,
  type FirstReconcile,
  firstReconcileOf,
  metricSum,
  OPERATOR_ROOT_ENV,
  operatorWork,
  startOperator,
  waitIdleBy,
  waitReady,
  type WorkProbe,
} from "./operator.ts";
import { KYMA_RATELIMIT, type PeerAccess, PeerProcess } from "./peer.ts";

/** One running subject. */
export interface Running {
  readonly pid: number;
  /** Waits until its queues are empty and it made no reconcile for `quietMs`; its reconciles. */
  waitIdle(quietMs: number, timeoutMs: number): Promise<number>;
  /** When its first reconcile began and ended, from its log; undefined until one began. */
  firstReconcile(): Promise<FirstReconcile | undefined>;
  /** What its own metrics say of its memory (the operator's JavaScript heap), if anything. */
  memoryNote(): Promise<string>;
  stop(): Promise<void>;
}

/** A subject of the benches. */
export interface Subject {
  /** "operator", "image" (the operator in its image) or "peer". */
  readonly key: "operator" | "image" | "peer";
  /** How the report names it. */
  readonly label: string;
  /** The RateLimit type it reconciles. */
  readonly type: ResourceType;
  /** The user its API writes are audited as. */
  readonly user: string;
  /** Starts it and waits until it serves and leads; `debug`: log every reconcile. */
  start(identity: string, debug?: boolean): Promise<Running>;
}

/**
 * This operator, as `deno task start` runs it (see operator.ts), or with `image` as that image runs
 * it (`podman run`, tools/operator/container.ts).
 */
export function operatorSubject(
  env: BenchCluster,
  image?: string,
  tree?: { root: string; label: string },
): Subject {
  const root = image ? undefined : tree?.root ?? (Deno.env.get(OPERATOR_ROOT_ENV) || undefined);
  // Deno flags the bench was asked to add (OPERATOR_V8_FLAGS_ENV) are named in the label.
  const flags = image ? "" : extraDenoArgs().map((a) => ` ${a}`).join("");
  return {
    key: image ? "image" : "operator",
    label: image
      ? `operator in its image`
      : tree
      ? `${tree.label}${flags}`
      : root
      ? `operator (${root})${flags}`
      : `operator${flags}`,
    type: RESOURCES.RateLimit,
    user: OPERATOR_USER,
    async start(identity, debug = false) {
      const op = await startOperator(
        env.handle.operatorKubeconfig,
        identity,
        debug ? "debug" : "info",
        root,
        image,
      );
      await waitReady(op);
      return running(op.pid, `operator ${identity}`, operatorWork(op), {
        first: () => firstReconcileOf(op),
        stop: async () => void await op.stop(),
        memory: async () => {
          const text = await op.metrics() ?? "";
          const mb = (kind: string) =>
            (metricSum(text, "platform_operator_memory_bytes", { kind }) / 1048576).toFixed(1);
          return `JavaScript heap ${mb("heap_used")} MB used of ${mb("heap_total")} MB`;
        },
      });
    },
  };
}

/**
 * Kyma's RateLimit controller built from `binary` (see peer.ts), acting as `access`: its own
 * ServiceAccount (`preparePeer`), so the audit log counts its writes apart from the bench's.
 */
export function peerSubject(env: BenchCluster, binary: string, access: PeerAccess): Subject {
  return {
    key: "peer",
    label: "peer",
    type: KYMA_RATELIMIT,
    user: access.user,
    async start(identity) {
      const p = await PeerProcess.start(env, binary, access, identity, join(BENCH_DIR, "logs"));
      try {
        await p.waitReady(env);
      } catch (e) {
        await p.stop();
        throw e;
      }
      const work: WorkProbe = async () => {
        const text = await p.metrics();
        if (!text) return undefined;
        return {
          total: metricSum(text, "controller_runtime_reconcile_total", { controller: "ratelimit" }),
          depth: metricSum(text, "workqueue_depth", { name: "ratelimit" }),
        };
      };
      return running(p.pid, `peer ${identity}`, work, {
        first: () => p.firstReconcile(),
        stop: () => p.stop(),
        memory: async () => {
          const text = await p.metrics() ?? "";
          const mb = (name: string) => (metricSum(text, name) / 1048576).toFixed(1);
          return `Go heap ${mb("go_memstats_heap_inuse_bytes")} MB in use, ${
            mb("go_memstats_heap_released_bytes")
          } MB released`;
        },
      });
    },
  };
}

function running(
  pid: number,
  what: string,
  work: WorkProbe,
  o: {
    first: () => Promise<FirstReconcile | undefined>;
    stop: () => Promise<void>;
    memory: () => Promise<string>;
  },
): Running {
  return {
    pid,
    waitIdle: (quietMs, timeoutMs) => waitIdleBy(what, work, quietMs, timeoutMs),
    firstReconcile: o.first,
    memoryNote: () => o.memory().catch(() => ""),
    stop: o.stop,
  };
}
