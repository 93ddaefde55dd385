/**
 * The resolver of the operator's cluster DNS lookups (src/controllers/cluster_dns.ts): Deno's
 * (`Deno.resolveDns`, A records), asking either the system's configured servers (in a Pod, its
 * /etc/resolv.conf: the cluster's DNS Service, as for KEDA's Pods) or one given server. Names are
 * asked fully qualified (a final dot), so the Pod's search list and `ndots` add no queries.
 */
import { ClusterDnsProbe, type DnsResolver, kedaDnsTargets } from "../controllers/cluster_dns.ts";
import type { CacheReader, Clock, LocalSource, Logger } from "../runtime/mod.ts";

/** A resolver asking `nameServer`, or the system's configured servers when none is given. */
export function denoResolver(nameServer?: { ipAddr: string; port: number }): DnsResolver {
  return async (host, signal) => {
    try {
      return await Deno.resolveDns(`${host}.`, "A", {
        signal,
        ...(nameServer ? { nameServer } : {}),
      });
    } catch (err) {
      // `proto error: no records found for Query { ... }`: the name does not exist (NXDOMAIN) or
      // has no address; said in a few words, the rest is Deno's resolver's debug text.
      if (err instanceof Deno.errors.NotFound) {
        throw new Error("no such name (no A record found)");
      }
      throw err;
    }
  };
}

/** How statuses and logs name the server `denoResolver(nameServer)` asks. */
export function resolverName(nameServer?: { ipAddr: string; port: number }): string {
  return nameServer
    ? `the DNS server ${nameServer.ipAddr}:${nameServer.port}`
    : "the operator Pod's resolver";
}

/** What `startClusterDnsLookups` needs. */
export interface ClusterDnsLookupsOptions {
  /** Whom to ask: the Pod's resolver, or one DNS server. */
  ask: "pod" | { ipAddr: string; port: number };
  /** Where the DNSLookup objects go. */
  source: LocalSource;
  /** The operator's namespace. */
  namespace: string;
  /** The operator's cache now (the names come from KEDA's cached Deployments). */
  cache: () => CacheReader;
  clock: Clock;
  log: Logger;
  signal: AbortSignal;
}

/** Starts the operator's cluster DNS lookups in the background, until `signal` aborts. */
export function startClusterDnsLookups(o: ClusterDnsLookupsOptions): void {
  const nameServer = o.ask === "pod" ? undefined : o.ask;
  const server = resolverName(nameServer);
  const probe = new ClusterDnsProbe({
    source: o.source,
    namespace: o.namespace,
    targets: () => kedaDnsTargets(o.cache()),
    resolve: denoResolver(nameServer),
    server,
    clock: o.clock,
    log: o.log,
  });
  void probe.run(o.signal);
  o.log.info("looking up the names KEDA's Pods dial while a Scaler is installed", { server });
}
