/**
 * The simulator's cluster DNS (sim/cluster/dns.ts): a Service's name resolves to its ClusterIP,
 * other names do not exist, and while DNS is down nothing answers until the asker gives up. The
 * operator's real lookups (src/controllers/cluster_dns.ts) on it turn an outage into a failed
 * lookup within two tries, and the invariant `scaler-ready-needs-cluster-dns` holds a Scaler
 * written Ready late into an outage.
 */
import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { DNS_LOOKUP, dnsLookupOf } from "../../src/api/cluster_dns.ts";
import { ClusterDnsProbe, DNS_TIMEOUT_MS, DNS_TRIES } from "../../src/controllers/cluster_dns.ts";
import { LocalSource, nullLogger } from "../../src/runtime/mod.ts";
import { DNS_LAG_MS, InvariantChecker } from "../../sim/invariants.ts";
import type { Actor } from "../../sim/cluster/mod.ts";
import { drive, world } from "./helpers.ts";

const USER: Actor = { name: "user", manager: "kubectl" };
const HOST = "keda-operator.keda-system.svc.cluster.local";

const service: KubeObject = {
  apiVersion: "v1",
  kind: "Service",
  metadata: { name: "keda-operator", namespace: "keda-system" },
  spec: { clusterIP: "10.96.0.77", ports: [{ port: 9666 }] },
};

/** The message `p` rejects with (driven rejections must be handled at once), or "resolved". */
function failure(p: Promise<unknown>): Promise<string> {
  return p.then(() => "resolved", (err: Error) => err.message);
}

/** A simulated cluster with KEDA's namespace, whose DNS is down while `down.on`. */
function dnsWorld(down: { on: boolean }) {
  const w = world({ dns: { down: () => down.on } });
  w.store.create(RESOURCES.Namespace, {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: { name: "keda-system" },
  }, USER);
  return w;
}

Deno.test("sim cluster DNS: Service names resolve, others do not, and down means no answer", async () => {
  const down = { on: false };
  const w = dnsWorld(down);
  const resolve = w.cluster.dns.resolverFor(w.clock);
  const never = new AbortController().signal;
  assert.match(await drive(w.driver, failure(resolve(HOST, never))), /no such name/);
  w.store.create(RESOURCES.Service, service, USER);
  assert.deepEqual(await drive(w.driver, resolve(HOST, never)), ["10.96.0.77"]);
  down.on = true;
  const stop = new AbortController();
  const asked = resolve(HOST, stop.signal);
  w.clock.schedule(10_000, () => stop.abort(new Error("gave up")));
  assert.equal(await drive(w.driver, failure(asked)), "gave up");
});

Deno.test("sim cluster DNS: the operator's lookups fail within their tries while it is down", async () => {
  const down = { on: true };
  const w = dnsWorld(down);
  w.store.create(RESOURCES.Service, service, USER);
  const source = new LocalSource(DNS_LOOKUP);
  const probe = new ClusterDnsProbe({
    source,
    namespace: "platform-system",
    targets:
      () => [{ namespace: "keda-system", name: "keda-operator-metrics-apiserver", host: HOST }],
    resolve: w.cluster.dns.resolverFor(w.clock),
    server: "the operator Pod's resolver",
    clock: w.clock,
    log: nullLogger,
  });
  const started = w.clock.now();
  await drive(w.driver, probe.round());
  assert.equal(w.clock.now() - started, DNS_TRIES * DNS_TIMEOUT_MS);
  const lookup = () =>
    dnsLookupOf(source.list().items.find((o) => o.metadata.name !== "_resolver"));
  assert.equal(lookup()?.result, "Failed");
  down.on = false;
  await drive(w.driver, probe.round());
  assert.equal(lookup()?.result, "Resolved");
});

Deno.test("invariant scaler-ready-needs-cluster-dns: Ready written late into an outage fails", () => {
  const w = world();
  const outage: { since?: number } = {};
  const checker = new InvariantChecker(w.cluster, undefined, undefined, {
    dnsDownSince: () => outage.since,
    operatorSteadySince: () => true,
  });
  const scaler = (state: string): KubeObject => ({
    apiVersion: "operator.platform-project.io/v1alpha1",
    kind: "Scaler",
    metadata: { name: "keda", namespace: "platform-system" },
    spec: {},
    status: { state, served: "True" },
  });
  const op: Actor = { name: "operator/platform-operator-0", manager: "platform-operator" };
  let s = w.store.create(RESOURCES.Scaler, scaler("Processing"), op).obj;
  const write = (state: string) => {
    s = w.store.update(RESOURCES.Scaler, { ...s, status: { state, served: "True" } }, op, "status")
      .obj;
  };
  outage.since = w.clock.now();
  // Within the lag, a Ready under way is allowed.
  write("Ready");
  // (Without KEDA's APIService the Scaler breaks scaler-ready-needs-metrics-api too: not this one.)
  const dns = () =>
    checker.violations.filter((v) => v.invariant === "scaler-ready-needs-cluster-dns");
  assert.equal(dns().length, 0);
  // Time the clock jumped over (no lookup, no timeout could fire in it) does not count.
  w.clock.jump(DNS_LAG_MS + 1);
  write("Warning");
  write("Ready");
  assert.equal(dns().length, 0);
  // Time that ran does.
  w.clock.advanceTo(w.clock.now() + DNS_LAG_MS + 1);
  write("Warning");
  write("Ready");
  assert.equal(dns().length, 1);
  assert.match(dns()[0].message, /Ready while cluster DNS has answered nothing for/);
  // And the state check: still Ready well into the outage.
  w.clock.jump(30_000);
  checker.checkScalerDuringDnsOutage();
  assert.equal(dns().length, 2);
  assert.match(dns()[1].message, /still shows Ready \d+ ms into a cluster DNS outage/);
});
