/**
 * Follows the RateLimits of one namespace: a list, then a watch from its resourceVersion, again
 * from a fresh list whenever the watch fails (410 Gone, a stall, a dropped connection), so an
 * observer never silently stops seeing objects during a long run.
 */
import { RESOURCES } from "../../src/api/resources.ts";
import type { LiveCluster } from "../../src/kube/live_cluster.ts";
import type { KubeObject, ResourceType } from "../../src/api/object.ts";

/** How an object reached an observer: in a (re)list, or by a watch event. */
export type Seen = "LISTED" | "ADDED" | "MODIFIED" | "DELETED";

/**
 * Calls `see` with every object of `type` (RateLimits: the operator's by default, or the peer's;
 * any namespaced type) of `namespace` listed, added, modified or deleted, until `signal` aborts.
 */
export async function followRateLimits(
  api: LiveCluster,
  namespace: string,
  see: (obj: KubeObject, event: Seen) => void,
  signal: AbortSignal,
  /** Resolved after the first list, with its items seen. */
  onListed: () => void = () => {},
  type: ResourceType = RESOURCES.RateLimit,
): Promise<void> {
  let listed = false;
  let failures = 0;
  while (!signal.aborted) {
    try {
      const page = await api.list(type, { namespace });
      for (const o of page.items) see(o, "LISTED");
      if (!listed) onListed();
      listed = true;
      let rv = page.resourceVersion;
      while (!signal.aborted) {
        const events = api.watch(
          type,
          { namespace, resourceVersion: rv, timeoutSeconds: 60, allowWatchBookmarks: true },
          signal,
        );
        for await (const ev of events) {
          if (ev.type === "ERROR") throw new Error(`watch error: ${JSON.stringify(ev.object)}`);
          rv = ev.object.metadata.resourceVersion ?? rv;
          if (ev.type === "ADDED" || ev.type === "MODIFIED" || ev.type === "DELETED") {
            see(ev.object, ev.type);
          }
        }
      }
    } catch (err) {
      if (signal.aborted) return;
      // A fresh API server answers "storage is (re)initializing" for a few seconds: retry the
      // first list for about 10 s, then give up on it; later failures only restart the watch.
      if (!listed && ++failures > 20) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/**
 * Waiters on what a follower saw: `until` checks a condition at once and again after every
 * `wake()` (an event seen) and at least once a second, until it holds or a deadline passes.
 */
export class Waiters {
  #wake: (() => void)[] = [];

  /** Wakes every waiter (call it after each event seen). */
  wake(): void {
    const wake = this.#wake;
    this.#wake = [];
    wake.forEach((w) => w());
  }

  /** `check()`'s first value that is not undefined; undefined at `deadline` (performance.now()). */
  async until<T>(check: () => T | undefined, deadline: number): Promise<T | undefined> {
    for (;;) {
      const v = check();
      if (v !== undefined) return v;
      const left = deadline - performance.now();
      if (left <= 0) return undefined;
      let timer: ReturnType<typeof setTimeout> | undefined;
      await new Promise<void>((resolve) => {
        this.#wake.push(resolve);
        timer = setTimeout(resolve, Math.min(left, 1_000));
      });
      clearTimeout(timer);
    }
  }
}

/** A status condition as the benches read it from a followed object. */
export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  observedGeneration?: number;
}

/** The condition `type` of `o`'s status, if any. */
export const conditionOf = (o: KubeObject, type: string): Condition | undefined =>
  ((o.status as { conditions?: Condition[] } | undefined)?.conditions ?? []).find((c) =>
    c.type === type
  );
