import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { FaultInjector, NO_FAULTS, swarm } from "../../sim/faults.ts";
import { Prng } from "../../sim/prng.ts";
import { faultsFor, hasFaults } from "../../sim/fault_choice.ts";
import { codeOf, drive, world } from "./helpers.ts";

Deno.test("faults: the swarm mix is a function of the seed and varies across seeds", () => {
  assert.deepEqual(faultsFor("default", 5), faultsFor("default", 5));
  const mixes = Array.from({ length: 50 }, (_, i) => swarm(new Prng(i).fork("swarm")));
  const on = (k: keyof typeof NO_FAULTS) => mixes.filter((m) => (m[k] as number) > 0).length;
  for (
    const k of [
      "conflict",
      "throttle",
      "serverError",
      "timeout",
      "watchDrop",
      "watchStall",
      "watchGone",
      "crashes",
      "slowWrite",
      "planCrashes",
      "leaseLoss",
      "standbys",
      "ownedDeletes",
      "proxyRejects",
      "proxyNeverConnects",
      "brokenFilters",
      "istiodOutages",
      "metricsOutages",
      "dnsOutages",
      "listOutages",
    ] as const
  ) {
    assert.ok(on(k) > 10 && on(k) < 40, `${k} on in ${on(k)} of 50 runs`);
  }
  assert.equal(hasFaults(faultsFor("none", 5)), false);
  assert.equal(hasFaults(faultsFor({ historySize: 5 }, 5)), true);
  assert.throws(
    () => faultsFor({ nope: 1 }, 1),
    /^Error: faults\.nope: unknown fault kind; known: conflict, /,
  );
  assert.throws(
    () => faultsFor({ crashes: 0.5 }, 1),
    /faults\.crashes: expected integer, got 0\.5/,
  );
});

Deno.test("faults: random API errors hit operator replicas only, and only while active", () => {
  const inj = new FaultInjector({ ...NO_FAULTS, serverError: 1 }, new Prng(1), () => 0);
  const req = (actor: string) => inj.request(actor, "get", RESOURCES.ConfigMap, "default", "x");
  assert.equal(req("operator/platform-operator-0")?.kind, "error");
  assert.equal(req("user"), undefined);
  inj.active = false;
  assert.equal(req("operator/platform-operator-0"), undefined);
});

Deno.test("faults: a targeted apiError rule fails exactly `count` matching requests, for anyone", async () => {
  const { driver, client, cluster } = world();
  const inj = new FaultInjector(NO_FAULTS, new Prng(1), () => 0);
  cluster.faults = inj;
  const c = cluster.client("someone");
  inj.rules.push({ verb: "create", target: { kind: "ConfigMap", name: "a" }, code: 500, count: 2 });
  const cm = (name: string) => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: "default" },
  });
  assert.equal(await drive(driver, codeOf(c.create(RESOURCES.ConfigMap, cm("a")))), 500);
  await drive(driver, c.create(RESOURCES.ConfigMap, cm("b")));
  assert.equal(await drive(driver, codeOf(c.create(RESOURCES.ConfigMap, cm("a")))), 500);
  await drive(driver, c.create(RESOURCES.ConfigMap, cm("a")));
  // The fault-free user client never sees faults.
  assert.ok(await drive(driver, client.get(RESOURCES.ConfigMap, "default", "a")));
  const failed = cluster.log.records.filter((r) => r.outcome === 500).length;
  assert.equal(failed, 2);
});

Deno.test("faults: a timeout may or may not have been carried out by the server", async () => {
  const { driver, cluster } = world();
  let executed = true;
  cluster.faults = {
    request: (_a, verb) =>
      verb === "create" ? { kind: "timeout", executed, afterMs: 10_000 } : undefined,
    watch: () => undefined,
    goneAs: () => "event",
  };
  const c = cluster.client("operator/x");
  const cm = (name: string) => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: "default" },
  });
  assert.equal(await drive(driver, codeOf(c.create(RESOURCES.ConfigMap, cm("done")))), 0);
  executed = false;
  assert.equal(await drive(driver, codeOf(c.create(RESOURCES.ConfigMap, cm("lost")))), 0);
  assert.ok(cluster.store.get(RESOURCES.ConfigMap, "default", "done"));
  assert.equal(cluster.store.get(RESOURCES.ConfigMap, "default", "lost"), undefined);
});

Deno.test("faults: a crashed client never answers again", async () => {
  const { driver, cluster } = world();
  const c = cluster.client("operator/x");
  let settled = false;
  const p = c.list(RESOURCES.ConfigMap).finally(() => (settled = true));
  c.kill();
  await driver.runFor(60_000);
  assert.equal(settled, false);
  void p;
});

Deno.test("faults: targeted Deployment faults (replica failure, slow rollout) and their clearing", () => {
  const inj = new FaultInjector(NO_FAULTS, new Prng(1), () => 0);
  const d = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "web", namespace: "demo", uid: "u" },
  };
  inj.failDeployments({ kind: "Deployment", name: "web" }, "quota");
  inj.slowDeployments({ kind: "Deployment", namespace: "demo" }, 60_000);
  assert.equal(inj.createFailure(d, "user"), "quota");
  assert.equal(inj.readyDelayMs(d), 60_000);
  inj.clearDeployments({ kind: "Deployment", name: "web" });
  assert.equal(inj.createFailure(d, "user"), undefined);
  assert.equal(inj.readyDelayMs(d), 60_000);
  inj.clearDeployments();
  inj.active = false;
  assert.equal(inj.readyDelayMs(d), undefined);
});

/** A world whose creates each take 5 s in the server, and a client with 10 ms of latency. */
function slowCreates() {
  const { driver, cluster } = world();
  cluster.faults = {
    request: (_a, verb) => verb === "create" ? { kind: "slow", delayMs: 5_000 } : undefined,
    watch: () => undefined,
    goneAs: () => "event",
  };
  return { driver, cluster, c: cluster.client("operator/x", { latency: () => 10 }) };
}

Deno.test("faults: a slow write lands only when it answers, seconds later", async () => {
  const { driver, cluster, c } = slowCreates();
  let answered = false;
  const p = c.create(RESOURCES.ConfigMap, {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "late", namespace: "default" },
  }).then(() => (answered = true));
  await driver.runFor(4_000);
  assert.equal(cluster.store.get(RESOURCES.ConfigMap, "default", "late"), undefined);
  assert.equal(answered, false);
  await drive(driver, p);
  assert.ok(cluster.store.get(RESOURCES.ConfigMap, "default", "late"));
  assert.ok(driver.clock.now() - cluster.log.records.at(-1)!.at <= 10, "answered as it landed");
});

Deno.test("faults: a slow write past its server-side timeout is given up, writing nothing", async () => {
  const { driver, cluster, c } = slowCreates();
  const cm = (name: string) => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace: "default" },
  });
  const late = codeOf(c.create(RESOURCES.ConfigMap, cm("late"), { timeoutMs: 4_999 }));
  assert.equal(await drive(driver, late), 504);
  assert.equal(cluster.store.get(RESOURCES.ConfigMap, "default", "late"), undefined);
  assert.equal(cluster.log.records.at(-1)!.outcome, 504);
  await drive(driver, c.create(RESOURCES.ConfigMap, cm("in-time"), { timeoutMs: 5_000 }));
  assert.ok(cluster.store.get(RESOURCES.ConfigMap, "default", "in-time"));
});

Deno.test("faults: a lost lease fails the holder's requests on that Lease only, until the window ends", () => {
  let now = 0;
  const inj = new FaultInjector(NO_FAULTS, new Prng(1), () => now);
  inj.loseLease("operator/a", "platform-system", "platform-operator", 10_000);
  const req = (actor: string, name = "platform-operator", verb: "get" | "update" = "get") =>
    inj.request(actor, verb, RESOURCES.Lease, "platform-system", name);
  const kinds = Array.from({ length: 20 }, () => req("operator/a", undefined, "update")?.kind);
  assert.ok(kinds.every((k) => k === "error" || k === "timeout"), String(kinds));
  assert.ok(kinds.includes("error") && kinds.includes("timeout"), String(kinds));
  assert.equal(req("operator/b"), undefined, "the standby reaches the Lease");
  assert.equal(req("operator/a", "serverless-served"), undefined, "other Leases work");
  now = 10_000;
  assert.equal(req("operator/a"), undefined, "the window is over");
});
