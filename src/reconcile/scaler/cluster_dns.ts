/**
 * Does cluster DNS resolve the name KEDA's metrics server dials? The metrics server reaches KEDA's
 * operator by name (`--metrics-service-address=keda-operator.<ns>.svc.cluster.local:9666`, gRPC),
 * so with cluster DNS down every HPA gets `FailedGetExternalMetric`, while the aggregator, which
 * dials the metrics server's Service address, still reports KEDA's APIService Available.
 *
 * The operator looks that name up with its own Pod's resolver (src/controllers/cluster_dns.ts) and
 * the lookups reach the reducer as DNSLookup objects (src/api/cluster_dns.ts). Only a lookup of the
 * name the installed metrics server Deployment dials counts. Where the operator does not ask (it
 * runs outside the cluster: no `_resolver` object) the Scaler says nothing of DNS. Where it asks
 * but has not looked the name up yet (KEDA just rolled out, a replica just started), a Scaler not
 * shown Ready waits for that lookup, one shown Ready stays so (nothing seen says otherwise; the
 * lookup comes within seconds and wakes it). A failure is shown as verification in
 * progress for {@link CLUSTER_DNS_GRACE_MS} after lookups began failing, then as the Warning row
 * `ClusterDNSUnavailable` (at once when the Scaler shows that row already: a replica that took
 * over does not wait the grace again); never `Ready` while the lookups fail.
 */
import type { KubeObject } from "../../api/object.ts";
import { asksClusterDns, dnsLookupOf } from "../../api/cluster_dns.ts";
import type { Step } from "../module/lifecycle.ts";
import { KEDA_DEPLOYMENTS, KEDA_VERSION, METRICS_SERVICE_ADDRESS_FLAG } from "./names.ts";

/** The reason of the Scaler's row for cluster DNS not resolving the name KEDA's metrics server dials. */
export const CLUSTER_DNS_UNAVAILABLE = "ClusterDNSUnavailable";

/**
 * How long lookups must have failed before the Scaler shows a Warning: a CoreDNS rollout, or the
 * Service's name not yet in CoreDNS's cache right after KEDA's install (its negative answers are
 * cached up to 30 s), is no outage.
 */
export const CLUSTER_DNS_GRACE_MS = 30_000;

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

/**
 * The host name a KEDA metrics server Deployment dials to reach KEDA's operator: the host of its
 * container's `--metrics-service-address`, lower case, without a final dot. Undefined when it has
 * none or dials an address (no DNS then).
 */
export function dialedOperatorHost(deployment: KubeObject): string | undefined {
  const spec = deployment.spec as
    | { template?: { spec?: { containers?: { args?: unknown }[] } } }
    | undefined;
  for (const c of spec?.template?.spec?.containers ?? []) {
    const args = Array.isArray(c.args) ? c.args : [];
    const arg = args.find((a): a is string =>
      typeof a === "string" && a.startsWith(METRICS_SERVICE_ADDRESS_FLAG)
    );
    if (arg === undefined) continue;
    const target = arg.slice(METRICS_SERVICE_ADDRESS_FLAG.length).replace(/^[a-z]+:\/*/i, "");
    const host = target.replace(/:\d+$/, "").replace(/\.$/, "").toLowerCase();
    if (host === "" || IPV4.test(host) || host.includes(":") || host.startsWith("[")) {
      return undefined;
    }
    return host;
  }
  return undefined;
}

/** What the Scaler shows now, as far as the DNS step reads it. */
export interface ShownScaler {
  /** Its state is Ready. */
  ready: boolean;
  /** The reason of its Installed condition. */
  reason?: string;
}

/**
 * The step a rolled-out KEDA shows while the operator's lookups of the name its metrics server
 * dials fail or are awaited, or undefined when they resolve or the operator does not ask
 * (`lookups`: the cached DNSLookup objects; the one of KEDA's metrics server in `namespace`
 * counts, and only for the name the installed Deployment dials now).
 */
export function clusterDnsStep(
  installed: readonly KubeObject[],
  lookups: readonly KubeObject[],
  namespace: string,
  now: number,
  shown: ShownScaler,
): Step | undefined {
  const server = KEDA_DEPLOYMENTS.metricServer;
  const dep = installed.find((o) =>
    o.kind === "Deployment" && o.metadata.name === server && o.metadata.namespace === namespace
  );
  const host = dep && dialedOperatorHost(dep);
  if (!host) return undefined;
  if (!asksClusterDns(lookups)) return undefined;
  const found = dnsLookupOf(
    lookups.find((o) => o.metadata.namespace === namespace && o.metadata.name === server),
  );
  const lookup = found?.host === host ? found : undefined;
  const dials = `${host}, the name KEDA's metrics server dials to reach KEDA's operator`;
  if (!lookup) {
    if (shown.ready) return undefined;
    return {
      reason: "Verification",
      message: `Verifying KEDA ${KEDA_VERSION}: the operator has not looked up ${dials}, yet.`,
      requeueAfterMs: CLUSTER_DNS_GRACE_MS,
    };
  }
  if (lookup.result === "Resolved") return undefined;
  const failure = `asked ${lookup.server}: ${lookup.error}`;
  const since = Date.parse(lookup.since);
  const left = (Number.isFinite(since) ? since : 0) + CLUSTER_DNS_GRACE_MS - now;
  if (left > 0 && shown.reason !== CLUSTER_DNS_UNAVAILABLE) {
    return {
      reason: "Verification",
      message: `Verifying KEDA ${KEDA_VERSION}: cluster DNS did not resolve ${dials} ` +
        `(${failure}); looking again.`,
      requeueAfterMs: left,
    };
  }
  return {
    reason: CLUSTER_DNS_UNAVAILABLE,
    state: "Warning",
    message: `KEDA ${KEDA_VERSION} is installed, but cluster DNS has not resolved ${dials}, ` +
      `since ${lookup.since} (${failure}). HPAs cannot get KEDA's metrics until it does: check ` +
      `the cluster's DNS server (CoreDNS behind the kube-dns Service).`,
  };
}
