/**
 * Watches the RateLimits of one namespace and notes when each first shows `status.state: Ready`,
 * so a run can ask when the n-th became Ready. The same observer times the operator, the baseline
 * client and the peer (whose RateLimits are of its own type, with the same `status.state`).
 */
import type { LiveCluster } from "../../src/kube/live_cluster.ts";
import { RESOURCES } from "../../src/api/resources.ts";
import type { KubeObject, ResourceType } from "../../src/api/object.ts";
import { followRateLimits } from "./follow.ts";

function isReady(obj: KubeObject): boolean {
  return (obj.status as { state?: unknown } | undefined)?.state === "Ready";
}

/** A watch on one namespace's RateLimits that counts the Ready ones. */
export class ReadyWatch {
  readonly #ready = new Map<string, number>();
  readonly #stop = new AbortController();
  #waiters: { n: number; resolve: (ms: number) => void }[] = [];
  #task: Promise<void> = Promise.resolve();
  #error: unknown;

  constructor(
    readonly api: LiveCluster,
    readonly namespace: string,
    readonly type: ResourceType = RESOURCES.RateLimit,
  ) {}

  /** Lists, then watches until stopped; resolves once the first list is done. */
  start(): Promise<void> {
    return new Promise((listed, failed) => {
      this.#task = followRateLimits(
        this.api,
        this.namespace,
        (o, how) => how !== "DELETED" && this.#see(o),
        this.#stop.signal,
        () => listed(),
        this.type,
      ).catch((e) => {
        this.#error = e;
        failed(e);
      });
    });
  }

  #see(obj: KubeObject): void {
    if (!isReady(obj) || this.#ready.has(obj.metadata.name)) return;
    this.#ready.set(obj.metadata.name, Date.now());
    const count = this.#ready.size;
    this.#waiters = this.#waiters.filter((w) => {
      if (count < w.n) return true;
      w.resolve(Date.now());
      return false;
    });
  }

  /** Number of RateLimits seen Ready so far. */
  get count(): number {
    return this.#ready.size;
  }

  /** Epoch ms when `n` RateLimits were Ready; rejects after `timeoutMs` saying how many were. */
  async whenReady(n: number, timeoutMs: number): Promise<number> {
    if (this.#ready.size >= n) return Math.max(...this.#ready.values());
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      return await Promise.race([
        new Promise<number>((resolve) => this.#waiters.push({ n, resolve })),
        new Promise<number>((_, reject) => {
          timer = setTimeout(() => {
            const why = this.#error ? `; the watch failed: ${this.#error}` : "";
            reject(
              new Error(
                `only ${this.#ready.size} of ${n} RateLimits in ${this.namespace} Ready after ${timeoutMs} ms${why}`,
              ),
            );
          }, timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Stops watching. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#task;
  }
}
