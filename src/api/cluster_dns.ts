/**
 * What the operator's own resolver says of a name a module's Pods dial through cluster DNS (issue
 * 44): KEDA's metrics server reaches KEDA's operator at `keda-operator.<ns>.svc.cluster.local`, a
 * name only cluster DNS (CoreDNS behind `kube-dns`) answers, while the API server's aggregator
 * reaches the metrics server by its Service's address and never asks DNS. So CoreDNS down leaves
 * KEDA's APIService Available while every HPA gets `FailedGetExternalMetric`; only a lookup shows it.
 *
 * The lookups are objects of a type served inside the operator (src/runtime/local_types.ts), one
 * per Deployment whose dialed name is looked up, named and namespaced as that Deployment, so that
 * the runtime caches and watches them like any other type and a change wakes the module. A lookup
 * that answers the same as before changes nothing (`since` is kept), so at rest no watch event.
 */
import { isObject } from "./json.ts";
import type { KubeObject, ResourceType } from "./object.ts";

/** The type of the operator's cluster DNS lookups; never served by the API server. */
export const DNS_LOOKUP: ResourceType = {
  group: "operator.platform-project.io",
  version: "v1",
  kind: "DNSLookup",
  plural: "dnslookups",
  namespaced: true,
};

const API_VERSION = `${DNS_LOOKUP.group}/${DNS_LOOKUP.version}`;

/**
 * Name of the DNSLookup that says the operator looks names up (in the operator's namespace, from
 * the lookups' start): without it nothing is asked, and nothing may be said of cluster DNS. No
 * Deployment can have it, since a Deployment's name is a DNS subdomain and has no `_`.
 */
export const DNS_RESOLVER_NAME = "_resolver";

/** The DNSLookup saying the operator asks `server` (see {@link DNS_RESOLVER_NAME}). */
export function dnsResolverObject(namespace: string, server: string): KubeObject {
  return {
    apiVersion: API_VERSION,
    kind: DNS_LOOKUP.kind,
    metadata: { namespace, name: DNS_RESOLVER_NAME },
    status: { server },
  };
}

/** True when `lookups` hold the object saying the operator looks names up. */
export function asksClusterDns(lookups: readonly KubeObject[]): boolean {
  return lookups.some((o) => o.metadata.name === DNS_RESOLVER_NAME);
}

/** The outcome of the last lookup of a name. */
export type DnsLookupFields =
  | {
    result: "Resolved";
    /** The name asked, fully qualified, without the final dot. */
    host: string;
    /** Who was asked: `the Pod's resolver`, or the server given to the operator (`10.96.0.10:53`). */
    server: string;
    /** The addresses of the answer, sorted. */
    addresses: string[];
    /** When the name last turned resolvable (RFC 3339, the operator's clock). */
    since: string;
  }
  | {
    result: "Failed";
    host: string;
    server: string;
    /** The resolver's error of the last try (`no records found ...`, `no answer within 2 s`). */
    error: string;
    /** When lookups of the name began failing (RFC 3339): kept while they go on failing. */
    since: string;
  };

/** The DNSLookup object of the name the Deployment `namespace/name` dials. */
export function dnsLookupObject(
  namespace: string,
  name: string,
  fields: DnsLookupFields,
): KubeObject {
  return {
    apiVersion: API_VERSION,
    kind: DNS_LOOKUP.kind,
    metadata: { namespace, name },
    status: { ...fields },
  };
}

/** The fields of a DNSLookup object, or undefined when it holds none readable. */
export function dnsLookupOf(obj: KubeObject | undefined): DnsLookupFields | undefined {
  const s = obj?.status;
  if (!isObject(s)) return undefined;
  const { result, host, server, since } = s;
  if (typeof host !== "string" || typeof server !== "string" || typeof since !== "string") {
    return undefined;
  }
  if (result === "Resolved" && Array.isArray(s.addresses)) {
    const addresses = s.addresses.filter((a): a is string => typeof a === "string");
    return { result, host, server, addresses, since };
  }
  if (result === "Failed" && typeof s.error === "string") {
    return { result, host, server, error: s.error, since };
  }
  return undefined;
}
