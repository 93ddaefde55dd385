/**
 * Cluster DNS down under a running KEDA, on the real node (issue 44, Bad input and faults): the
 * cluster's CoreDNS Deployment (tools/cluster/node/dns.ts, not the operator's: it does not undo
 * the change) is scaled to 0 and back. KEDA's metrics server dials KEDA's operator by name, which
 * then resolves no more, while the aggregator (dialing the Service's address) still reports KEDA's
 * APIService Available: the Scaler must leave Ready within a bounded time naming DNS and the name,
 * turn Warning (ClusterDNSUnavailable) with a Warning Event, and be Ready again once CoreDNS is
 * back; no ScaledObject or HPA is deleted meanwhile.
 */
import assert from "node:assert/strict";
import { type E2E, waitFor } from "./harness.ts";
import { conditionOf, describe, statusOf } from "./status.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { DNS_PERIOD_MS, DNS_TIMEOUT_MS, DNS_TRIES } from "../../src/controllers/cluster_dns.ts";
import { CLUSTER_DNS_GRACE_MS } from "../../src/reconcile/scaler/cluster_dns.ts";

/** Where the real node's cluster DNS runs. */
const COREDNS = { namespace: "kube-system", deployment: "coredns" } as const;
/**
 * How soon the Scaler must leave Ready once CoreDNS is scaled to 0: the Pod's removal from the
 * Service's endpoints, one period of lookups, two timed-out tries, the reconcile, and slack.
 */
export const LEAVES_READY_MS = 10_000 + DNS_PERIOD_MS + DNS_TRIES * DNS_TIMEOUT_MS + 15_000;
/** How soon after that it must be Warning: the grace, a period, slack. */
const WARNING_MS = LEAVES_READY_MS + CLUSTER_DNS_GRACE_MS + DNS_PERIOD_MS;

/** `kind namespace/name uid` of every object of `resource` in the cluster, sorted. */
async function uids(env: E2E, resource: string): Promise<string[]> {
  const items = await env.kube.list(resource, { allNamespaces: true });
  return items.map((o) => `${o.metadata.namespace}/${o.metadata.name} ${o.metadata.uid}`).sort();
}

async function scaleCoreDns(env: E2E, replicas: number): Promise<void> {
  await env.kube.must([
    "scale",
    "deployment",
    COREDNS.deployment,
    "-n",
    COREDNS.namespace,
    `--replicas=${replicas}`,
  ]);
}

/** The Scaler's state and Installed reason, and the HPAs' ScalingActive conditions, now. */
async function sample(env: E2E, ns: string, name: string) {
  const s = await env.kube.get("scaler", name, ns);
  const installed = conditionOf(s, "Installed");
  return { s, state: statusOf(s).state, reason: installed?.reason, message: installed?.message };
}

/**
 * Runs the outage against the Scaler `ns/name` (Ready when called); `host` is the name KEDA's
 * metrics server dials. Prints what it measured.
 */
export async function clusterDnsOutage(
  env: E2E,
  ns: string,
  name: string,
  host: string,
): Promise<void> {
  await env.waitStatus("scaler", ns, name, { state: "Ready" }, { timeoutMs: 60_000 });
  const before = { so: await uids(env, "scaledobjects"), hpa: await uids(env, "hpa") };
  assert.ok(before.so.length > 0 && before.hpa.length > 0, JSON.stringify(before));
  const down = Date.now();
  await scaleCoreDns(env, 0);
  let restored = false;
  try {
    let leftAt: number | undefined;
    let last: Awaited<ReturnType<typeof sample>> | undefined;
    const warned = await waitFor("the Scaler Warning with ClusterDNSUnavailable", async () => {
      last = await sample(env, ns, name);
      if (last.state !== "Ready" && leftAt === undefined) {
        leftAt = Date.now();
        console.error(
          `[keda-real] CoreDNS at 0: the Scaler left Ready after ${
            ((leftAt - down) / 1000).toFixed(1)
          } s: ${last.state} ${last.reason}: ${last.message}`,
        );
      }
      return last.state === "Warning" && last.reason === "ClusterDNSUnavailable" ? last : undefined;
    }, {
      timeoutMs: WARNING_MS,
      intervalMs: 1000,
      describe: () => Promise.resolve(last ? describe(last.s) : "no Scaler read"),
    });
    const warnAt = Date.now();
    assert.ok(leftAt !== undefined && leftAt - down <= LEAVES_READY_MS, `left Ready too late`);
    const escaped = host.replaceAll(".", "\\.");
    assert.match(
      warned.message ?? "",
      new RegExp(
        `cluster DNS has not resolved ${escaped}, the name KEDA's metrics server dials to reach KEDA's operator`,
      ),
      describe(warned.s),
    );
    const events = await env.kube.list<KubeObject & { type?: string; reason?: string }>(
      "events",
      { namespace: ns },
    );
    const warning = events.find((e) =>
      e.reason === "ClusterDNSUnavailable" &&
      (e as { involvedObject?: { name?: string } }).involvedObject?.name === name
    );
    assert.equal(warning?.type, "Warning", "a Warning Event names the outage");
    // What the HPAs say meanwhile (recorded: whether they fail depends on KEDA's open connections).
    const hpas = await env.kube.list<
      KubeObject & { status?: { conditions?: { type: string; reason?: string }[] } }
    >("hpa", { allNamespaces: true });
    const active = hpas.map((h) =>
      `${h.metadata.name}: ${
        h.status?.conditions?.find((c) => c.type === "ScalingActive")?.reason ?? "-"
      }`
    );
    console.error(
      `[keda-real] Warning after ${((warnAt - down) / 1000).toFixed(1)} s: ${warned.message}\n` +
        `[keda-real] HPAs' ScalingActive meanwhile: ${active.join(", ")}`,
    );
    const up = Date.now();
    await scaleCoreDns(env, 1);
    restored = true;
    await env.waitStatus("scaler", ns, name, { state: "Ready" }, {
      timeoutMs: 120_000,
      intervalMs: 1000,
    });
    console.error(
      `[keda-real] CoreDNS back at 1: the Scaler Ready ${
        ((Date.now() - up) / 1000).toFixed(1)
      } s after`,
    );
    const after = { so: await uids(env, "scaledobjects"), hpa: await uids(env, "hpa") };
    assert.deepEqual(after, before, "no ScaledObject or HPA deleted or replaced");
  } finally {
    if (!restored) await scaleCoreDns(env, 1);
    await env.kube.must([
      "rollout",
      "status",
      "deployment",
      COREDNS.deployment,
      "-n",
      COREDNS.namespace,
      "--timeout=120s",
    ]);
  }
}
