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
