/**
 * Every check of a simulated run can fail: for each invariant (sim/invariants.ts), each sweep check
 * (liveness, restoration, settling, quiet, data plane) a deliberately broken operator (tests/sim/
 * mutants.ts) runs one sweep seed, and the simulator must report that check, by name, as the run's
 * failure, while the real operator passes the very same seed and fault mix.
 * docs/simulation-invariants.md lists the checks and the faults that would break them.
 */
import assert from "node:assert/strict";
import { type FaultChoice, faultsFor } from "../../sim/fault_choice.ts";
import type { RunResult } from "../../sim/run_result.ts";
import { runSeed } from "../../sim/seed_run.ts";
import * as mutant from "./mutants.ts";

interface Case {
  /** The check that must fail, as the run reports it. */
  check: string;
  mutant: string;
  options: () => mutant.MutantOptions;
  seed: number;
  faults: FaultChoice;
  /** The run's failure must match. */
  failure: RegExp;
}

const CASES: readonly Case[] = [
  {
    check: "one-served-singleton",
    mutant: "a Serverless reducer that skips the claim and serves itself",
    options: mutant.skipsTheClaim,
    seed: 3,
    faults: "none",
    failure: /^invariant one-served-singleton broken .*2 served Serverless objects/,
  },
  {
    check: "operator-deletes-only-its-own",
    mutant: "a RateLimit plan that deletes a user's ConfigMap carrying the operator's label",
    options: mutant.deletesAUsersObject,
    seed: 1,
    faults: "none",
    failure: /^invariant operator-deletes-only-its-own broken .*copied-settings, created by user/,
  },
  {
    check: "user-spec-unchanged",
    mutant: "a RateLimit reducer that writes the user's spec back with 1m as 60s",
    options: mutant.editsAUsersSpec,
    seed: 4,
    faults: "none",
    failure: /^invariant user-spec-unchanged broken .*changed RateLimit/,
  },
  {
    check: "finalizer-after-cleanup",
    mutant: "module reducers that remove the finalizer before deleting what they installed",
    options: mutant.dropsTheFinalizerFirst,
    seed: 5,
    faults: "none",
    failure: /^invariant finalizer-after-cleanup broken .*installed object\(s\) remain/,
  },
  {
    check: "status-is-a-table-row",
    mutant: "a RateLimit reducer whose condition reason is in no row of the table",
    options: mutant.writesAStatusOffTheTable,
    seed: 1,
    faults: "none",
    failure: /^invariant status-is-a-table-row broken .*AllGood/,
  },
  {
    check: "last-good-kept",
    mutant: "a RateLimit reducer that deletes its EnvoyFilter when a new spec is refused",
    options: mutant.dropsTheLastGoodLimit,
    seed: 59,
    faults: "none",
    failure: /^invariant last-good-kept broken .*deleted EnvoyFilter .* no older RateLimit/,
  },
  {
    check: "liveness (mode and rate of the limit in force)",
    mutant: "a RateLimit reducer whose status.mode describes the spec, not the filter in force",
    options: mutant.describesTheSpecsMode,
    seed: 59,
    faults: "none",
    failure:
      /^liveness: not converged .*RateLimit demo\/rl-b: status.mode "Enforcing", its filter is Shadow/,
  },
  {
    check: "writes-only-while-leading",
    mutant: "two replicas that ignore the Lease (no leader election)",
    options: mutant.ignoresTheLease,
    seed: 1,
    faults: "none",
    failure: /^invariant writes-only-while-leading broken .*names no one/,
  },
  {
    check: "liveness",
    mutant: "a RateLimit reducer that never writes a status",
    options: mutant.neverConverges,
    seed: 1,
    faults: "none",
    failure: /^liveness: not converged 30 min after faults stopped: RateLimit .*no status yet/,
  },
  {
    check: "liveness (restored)",
    mutant: "module controllers whose cache never forgets a deleted object",
    options: mutant.neverForgets,
    seed: 3,
    faults: { ownedDeletes: 4 },
    failure: /^liveness: not converged .*deleted by someone else at .* and not restored/,
  },
  {
    check: "liveness (settles)",
    mutant: "a RateLimit reducer that rewrites its status every 10 s",
    options: () => mutant.writesAtRest(10_000),
    seed: 1,
    faults: "none",
    failure: /^liveness: converged, but the operator kept writing$/,
  },
  {
    check: "quiet",
    mutant: "a RateLimit reducer that rewrites its status every 100 s",
    options: () => mutant.writesAtRest(100_000),
    seed: 1,
    faults: "none",
    failure:
      /^quiet: \d+ operator write\(s\) while nothing changed, first: .*applyStatus RateLimit/,
  },
  {
    check: "liveness (blast radius)",
    mutant: "an operator that takes istio-system for the mesh's root namespace (it is mesh-system)",
    options: mutant.misplacesTheRootNamespace,
    seed: 3,
    faults: "none",
    failure:
      /^liveness: not converged .*EnvoyFilter mesh-system\/everyone in the mesh's root namespace reaches demo\/httpbin-.*, which is not an ingress gateway/,
  },
  {
    // The operator itself sees it now: istiod's dumps show the proxies holding another limit than
    // the one in force, so Accepted never turns True (before this, the data plane caught it).
    check: "liveness (Accepted)",
    mutant: "EnvoyFilters that allow one token more than the RateLimit says",
    options: mutant.enforcesTheWrongTokens,
    seed: 1,
    faults: "none",
    failure:
      /^liveness: not converged .*RateLimit demo\/rl-c: every proxy it reaches holds its limits, expected Accepted=True, got .*Accepted=Unknown\/Pending/,
  },
  {
    check: "data plane",
    mutant: "EnvoyFilters whose per-client rule gives all clients one bucket",
    options: mutant.sharesOneBucketAmongClients,
    seed: 1,
    faults: "none",
    failure: /^after the quiet period: data plane: clients p1, p1, p2 at .* got \[200,429,429\]/,
  },
  {
    check: "accepted-means-held",
    mutant: "a RateLimit reducer that says Accepted=True without looking at istiod",
    options: mutant.claimsAcceptedWithoutLooking,
    seed: 5,
    faults: { proxyNeverConnects: 1 },
    failure:
      /^invariant accepted-means-held broken .*RateLimit demo\/rl-c is Accepted, but the proxy of Pod demo\/httpbin-.* \(notConnected\) did not hold EnvoyFilter demo\/rl-c rendered from generation/,
  },
  {
    // istiod's dump already shows a push still in its queue: read before a later syncz confirmed
    // no push was under way, it shows a limit the proxy does not hold yet.
    check: "accepted-means-held",
    mutant: "a RateLimit controller that trusts a reading of a proxy's dump before it is confirmed",
    options: mutant.trustsUnconfirmedReadings,
    seed: 40,
    faults: "none",
    failure:
      /^invariant accepted-means-held broken .*RateLimit mesh-system\/gateway is Accepted, but the proxy of Pod mesh-system\/mesh-ingressgateway-.* did not hold EnvoyFilter mesh-system\/gateway rendered from generation 1/,
  },
  {
    // An edit that keeps the buckets: the dump of the previous generation shows the same ones.
    check: "accepted-means-held",
    mutant: "a RateLimit controller that compares buckets only, not the route digest",
    options: mutant.comparesBucketsOnly,
    seed: 26,
    faults: "default",
    failure:
      /^invariant accepted-means-held broken .*RateLimit demo\/rl-c is Accepted, but the proxy of Pod demo\/httpbin-.* \(accepted\) did not hold EnvoyFilter demo\/rl-c rendered from generation 2, the one its status says is enforced/,
  },
  {
    check: "global-window",
    mutant: "a RateLimit reducer that hands the engine twice each global limit",
    options: mutant.doublesTheGlobalLimit,
    seed: 1,
    faults: "default",
    failure:
      /^invariant global-window broken .*global limit: demo\/rl-c_rule_0 admitted 3 requests in the SECOND window starting .*, its limit 2$/,
  },
  {
    check: "global-window",
    mutant: "a rate limit engine whose Pods each count in a Redis of their own",
    options: mutant.countsInRedisPerPod,
    seed: 4,
    faults: "default",
    failure:
      /^invariant global-window broken .*global limit: demo\/rl-a_rule_0 admitted 5 requests in the SECOND window starting .*, its limit 4$/,
  },
  {
    check: "rejected-names-a-rejecting-proxy",
    mutant: "a RateLimit reducer that reports a proxy not yet connected as one that rejected",
    options: mutant.reportsPendingAsRejected,
    seed: 5,
    faults: { proxyNeverConnects: 1 },
    failure:
      /^invariant rejected-names-a-rejecting-proxy broken .*none it names was rejecting .*notConnected/,
  },
  {
    check: "liveness (Accepted)",
    mutant: "an operator that never asks istiod about the proxies",
    options: mutant.neverAsksIstiod,
    seed: 1,
    faults: "none",
    failure:
      /^liveness: not converged .*RateLimit demo\/rl-c: every proxy it reaches holds its limits, expected Accepted=True, got .*Accepted=Unknown\/IstiodNotAsked/,
  },
  {
    check: "scaler-ready-needs-metrics-api",
    mutant:
      "a Scaler reducer that does not read the aggregator's verdict on KEDA's metrics APIService",
    options: mutant.ignoresTheMetricsApi,
    seed: 6,
    faults: { metricsOutages: 3 },
    failure:
      /^invariant scaler-ready-needs-metrics-api broken .*Ready while APIService v1beta1\.external\.metrics\.k8s\.io is not Available \(False\/FailedDiscoveryCheck\)/,
  },
  {
    check: "module-ready-needs-rollout",
    mutant: "a Serverless reducer that sees its Deployment rolled out whatever its status says",
    options: mutant.ignoresTheRollout,
    seed: 6,
    faults: { slowDeployment: 1 },
    failure:
      /^invariant module-ready-needs-rollout broken .*wrote Serverless default\/third Ready while Deployment default\/serverless-ctrl-mngr is not ready \(waiting: 1 replica\(s\) unavailable\)/,
  },
  {
    check: "scaler-ready-needs-cluster-dns",
    mutant: "a Scaler reducer that does not read the operator's cluster DNS lookups",
    options: mutant.ignoresClusterDns,
    seed: 6,
    faults: { dnsOutages: 3 },
    failure:
      /^invariant scaler-ready-needs-cluster-dns broken .*still shows Ready \d+ ms into a cluster DNS outage/,
  },
];

const baselines = new Map<string, Promise<RunResult>>();

/** The real operator's run of a seed and fault mix (each run once). */
function baseline(seed: number, faults: FaultChoice): Promise<RunResult> {
  const key = `${seed} ${JSON.stringify(faults)}`;
  let run = baselines.get(key);
  if (!run) baselines.set(key, run = runSeed(seed, { faults: faultsFor(faults, seed) }));
  return run;
}

for (const c of CASES) {
  Deno.test(`mutation: ${c.check} fails for ${c.mutant}`, async () => {
    const faults = faultsFor(c.faults, c.seed);
    const real = await baseline(c.seed, c.faults);
    assert.ok(real.ok, `the real operator fails seed ${c.seed}: ${real.failure}`);
    const broken = await runSeed(c.seed, { faults, sim: c.options() });
    assert.equal(broken.ok, false, `the mutant passed seed ${c.seed}`);
    assert.match(broken.failure ?? "", c.failure);
  });
}

Deno.test("mutation: every invariant of sim/invariants.ts has a mutant", async () => {
  const source = await Deno.readTextFile(new URL("../../sim/invariants.ts", import.meta.url));
  const names = [...source.matchAll(/#fail\(\s*"([a-z-]+)"/g)].map((m) => m[1]);
  assert.ok(names.length >= 6, `found ${names}`);
  for (const name of names) {
    assert.ok(CASES.some((c) => c.check === name), `no mutant breaks ${name}`);
  }
});
