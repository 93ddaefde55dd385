/** A `Cluster` that counts every API call into the operator's metrics, by verb and status code. */
import type { ResourceType } from "../api/object.ts";
import { ApiError, type Cluster, type WatchEvent, type WatchOptions } from "./cluster.ts";
import type { Metrics } from "./metrics.ts";

/**
 * Wraps a Cluster so that every call counts into `api_requests_total{verb,code}`. The verb is
 * the Kubernetes verb (`list`, `watch`, `get`, `create`, `update`, `patch`, `delete`; apply and
 * status apply count as `patch`); the code is 200/201 on success, the ApiError code on failure.
 * Wrapping an already instrumented cluster into the same metrics returns it unchanged.
 */
export function instrumentCluster(cluster: Cluster, metrics: Metrics): Cluster {
  // Wrapping twice into the same metrics would count every call twice: the Manager wraps what it
  // is given, and callers may have wrapped it already.
  if (instrumented.get(cluster) === metrics) return cluster;
  const wrapped = wrap(cluster, metrics);
  instrumented.set(wrapped, metrics);
  return wrapped;
}

const instrumented = new WeakMap<Cluster, Metrics>();

function wrap(cluster: Cluster, metrics: Metrics): Cluster {
  const count = (verb: string, code: number) =>
    metrics.apiRequests.inc({ verb, code: String(code) });
  async function call<T>(verb: string, ok: number, f: () => Promise<T>): Promise<T> {
    try {
      const r = await f();
      count(verb, ok);
      return r;
    } catch (err) {
      count(verb, err instanceof ApiError ? err.code : 0);
      throw err;
    }
  }
  return {
    list: (t, o) => call("list", 200, () => cluster.list(t, o)),
    watch: (t, o, signal) => countWatch(cluster, t, o, signal, count),
    get: (t, ns, n) => call("get", 200, () => cluster.get(t, ns, n)),
    create: (t, o, opts) => call("create", 201, () => cluster.create(t, o, opts)),
    update: (t, o, opts) => call("update", 200, () => cluster.update(t, o, opts)),
    apply: (t, o, opts) => call("patch", 200, () => cluster.apply(t, o, opts)),
    applyStatus: (t, o, opts) => call("patch", 200, () => cluster.applyStatus(t, o, opts)),
    patch: (t, ns, n, ops, opts) => call("patch", 200, () => cluster.patch(t, ns, n, ops, opts)),
    delete: (t, ns, n, o) => call("delete", 200, () => cluster.delete(t, ns, n, o)),
  };
}

async function* countWatch(
  cluster: Cluster,
  type: ResourceType,
  opts: WatchOptions,
  signal: AbortSignal,
  count: (verb: string, code: number) => void,
): AsyncIterable<WatchEvent> {
  let counted = false;
  try {
    for await (const ev of cluster.watch(type, opts, signal)) {
      if (!counted) count("watch", 200);
      counted = true;
      yield ev;
    }
    if (!counted) count("watch", 200);
  } catch (err) {
    if (!counted) count("watch", err instanceof ApiError ? err.code : 0);
    throw err;
  }
}
