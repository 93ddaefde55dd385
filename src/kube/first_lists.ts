/**
 * How the first list of each type was answered, for the startup checks: a manager lists every type
 * it watches anyway, and its first page answers what a check's one-item probe would ask (is the
 * type served, do the credentials work, is the server reachable), so the first checks send no
 * probe of their own beside the lists.
 */
import { resourceName, type ResourceType } from "../api/object.ts";
import { type Cluster, forwardingTo } from "../runtime/mod.ts";

/** How a list was answered: undefined when it succeeded, else what it failed with. */
export type ListAnswer = Promise<unknown>;

/** A Cluster whose first list of each type (its first page) is remembered. */
export interface FirstLists {
  /** The cluster to list through; every call goes to the wrapped one unchanged. */
  readonly cluster: Cluster;
  /** The answer to the first list of `type`, or undefined when none has been sent yet. */
  answer(type: ResourceType): ListAnswer | undefined;
}

/** Wraps `cluster` so that the first page listed of each type is remembered (`answer`). */
export function recordFirstLists(cluster: Cluster): FirstLists {
  const answers = new Map<string, ListAnswer>();
  const recorded: Cluster = {
    ...forwardingTo(cluster),
    list(type, opts) {
      const page = cluster.list(type, opts);
      const key = resourceName(type);
      if (!opts?.continue && !answers.has(key)) {
        answers.set(key, page.then(() => undefined, (err: unknown) => err));
      }
      return page;
    },
  };
  return { cluster: recorded, answer: (type) => answers.get(resourceName(type)) };
}
