/**
 * Cluster DNS as a Pod's resolver meets it (CoreDNS's kubernetes plugin behind the kube-dns
 * Service): `<service>.<namespace>.svc.cluster.local` is the Service's ClusterIP when the Service
 * exists, any other name does not exist (NXDOMAIN). While DNS is down (a fault: CoreDNS scaled to
 * 0 or crashing) a query gets no answer at all, and the asker gives up at its own timeout. The
 * operator's cluster DNS lookups (src/controllers/cluster_dns.ts) ask it through `resolverFor`.
 */
import { RESOURCES } from "../../src/api/resources.ts";
import type { DnsResolver } from "../../src/controllers/cluster_dns.ts";
import type { Clock } from "../../src/runtime/mod.ts";
import type { Store } from "./store.ts";

/** What the world decides about cluster DNS (faults plug in here). */
export interface ClusterDnsBehaviour {
  /** True while cluster DNS answers nothing. */
  down(): boolean;
  /** Milliseconds an answer takes. */
  answerMs(): number;
}

const SERVICE_NAME = /^([a-z0-9-]+)\.([a-z0-9-]+)\.svc\.cluster\.local$/;

/** Cluster DNS over the simulated store. */
export class SimClusterDns {
  constructor(readonly store: Store, readonly behaviour: ClusterDnsBehaviour) {}

  /** The addresses of `host` now, or the NXDOMAIN error (the real resolver's words). */
  answer(host: string): string[] | Error {
    const m = SERVICE_NAME.exec(host);
    const svc = m && this.store.get(RESOURCES.Service, m[2], m[1]);
    if (!svc) return new Error("no such name (no A record found)");
    const ip = (svc.spec as { clusterIP?: unknown } | undefined)?.clusterIP;
    // The simulator allocates no ClusterIPs: one address stands for them.
    return [typeof ip === "string" && ip !== "" ? ip : "10.96.0.1"];
  }

  /**
   * A resolver for a process whose timers run on `clock` (a replica's view: a crash freezes them):
   * down when asked, no answer until `signal` aborts; else the answer after `answerMs`.
   */
  resolverFor(clock: Clock): DnsResolver {
    return async (host, signal) => {
      if (this.behaviour.down()) {
        await new Promise<never>((_, reject) => {
          if (signal.aborted) reject(signal.reason);
          signal.addEventListener("abort", () => reject(signal.reason), { once: true });
        });
      }
      await clock.sleep(this.behaviour.answerMs(), signal);
      const answer = this.answer(host);
      if (answer instanceof Error) throw answer;
      return answer;
    };
  }
}
