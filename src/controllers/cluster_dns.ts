/**
 * The operator's cluster DNS lookups (issue 44): while a Scaler is installed, the name KEDA's
 * metrics server dials to reach KEDA's operator (its `--metrics-service-address`, read from the
 * cached Deployment) is looked up every {@link DNS_PERIOD_MS} through the resolver the operator is
 * given (in a Pod, the Pod's own, as its /etc/resolv.conf sets it: the same cluster DNS KEDA's Pods
 * ask), and the outcome is published as DNSLookup objects (src/api/cluster_dns.ts) into a
 * LocalSource the Scaler controller watches, beside one object saying that the operator asks at
 * all (`_resolver`: without it the Scaler says nothing of DNS). Bounded: at most
 * {@link MAX_TARGETS} names a round, {@link DNS_TRIES} tries of at most {@link DNS_TIMEOUT_MS}
 * each, one round a period, nothing asked while no Scaler has installed KEDA; a name newly to be
 * looked up (KEDA installed, an operator replica just started) is looked up within
 * {@link TARGETS_CHECK_MS}, from the cache, without a request. A lookup answering as before
 * changes no object, so at rest the controller hears nothing.
 */
import {
  DNS_LOOKUP,
  type DnsLookupFields,
  dnsLookupObject,
  dnsLookupOf,
  dnsResolverObject,
} from "../api/cluster_dns.ts";
import { RESOURCES } from "../api/resources.ts";
import { kubeTime } from "../api/time.ts";
import { MANAGED_BY, MANAGED_BY_LABEL, MODULE_LABEL } from "../reconcile/labels.ts";
import { KEDA_DEPLOYMENTS } from "../reconcile/scaler/names.ts";
import { dialedOperatorHost } from "../reconcile/scaler/cluster_dns.ts";
import type { CacheReader, Clock, LocalSource, Logger } from "../runtime/mod.ts";

/** Time between two rounds of lookups. */
export const DNS_PERIOD_MS = 15_000;
/** How long one try waits for an answer. */
export const DNS_TIMEOUT_MS = 2_000;
/** Tries of a name a round before it counts as failed: one lost UDP packet is no outage. */
export const DNS_TRIES = 2;
/** Most names looked up a round (there is one served Scaler, so one name). */
export const MAX_TARGETS = 4;
/** How often the names to look up are read from the cache between rounds. */
export const TARGETS_CHECK_MS = 5_000;

/** A name to look up: the one the Deployment `namespace/name` dials. */
export interface DnsTarget {
  namespace: string;
  name: string;
  /** Fully qualified, without the final dot. */
  host: string;
}

/**
 * Looks `host` up (fully qualified, no final dot) and resolves to its addresses, or rejects with
 * an Error whose message says why in a few words. Stops when `signal` aborts.
 */
export type DnsResolver = (host: string, signal: AbortSignal) => Promise<string[]>;

/** Settings of the probe. */
export interface ClusterDnsOptions {
  /** Where the DNSLookup objects go; its type must be DNS_LOOKUP. */
  source: LocalSource;
  /** The operator's namespace, where the `_resolver` object is kept. */
  namespace: string;
  /** The names to look up now (`kedaDnsTargets` of the operator's cache). */
  targets: () => readonly DnsTarget[];
  resolve: DnsResolver;
  /** Who `resolve` asks, as statuses and logs name it (`the operator Pod's resolver`). */
  server: string;
  clock: Clock;
  log: Logger;
  periodMs?: number;
  timeoutMs?: number;
  tries?: number;
}

/**
 * The names KEDA's metrics server Deployments the operator installed dial, from the cache: each
 * once the Service it names (`<service>.<namespace>.svc...`) is cached too, so that an install
 * does not ask for a name before its Service exists (CoreDNS would answer NXDOMAIN, rightly).
 */
export function kedaDnsTargets(cache: CacheReader): DnsTarget[] {
  const out: DnsTarget[] = [];
  for (const d of cache.list(RESOURCES.Deployment)) {
    const labels = d.metadata.labels ?? {};
    if (d.metadata.name !== KEDA_DEPLOYMENTS.metricServer || !d.metadata.namespace) continue;
    if (labels[MANAGED_BY_LABEL] !== MANAGED_BY || labels[MODULE_LABEL] !== "keda") continue;
    const host = dialedOperatorHost(d);
    const [service, namespace, svc] = host?.split(".") ?? [];
    if (!host || svc !== "svc" || !cache.get(RESOURCES.Service, namespace, service)) continue;
    out.push({ namespace: d.metadata.namespace, name: d.metadata.name, host });
  }
  return out;
}

/** The first line of an error's message, at most 200 characters. */
function shortError(err: unknown): string {
  const text = (err instanceof Error ? err.message : String(err)).split("\n")[0].trim();
  return text.length > 200 ? `${text.slice(0, 200)}…` : text || "failed";
}

/** Looks up names of KEDA's Pods as they do; `round` is one round, `run` rounds until stopped. */
export class ClusterDnsProbe {
  readonly #o: ClusterDnsOptions;

  /** A probe; nothing is asked before `round` or `run`. */
  constructor(opts: ClusterDnsOptions) {
    if (opts.source.type !== DNS_LOOKUP) throw new Error("the source must hold DNSLookup");
    this.#o = opts;
  }

  /** One try: the addresses, or an Error saying why, within the timeout. */
  async #try(host: string): Promise<string[]> {
    const { clock, resolve } = this.#o;
    const timeoutMs = this.#o.timeoutMs ?? DNS_TIMEOUT_MS;
    const stop = new AbortController();
    try {
      return await Promise.race([
        resolve(host, stop.signal),
        clock.sleep(timeoutMs, stop.signal).then((): never => {
          throw new Error(`no answer within ${timeoutMs / 1000} s`);
        }),
      ]);
    } finally {
      stop.abort(new Error("lookup over"));
    }
  }

  /** The outcome of looking `host` up now: resolved at the first try that answers, else failed. */
  async #lookup(host: string): Promise<{ addresses: string[] } | { error: string }> {
    let error = "failed";
    for (let i = 0; i < (this.#o.tries ?? DNS_TRIES); i++) {
      try {
        const addresses = await this.#try(host);
        if (addresses.length > 0) return { addresses: [...addresses].sort() };
        error = "the answer holds no address";
      } catch (err) {
        error = shortError(err);
      }
    }
    return { error };
  }

  /** The names to look up now, as one comparable text ("" when they cannot be read). */
  #targetsKey(): string {
    try {
      return JSON.stringify(this.#o.targets().slice(0, MAX_TARGETS));
    } catch {
      return "";
    }
  }

  /** Looks up every target once and publishes the outcomes beside the `_resolver` object. */
  async round(): Promise<void> {
    const { source, server, clock, log } = this.#o;
    const targets = this.#o.targets().slice(0, MAX_TARGETS);
    const before = new Map(
      source.list().items.map((o) => [
        `${o.metadata.namespace}/${o.metadata.name}`,
        dnsLookupOf(o),
      ]),
    );
    const objects = [dnsResolverObject(this.#o.namespace, server)];
    for (const t of targets) {
      const outcome = await this.#lookup(t.host);
      const old = before.get(`${t.namespace}/${t.name}`);
      const result = "addresses" in outcome ? "Resolved" : "Failed";
      const same = old?.host === t.host && old.server === server && old.result === result;
      const since = same ? old.since : kubeTime(clock.now());
      const fields: DnsLookupFields = "addresses" in outcome
        ? { result: "Resolved", host: t.host, server, addresses: outcome.addresses, since }
        : { result: "Failed", host: t.host, server, error: outcome.error, since };
      if (!same && fields.result === "Failed") {
        log.warn("cluster DNS does not resolve a name KEDA dials", {
          host: t.host,
          server,
          error: fields.error,
        });
      } else if (!same && old?.result === "Failed") {
        log.info("cluster DNS resolves a name KEDA dials again", { host: t.host, server });
      }
      objects.push(dnsLookupObject(t.namespace, t.name, fields));
    }
    source.publish(objects);
  }

  /**
   * Rounds a period apart until `signal` aborts, and one at once when the names to look up change.
   * The `_resolver` object is published first, before any name is known. Never rejects: a round
   * that fails (the names cannot be read, say) is logged and tried again a period later.
   */
  async run(signal: AbortSignal): Promise<void> {
    const { clock, log, source } = this.#o;
    const period = this.#o.periodMs ?? DNS_PERIOD_MS;
    source.publish([dnsResolverObject(this.#o.namespace, this.#o.server)]);
    let asked = "";
    while (!signal.aborted) {
      asked = this.#targetsKey();
      try {
        await this.round();
      } catch (err) {
        log.error("cluster DNS lookups failed", { error: shortError(err) });
      }
      const next = clock.now() + period;
      try {
        do {
          await clock.sleep(Math.min(TARGETS_CHECK_MS, Math.max(0, next - clock.now())), signal);
        } while (clock.now() < next && this.#targetsKey() === asked);
      } catch {
        return;
      }
    }
  }
}
