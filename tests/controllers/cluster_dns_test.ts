/**
 * The operator's cluster DNS lookups: the name KEDA's metrics server dials, read from the cached
 * Deployment; looked up with two tries of a bounded time; published as DNSLookup objects that
 * change only when the outcome does (`since` kept while it stays), so at rest nothing is heard.
 */
import assert from "node:assert/strict";
import {
  ClusterDnsProbe,
  DNS_TIMEOUT_MS,
  type DnsResolver,
  kedaDnsTargets,
} from "../../src/controllers/cluster_dns.ts";
import { DNS_LOOKUP, DNS_RESOLVER_NAME, dnsLookupOf } from "../../src/api/cluster_dns.ts";
import { type Clock, createLogger, LocalSource } from "../../src/runtime/mod.ts";
import { installed } from "../reconcile/scaler_fixtures.ts";
import { fakeCache } from "../reconcile/module_fixtures.ts";

const HOST = "keda-operator.platform-system.svc.cluster.local";
const TARGET = {
  namespace: "platform-system",
  name: "keda-operator-metrics-apiserver",
  host: HOST,
};
const log = createLogger({ clock: { now: () => 0 }, sink: () => {} });

/** A clock at `t.now` whose sleeps end only when aborted (no try times out). */
function stillClock(t: { now: number }): Clock {
  return {
    now: () => t.now,
    sleep: (_ms, signal) =>
      new Promise((_, reject) => signal?.addEventListener("abort", () => reject(signal.reason))),
  };
}

function probe(resolve: DnsResolver, t: { now: number }, clock = stillClock(t)) {
  const source = new LocalSource(DNS_LOOKUP);
  const p = new ClusterDnsProbe({
    source,
    namespace: "platform-system",
    targets: () => [TARGET],
    resolve,
    server: "the operator Pod's resolver",
    clock,
    log,
  });
  const lookup = () =>
    dnsLookupOf(source.list().items.find((o) => o.metadata.name === TARGET.name));
  return { p, source, lookup };
}

Deno.test("cluster DNS: the name looked up is the one KEDA's installed metrics server dials", () => {
  const w = installed();
  assert.deepEqual(kedaDnsTargets(fakeCache(w.installed)), [TARGET]);
  // Another Deployment of that name, not installed by the operator: not looked up.
  const foreign = w.installed.map((o) => ({ ...o, metadata: { ...o.metadata, labels: {} } }));
  assert.deepEqual(kedaDnsTargets(fakeCache(foreign)), []);
  // Not before the Service the name stands for is there.
  const noService = w.installed.filter((o) =>
    !(o.kind === "Service" && o.metadata.name === "keda-operator")
  );
  assert.deepEqual(kedaDnsTargets(fakeCache(noService)), []);
});

Deno.test("cluster DNS: outcomes change the object only when they change; since is kept", async () => {
  const t = { now: Date.parse("2026-11-29T05:00:00Z") };
  let answer: () => Promise<string[]> = () => Promise.resolve(["10.96.0.9", "10.96.0.20"]);
  const asked: string[] = [];
  const { p, source, lookup } = probe((host) => (asked.push(host), answer()), t);
  await p.round();
  assert.deepEqual(asked, [HOST]);
  assert.deepEqual(lookup(), {
    result: "Resolved",
    host: HOST,
    server: "the operator Pod's resolver",
    addresses: ["10.96.0.20", "10.96.0.9"],
    since: "2026-11-29T05:00:00Z",
  });
  const version = source.version;
  t.now += 15_000;
  await p.round();
  assert.equal(source.version, version, "the same answer: no change, no watch event");
  // Failing: two tries, then Failed from now; another error later keeps the start.
  answer = () => Promise.reject(new Error("no such name (no A record found)"));
  t.now += 15_000;
  await p.round();
  assert.equal(asked.length, 4, "a failed name is tried twice");
  assert.deepEqual(lookup(), {
    result: "Failed",
    host: HOST,
    server: "the operator Pod's resolver",
    error: "no such name (no A record found)",
    since: "2026-11-29T05:00:30Z",
  });
  answer = () => Promise.reject(new Error("connection refused\nmore detail"));
  t.now += 15_000;
  await p.round();
  assert.equal(lookup()?.since, "2026-11-29T05:00:30Z");
  assert.equal(lookup()?.result, "Failed");
  assert.match(JSON.stringify(lookup()), /"error":"connection refused"/);
  // One lost answer is no outage: the second try resolves.
  let tries = 0;
  answer = () =>
    ++tries === 1 ? Promise.reject(new Error("lost")) : Promise.resolve(["10.96.0.20"]);
  t.now += 15_000;
  await p.round();
  assert.equal(lookup()?.result, "Resolved");
  assert.equal(lookup()?.since, "2026-11-29T05:01:00Z");
});

Deno.test("cluster DNS: a try without an answer ends at the timeout and is stopped", async () => {
  const t = { now: 0 };
  const stopped: boolean[] = [];
  const hang: DnsResolver = (_host, signal) =>
    new Promise((_, reject) =>
      signal.addEventListener("abort", () => (stopped.push(true), reject(signal.reason)))
    );
  const waits: number[] = [];
  const instant: Clock = {
    now: () => t.now,
    sleep: (ms) => (waits.push(ms), Promise.resolve()),
  };
  const { p, lookup } = probe(hang, t, instant);
  await p.round();
  assert.deepEqual(waits, [DNS_TIMEOUT_MS, DNS_TIMEOUT_MS]);
  assert.deepEqual(stopped, [true, true], "each timed-out lookup is aborted");
  const l = lookup();
  assert.equal(l?.result, "Failed");
  assert.equal(l?.result === "Failed" ? l.error : "", "no answer within 2 s");
});

Deno.test("cluster DNS: no Scaler installed, nothing looked up and no lookup kept", async () => {
  const t = { now: 0 };
  const source = new LocalSource(DNS_LOOKUP);
  let targets = [TARGET];
  let asked = 0;
  const p = new ClusterDnsProbe({
    source,
    namespace: "platform-system",
    targets: () => targets,
    resolve: () => (asked++, Promise.resolve(["10.96.0.20"])),
    server: "s",
    clock: stillClock(t),
    log,
  });
  await p.round();
  const names = () => source.list().items.map((o) => o.metadata.name);
  assert.deepEqual(names(), [DNS_RESOLVER_NAME, TARGET.name]);
  targets = [];
  await p.round();
  assert.deepEqual([asked, names()], [1, [DNS_RESOLVER_NAME]], "only: the operator asks");
});

Deno.test("cluster DNS: names that cannot be read fail a round, logged; the lookups go on and never reject", async () => {
  const t = { now: 0 };
  const lines: { level: string; msg: string }[] = [];
  const source = new LocalSource(DNS_LOOKUP);
  let rounds = 0;
  const stop = new AbortController();
  const clock: Clock = {
    now: () => t.now,
    sleep: (ms) => {
      t.now += ms;
      if (t.now > 60_000) stop.abort(new Error("done"));
      return stop.signal.aborted ? Promise.reject(stop.signal.reason) : Promise.resolve();
    },
  };
  const p = new ClusterDnsProbe({
    source,
    namespace: "platform-system",
    // As the cache answers for a type nobody watches (the Scaler's controller not running).
    targets: () => {
      rounds++;
      throw new Error("Deployment is not watched: add it to the controller's watches");
    },
    resolve: () => Promise.resolve(["10.96.0.20"]),
    server: "s",
    clock,
    log: createLogger({
      clock: { now: () => 0 },
      sink: (l) => lines.push(JSON.parse(l) as { level: string; msg: string }),
    }),
  });
  await p.run(stop.signal); // resolves: nothing escapes as an unhandled rejection
  assert.ok(rounds >= 4, `the lookups went on (${rounds} reads)`);
  assert.ok(lines.some((l) => l.level === "error" && l.msg === "cluster DNS lookups failed"));
  assert.deepEqual(source.list().items.map((o) => o.metadata.name), [DNS_RESOLVER_NAME]);
});
