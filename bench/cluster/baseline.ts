/**
 * The baseline of the convergence bench: a client with no operator logic that makes the minimum
 * writes a RateLimit needs, one EnvoyFilter apply and one status apply an object, as soon as it
 * sees the object, with as many in flight as the operator reconciles at once. The payloads are the
 * operator's own, computed before the clock starts, so both sides send the same bytes.
 */
import { apiVersionOf, RESOURCES } from "../../src/api/resources.ts";
import type { LiveCluster } from "../../src/kube/live_cluster.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { reconcileRateLimit } from "../../src/reconcile/ratelimit/mod.ts";
import { rateLimitObject } from "../fixtures.ts";
import { retrying } from "./env.ts";
import { followRateLimits, type Seen } from "./follow.ts";

/** Field manager of the baseline's writes. */
export const BASELINE_MANAGER = "bench-baseline";

interface Payload {
  envoyFilter: KubeObject;
  status: Record<string, unknown>;
}

/** The EnvoyFilter and status the operator would write for each of `count` RateLimits. */
export function baselinePayloads(
  count: number,
  rules: number,
  namespace: string,
): Map<string, Payload> {
  const out = new Map<string, Payload>();
  for (let i = 0; i < count; i++) {
    const rl = rateLimitObject({ i, rules, namespace, stored: true });
    const plan = reconcileRateLimit({
      rateLimit: rl,
      peers: [rl],
      pods: [],
      meshInstalled: true,
      now: Date.now(),
    });
    if (!plan.apply[0] || !plan.status) throw new Error(`RateLimit ${i} renders no EnvoyFilter`);
    out.set(rl.metadata.name, { envoyFilter: plan.apply[0], status: plan.status });
  }
  return out;
}

/** Writes one object's EnvoyFilter (owned by the stored RateLimit) and its status. */
async function writeOne(api: LiveCluster, rl: KubeObject, p: Payload): Promise<void> {
  const ef: KubeObject = {
    ...p.envoyFilter,
    metadata: {
      ...p.envoyFilter.metadata,
      ownerReferences: [{
        apiVersion: rl.apiVersion,
        kind: rl.kind,
        name: rl.metadata.name,
        uid: rl.metadata.uid ?? "",
        controller: true,
        blockOwnerDeletion: true,
      }],
    },
  };
  const opts = { fieldManager: BASELINE_MANAGER, force: true };
  await retrying(() => api.apply(RESOURCES.EnvoyFilter, ef, opts));
  await retrying(() =>
    api.applyStatus(RESOURCES.RateLimit, {
      apiVersion: apiVersionOf(RESOURCES.RateLimit),
      kind: "RateLimit",
      metadata: { name: rl.metadata.name, namespace: rl.metadata.namespace },
      status: p.status,
    }, opts)
  );
}

/**
 * Watches `namespace` and handles every RateLimit it sees that has a payload, `width` at once,
 * until all `payloads` are written; resolves with the number of writes made. `onListed` is called
 * once the watch has listed (objects created after it are seen).
 */
export async function runBaseline(
  api: LiveCluster,
  namespace: string,
  payloads: Map<string, Payload>,
  width: number,
  signal: AbortSignal,
  onListed?: () => void,
): Promise<number> {
  const queue: KubeObject[] = [];
  const seen = new Set<string>();
  let sleepers: (() => void)[] = [];
  const wake = () => {
    const s = sleepers;
    sleepers = [];
    s.forEach((r) => r());
  };
  signal.addEventListener("abort", wake, { once: true });
  let writes = 0;
  const see = (o: KubeObject, how: Seen) => {
    if (how === "DELETED" || seen.has(o.metadata.name) || !payloads.has(o.metadata.name)) return;
    seen.add(o.metadata.name);
    queue.push(o);
    wake();
  };
  const stopWatching = new AbortController();
  signal.addEventListener("abort", () => stopWatching.abort(), { once: true });
  let listed!: () => void;
  const ready = new Promise<void>((r) => listed = r);
  const watching = followRateLimits(api, namespace, see, stopWatching.signal, () => listed());
  await Promise.race([ready, watching]);
  onListed?.();
  let done = 0;
  const workers = Array.from({ length: width }, async () => {
    while (done < payloads.size && !signal.aborted) {
      const rl = queue.shift();
      if (!rl) {
        await new Promise<void>((r) => sleepers.push(r));
        continue;
      }
      await writeOne(api, rl, payloads.get(rl.metadata.name)!);
      writes += 2;
      done++;
      wake();
    }
  });
  await Promise.all(workers);
  stopWatching.abort();
  await watching;
  return writes;
}
