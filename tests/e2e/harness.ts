/**
 * The e2e harness: one real control plane per test file (`e2eSuite`), the CRDs installed with the
 * real kubectl, the operator as separate processes, and polling helpers. The suite is skipped only
 * when the control-plane binaries are not built and no Go toolchain can build them.
 */
import { join } from "node:path";
import { buildStatus, type ClusterHandle, ensureBuilt, up } from "../../tools/cluster/mod.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { Kube } from "./kube.ts";
import { startWatchdog, type Watchdog } from "./watchdog.ts";
import { describe, statusMatches, type StatusWant } from "./status.ts";
import {
  type OperatorOptions,
  OperatorProcess,
  readCrds,
  REPO_ROOT,
} from "../../tools/operator/process.ts";
import { killLeftovers } from "../../tools/operator/leftovers.ts";
export { readCrds };

export { Kube } from "./kube.ts";
export { OperatorProcess } from "./operator.ts";

/** Why the e2e suite cannot run here, or undefined when it can. */
export const SKIP_REASON: string | undefined = await (async () => {
  const { stale, goAvailable } = await buildStatus();
  if (stale.length === 0 || goAvailable) return undefined;
  return `no "go" on PATH and the control-plane binaries (${stale.join(", ")}) are not built`;
})();

if (SKIP_REASON) {
  const bar = "!".repeat(100);
  console.error(
    `${bar}\n!!! E2E TESTS SKIPPED: ${SKIP_REASON}.\n!!! Install Go 1.26 to run them.\n${bar}`,
  );
}

/** Working directory of a suite: cluster dir, operator logs. Kept on failure for reading. */
export function suiteDir(name: string): string {
  return join(REPO_ROOT, ".cache", "e2e", name);
}

/** Options of {@link waitFor}. */
export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `probe` until it returns something other than undefined/false and returns that. Errors
 * thrown by `probe` count as "not yet". On timeout the error names `what` and the last value or
 * error seen by `describe` (default: the last probe error).
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  opts: WaitOptions & { describe?: () => Promise<string> } = {},
): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() >= deadline) break;
    await sleep(opts.intervalMs ?? 250);
  }
  const detail = opts.describe
    ? await opts.describe().catch((e) => String(e))
    : lastError
    ? String(lastError)
    : "";
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}${detail ? `\nlast seen: ${detail}` : ""}`,
  );
}

/** Options of a suite's cluster. */
/** One suite's environment: the cluster, kubectl helpers, and the operators it started. */
export class E2E {
  readonly kube: Kube;
  readonly #operators = new Set<OperatorProcess>();
  /** True once any step failed. */
  failed = false;

  private constructor(
    readonly name: string,
    readonly dir: string,
    readonly cluster: ClusterHandle,
    readonly watchdog: Watchdog,
  ) {
    this.kube = new Kube(cluster);
  }

  /**
   * Starts the control plane for suite `name` (building the binaries first if needed), with the
   * real node when `realNode` is set.
   */
  static async up(name: string, o: SuiteOptions = {}): Promise<E2E> {
    const dir = suiteDir(name);
    await killLeftovers(join(dir, "logs"), join(dir, "cluster"));
    await Deno.remove(join(dir, "logs"), { recursive: true }).catch(() => {});
    const log = (m: string) => console.error(`[cluster ${name}] ${m}`);
    const t0 = performance.now();
    await ensureBuilt(log);
    const built = performance.now();
    const cluster = await up({ dir: join(dir, "cluster"), log, realNode: o.realNode });
    const watchdog = await startWatchdog(cluster.dir, join(dir, "watchdog.log"));
    console.error(
      `[cluster ${name}] build check ${((built - t0) / 1000).toFixed(1)} s, up ${
        ((performance.now() - built) / 1000).toFixed(1)
      } s`,
    );
    return new E2E(name, dir, cluster, watchdog);
  }

  /** Installs the CRDs of `crds/` and waits until they are Established. */
  async installCrds(): Promise<string[]> {
    const { names, yaml } = await readCrds();
    if (names.length === 0) {
      throw new Error(`no CustomResourceDefinition found in ${join(REPO_ROOT, "crds")}`);
    }
    await this.kube.apply(yaml, ["--server-side", "--force-conflicts"]);
    await this.kube.must([
      "wait",
      "--for=condition=Established",
      "--timeout=60s",
      ...names.map((n) => `crd/${n}`),
    ]);
    return names;
  }

  /** Starts an operator replica against this cluster as deploy/'s ServiceAccount (its token). */
  async startOperator(
    o: Partial<OperatorOptions> & { identity: string },
  ): Promise<OperatorProcess> {
    const op = await OperatorProcess.start({
      kubeconfig: this.cluster.operatorKubeconfig,
      logDir: join(this.dir, "logs"),
      ...o,
    });
    this.#operators.add(op);
    return op;
  }

  /** Starts a replica and waits until its probe endpoint answers. */
  async startServing(o: Partial<OperatorOptions> & { identity: string }): Promise<OperatorProcess> {
    const op = await this.startOperator(o);
    await op.waitServing();
    return op;
  }

  /** Waits until the object shows `want` in its status; returns it. */
  waitStatus(
    resource: string,
    namespace: string | undefined,
    name: string,
    want: StatusWant,
    opts: WaitOptions = {},
  ): Promise<KubeObject> {
    let last: KubeObject | undefined;
    return waitFor(
      `${resource} ${namespace ?? ""}/${name} to show ${JSON.stringify(want)}`,
      async () => {
        last = await this.kube.get(resource, name, namespace);
        return last && statusMatches(last, want) ? last : undefined;
      },
      { timeoutMs: 90_000, ...opts, describe: () => Promise.resolve(describe(last)) },
    );
  }

  /** Waits until the object no longer exists. */
  async waitGone(
    resource: string,
    namespace: string | undefined,
    name: string,
    opts: WaitOptions = {},
  ): Promise<void> {
    let last: KubeObject | undefined;
    await waitFor(`${resource} ${namespace ?? ""}/${name} to be gone`, async () => {
      last = await this.kube.get(resource, name, namespace);
      return last === undefined;
    }, { timeoutMs: 90_000, ...opts, describe: () => Promise.resolve(describe(last)) });
  }

  /** Operators started by this suite that are still running. */
  get running(): OperatorProcess[] {
    return [...this.#operators].filter((o) => o.running);
  }

  /** Stops (SIGTERM) every operator that is still running. */
  async stopOperators(): Promise<void> {
    await Promise.all(this.running.map((o) => o.stop()));
  }

  /** Prints the log tails of every operator started so far (for a failed step). */
  async dumpOperatorLogs(lines = 30): Promise<void> {
    for (const op of this.#operators) {
      console.error(
        `--- operator ${op.identity} (pid ${op.pid}) ${op.logPath}\n${await op.logTail(lines)}`,
      );
    }
  }

  /** Stops the operators and the cluster; keeps the logs when `failed`. */
  async down(failed: boolean): Promise<void> {
    await this.stopOperators().catch((e) => console.error(`stopping operators: ${e}`));
    await this.watchdog.stop();
    await this.cluster.down({ keepLogs: failed });
    if (failed) console.error(`[cluster ${this.name}] logs kept in ${this.dir}`);
  }

  /**
   * Runs one named step; on failure prints the operators' log tails. Returns whether it passed
   * (later steps still run; the suite fails if any step failed).
   */
  async step(t: Deno.TestContext, name: string, fn: () => Promise<void>): Promise<boolean> {
    return await t.step(name, async () => {
      const t0 = performance.now();
      try {
        await fn();
      } catch (e) {
        this.failed = true;
        await this.dumpOperatorLogs();
        throw e;
      } finally {
        console.error(
          `[${this.name}] step "${name}" took ${((performance.now() - t0) / 1000).toFixed(1)} s`,
        );
      }
    });
  }
}

/** Options of a suite's cluster. */
export interface SuiteOptions {
  /** Start the cluster with its real node (kubelet, containerd, runc). */
  realNode?: boolean;
  /** Why this suite cannot run here besides {@link SKIP_REASON} ("" or undefined: it can). */
  skip?: string;
}

/**
 * Declares one e2e suite: a Deno test that brings up its own control plane, runs `fn`, and brings
 * everything down even when `fn` fails. Skipped only when {@link SKIP_REASON} or `o.skip` is set.
 */
export function e2eSuite(
  name: string,
  fn: (env: E2E, t: Deno.TestContext) => Promise<void>,
  o: SuiteOptions = {},
): void {
  Deno.test({
    name: `e2e: ${name}`,
    ignore: SKIP_REASON !== undefined || Boolean(o.skip),
    // The cluster, the operators and kubectl are child processes that outlive single steps.
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async (t) => {
      const env = await E2E.up(name, o);
      let failed = true;
      try {
        await fn(env, t);
        failed = false;
      } finally {
        await env.down(failed || env.failed);
      }
    },
  });
}
