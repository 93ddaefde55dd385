/**
 * The real control plane of the cluster benches (tools/cluster), with the operator's CRDs, a kwok
 * node that takes many Pods, and an admin client for creating objects quickly (direct API calls,
 * many at once) and for deleting what a run made.
 */
import { join } from "node:path";
import { RESOURCES } from "../../src/api/resources.ts";
import { LiveCluster } from "../../src/kube/live_cluster.ts";
// The control plane's kubeconfigs are YAML.
import "../../src/kube/kubeconfig_yaml.ts";
import { inParallel, isApiError } from "../../src/runtime/mod.ts";
import { type KubeObject, type ResourceType } from "../../src/api/object.ts";
import { readCrds, REPO_ROOT } from "../../tools/operator/process.ts";
import { type ClusterHandle, ensureBuilt, up } from "../../tools/cluster/mod.ts";
import { BENCH_NODE, benchNodeObject, namespaceObject } from "../fixtures.ts";

/** Where the benches' cluster lives (its data, logs, and the operators' logs). */
export const BENCH_DIR = join(REPO_ROOT, ".cache", "bench");

const NODE: ResourceType = {
  group: "",
  version: "v1",
  kind: "Node",
  plural: "nodes",
  namespaced: false,
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Calls `fn` again on throttling, server errors and dropped connections (5 tries). */
export async function retrying<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1;; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt >= 5 || !isApiError(err, 0, 429, 500, 502, 503, 504)) throw err;
      await sleep(100 * 2 ** attempt);
    }
  }
}

/** Polls `probe` every `intervalMs` until it is truthy; throws naming `what` after `timeoutMs`. */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  timeoutMs: number,
  intervalMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await sleep(intervalMs);
  }
}

/** The running control plane and an admin client. */
export class BenchCluster {
  private constructor(readonly handle: ClusterHandle, readonly api: LiveCluster) {}

  /**
   * Builds the binaries if needed, starts the control plane, installs the CRDs and the bench node.
   * `mesh`: with a real istiod (`up({ mesh: true })`); `dir`: another cluster directory.
   */
  static async up(
    log: (msg: string) => void,
    opts: { dir?: string; mesh?: boolean } = {},
  ): Promise<BenchCluster> {
    await ensureBuilt(log);
    const handle = await up({
      dir: opts.dir ?? join(BENCH_DIR, "cluster"),
      log,
      ...(opts.mesh ? { mesh: true } : {}),
    });
    const api = LiveCluster.connect({ kubeconfig: handle.kubeconfig, requestTimeoutMs: 60_000 });
    const env = new BenchCluster(handle, api);
    try {
      const { names, yaml } = await readCrds();
      await env.kubectl(["apply", "--server-side", "--force-conflicts", "-f", "-"], yaml);
      await env.kubectl([
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        ...names.map((n) => `crd/${n}`),
      ]);
      await api.create(NODE, benchNodeObject());
      await until(`node ${BENCH_NODE} Ready`, async () => {
        const node = await api.get(NODE, undefined, BENCH_NODE);
        const conds = (node?.status as { conditions?: { type: string; status: string }[] })
          ?.conditions;
        return conds?.some((c) => c.type === "Ready" && c.status === "True");
      }, 60_000);
    } catch (e) {
      await env.down();
      throw e;
    }
    return env;
  }

  /** Runs kubectl as admin; throws with its output on a non-zero exit. */
  async kubectl(args: string[], stdin?: string): Promise<string> {
    const r = await this.handle.kubectl(args, { timeoutMs: 300_000, ...(stdin ? { stdin } : {}) });
    if (r.code !== 0) {
      throw new Error(`kubectl ${args.join(" ")} exited ${r.code}: ${r.stderr}${r.stdout}`);
    }
    return r.stdout;
  }

  /** Creates a namespace (no error when it exists). */
  async namespace(name: string): Promise<void> {
    try {
      await this.api.create(RESOURCES.Namespace, namespaceObject(name));
    } catch (e) {
      if (!isApiError(e, 409)) throw e;
    }
  }

  /**
   * Creates objects (Pods, RateLimits, and objects of `extraTypes`) with `width` requests in
   * flight; resolves with the wall milliseconds taken.
   */
  async createAll(
    objects: readonly KubeObject[],
    width = 16,
    extraTypes: readonly ResourceType[] = [],
  ): Promise<number> {
    const t0 = performance.now();
    await inParallel(objects, width, async (obj) => {
      const type = [RESOURCES.Pod, RESOURCES.RateLimit, ...extraTypes].find((t) =>
        t.kind === obj.kind && obj.apiVersion === (t.group ? `${t.group}/${t.version}` : t.version)
      );
      if (!type) throw new Error(`createAll: unexpected kind ${obj.kind} of ${obj.apiVersion}`);
      await retrying(() => this.api.create(type, obj));
    });
    return performance.now() - t0;
  }

  /** Deletes namespaces and waits until they are gone (their objects with them). */
  async deleteNamespaces(names: readonly string[], timeoutMs = 600_000): Promise<void> {
    await Promise.all(names.map((n) => this.api.delete(RESOURCES.Namespace, undefined, n)));
    for (const n of names) {
      await until(
        `namespace ${n} to be gone`,
        async () => (await this.api.get(RESOURCES.Namespace, undefined, n)) === undefined,
        timeoutMs,
        1000,
      );
    }
  }

  /** Stops the control plane and removes its data. */
  async down(): Promise<void> {
    this.api.close();
    await this.handle.down();
  }
}
