/**
 * A replica started after its previous container was OOM-killed says so itself (issue #45 point
 * 4): on start it reads its own Pod (its name the identity, POD_NAME; its namespace the
 * ServiceAccount's mounted one) and, when the Pod's status says the last container ended
 * `OOMKilled`, writes a Warning Event on the Pod and sets a gauge to the kill's time (`platform_operator_last_oom_kill_timestamp_seconds`), which
 * deploy/monitoring's PlatformOperatorOOMKilled alert reads. Outside a Pod (no mounted namespace)
 * it does nothing. Only what the Pod's status shows is said; a failed read is logged, not guessed.
 */
import type { KubeObject } from "../api/object.ts";
import { RESOURCES } from "../api/resources.ts";
import {
  type Clock,
  type Cluster,
  errorMessage,
  eventName,
  eventObject,
  type Logger,
  type Metrics,
} from "../runtime/mod.ts";

/** Where a Pod's ServiceAccount namespace is mounted. */
const NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/** The Event's reason. */
export const OOM_KILL_REASON = "OOMKilled";

interface PodView extends KubeObject {
  spec?: { containers?: { name: string; resources?: { limits?: { memory?: string } } }[] };
  status?: {
    containerStatuses?: {
      name: string;
      restartCount?: number;
      lastState?: { terminated?: { reason?: string; finishedAt?: string; exitCode?: number } };
    }[];
  };
}

/** What {@link reportOomRestart} needs. */
export interface OomRestartOptions {
  cluster: Cluster;
  metrics: Metrics;
  log: Logger;
  clock: Clock;
  /** This replica's Pod name (its identity). */
  pod: string;
  /** Its namespace; default the mounted ServiceAccount's (none: not in a Pod, nothing done). */
  namespace?: () => Promise<string | undefined>;
}

async function mountedNamespace(): Promise<string | undefined> {
  try {
    return (await Deno.readTextFile(NAMESPACE_FILE)).trim() || undefined;
  } catch {
    return undefined;
  }
}

/**
 * Reads this replica's Pod; when its last container was OOM-killed, records it (gauge, Warning
 * Event, a log line). Resolves with the kill's time (epoch ms) or undefined; never throws.
 */
export async function reportOomRestart(o: OomRestartOptions): Promise<number | undefined> {
  const namespace = await (o.namespace ?? mountedNamespace)();
  if (!namespace) return undefined;
  let pod: PodView | undefined;
  try {
    pod = await o.cluster.get(RESOURCES.Pod, namespace, o.pod) as PodView | undefined;
  } catch (err) {
    o.log.warn("could not read this replica's Pod to see whether it was OOM-killed", {
      pod: `${namespace}/${o.pod}`,
      error: errorMessage(err),
    });
    return undefined;
  }
  if (!pod) return undefined;
  const gauge = o.metrics.lastOomKill;
  const killed = pod.status?.containerStatuses?.find((c) =>
    c.lastState?.terminated?.reason === OOM_KILL_REASON
  );
  const finishedAt = Date.parse(killed?.lastState?.terminated?.finishedAt ?? "");
  if (!killed || Number.isNaN(finishedAt)) {
    gauge.set({}, 0);
    return undefined;
  }
  gauge.set({}, finishedAt / 1000);
  const limit = pod.spec?.containers?.find((c) => c.name === killed.name)?.resources?.limits
    ?.memory;
  const message =
    `container ${killed.name} was OOM-killed at ${killed.lastState?.terminated?.finishedAt} and restarted (restart ${
      killed.restartCount ?? "?"
    }); its memory limit is ${
      limit ?? "not set"
    }: raise it for the cluster's size (docs/faults.md, memory)`;
  o.log.warn("this replica's previous container was OOM-killed", {
    pod: `${namespace}/${o.pod}`,
    message,
  });
  const ev = { type: "Warning" as const, reason: OOM_KILL_REASON, message };
  try {
    await o.cluster.create(
      RESOURCES.Event,
      eventObject(pod, ev, o.clock.now(), o.pod, eventName(pod, ev)),
    );
  } catch (err) {
    o.log.warn("could not record the OOM kill as an Event", { error: errorMessage(err) });
  }
  return finishedAt;
}
