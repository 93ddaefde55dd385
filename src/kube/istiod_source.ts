/**
 * Asks istiod, every period, where each connected proxy stands, and publishes the answer as
 * ProxyStatus objects (src/api/istiod.ts) into a LocalSource the runtime watches. One request per
 * istiod a period, whatever the number of proxies; only what changed becomes a watch event, so at
 * rest the RateLimit controller hears nothing.
 *
 * When istiod cannot be asked, istiod's own ProxyStatus says why and the proxies' stay as last
 * seen (a reader must not trust them then); the next tries back off, doubling up to
 * {@link MAX_BACKOFF_MS}, so an istiod that is down or refuses the token is not flooded.
 */
import {
  ISTIOD_STATUS_NAME,
  istiodStatusObject,
  PROXY_STATUS,
  proxyStatusObject,
  type ProxySync,
} from "../api/istiod.ts";
import type { KubeObject } from "../api/object.ts";
import type { Clock, LocalSource, Logger } from "../runtime/mod.ts";
import type { IstiodAnswer, IstiodClient } from "./istiod.ts";
import type { Syncz } from "../api/istiod.ts";

/** Longest wait between two tries while istiod cannot be asked. */
export const MAX_BACKOFF_MS = 300_000;
/** Default period between two answers. */
export const DEFAULT_PERIOD_MS = 15_000;

/** Settings of the poller. */
export interface IstiodPollOptions {
  /** One client per istiod replica: a proxy is connected to one of them. */
  clients: readonly IstiodClient[];
  /** Where the ProxyStatus objects go; its type must be PROXY_STATUS. */
  source: LocalSource;
  /** The operator's namespace, where istiod's own ProxyStatus is kept. */
  namespace: string;
  clock: Clock;
  log: Logger;
  /** Period between two answers; default {@link DEFAULT_PERIOD_MS}. */
  periodMs?: number;
}

/**
 * One round: every istiod asked, the answers merged (a proxy listed by two replicas while it moves
 * keeps the later send) and published. Returns whether every istiod answered.
 */
export async function pollOnce(opts: IstiodPollOptions): Promise<boolean> {
  if (opts.source.type !== PROXY_STATUS) throw new Error("the source must hold ProxyStatus");
  const answers: IstiodAnswer<Syncz>[] = await Promise.all(opts.clients.map((c) => c.syncz()));
  const failed = answers.find((a) => !a.ok);
  const proxies = new Map<string, ProxySync>();
  for (const a of answers) {
    if (!a.ok) continue;
    for (const p of a.value.proxies) {
      const seen = proxies.get(p.id);
      if (!seen || seen.listeners.sentTime < p.listeners.sentTime) proxies.set(p.id, p);
    }
  }
  const objects: KubeObject[] = [];
  if (failed && !failed.ok) {
    // What was last seen of the proxies stays: the reader sees istiod's status first.
    for (const o of opts.source.list().items) {
      if (o.metadata.namespace !== opts.namespace || o.metadata.name !== ISTIOD_STATUS_NAME) {
        objects.push(o);
      }
    }
    objects.push(istiodStatusObject(opts.namespace, {
      reachable: false,
      reason: failed.reason,
      message: failed.message,
    }));
  } else {
    for (const p of proxies.values()) {
      const o = proxyStatusObject(p);
      if (o) objects.push(o);
    }
    objects.push(istiodStatusObject(opts.namespace, { reachable: true, proxies: proxies.size }));
  }
  const changes = opts.source.publish(objects);
  if (changes > 0) {
    opts.log.debug("istiod's proxies changed", { changes, proxies: proxies.size });
  }
  if (failed && !failed.ok) {
    opts.log.warn("istiod could not be asked", { reason: failed.reason, error: failed.message });
  }
  return failed === undefined;
}

/** Polls until `signal` aborts: every period, or backing off while istiod cannot be asked. */
export async function pollIstiod(opts: IstiodPollOptions, signal: AbortSignal): Promise<void> {
  const period = opts.periodMs ?? DEFAULT_PERIOD_MS;
  let wait = period;
  while (!signal.aborted) {
    const ok = await pollOnce(opts);
    wait = ok ? period : Math.min(MAX_BACKOFF_MS, Math.max(period, wait * 2));
    try {
      await opts.clock.sleep(wait, signal);
    } catch {
      return;
    }
  }
}
