/**
 * Sweep seeds that once failed beyond CI's window, pinned so they keep passing. Each line says what
 * the seed found; `deno task sim --seed N` replays one.
 */
import assert from "node:assert/strict";
import { faultsFor } from "../../sim/fault_choice.ts";
import { runSeed } from "../../sim/seed_run.ts";

const PINNED: readonly { seed: number; found: string }[] = [
  { seed: 100159, found: "two Serverless served at once (same-second creation, racing claims)" },
  { seed: 100747, found: "two Serverless served at once" },
  { seed: 101930, found: "two Serverless served at once" },
  { seed: 100443, found: "crash: three clock jumps inside one user request's 120 s wait" },
  { seed: 100715, found: "crash: clock jumps inside one user request's wait" },
  {
    seed: 272,
    found: "a stalled APIService watch: the Scaler's finalizer went while the APIService remained",
  },
  {
    seed: 3992,
    found:
      "a lost lease, then a finalizer removed while a KEDA Deployment the cache missed remained",
  },
  {
    seed: 76,
    found: "a standby took over on stalled watches and removed a finalizer while objects remained",
  },
  {
    seed: 100266,
    found: "a standby took over on stalled watches and removed a finalizer while objects remained",
  },
  {
    seed: 209,
    found:
      "a leader whose renewal was answered after a clock jump wrote after the standby took over",
  },
  {
    seed: 3396,
    found: "a new leader's list was under way from before its term: a stale status made a second " +
      "served Scaler",
  },
  {
    seed: 9206,
    found: "a deposed leader's CRD apply, slowed in the server, landed after the new leader had " +
      "removed the Scaler's finalizer",
  },
  {
    seed: 100068,
    found: "the quiet check blamed the operator for reporting a KEDA Deployment that became " +
      "Available (a change the cluster's controllers made)",
  },
  {
    seed: 4101446,
    found:
      "a stalled APIService watch held an old Available verdict: the Scaler was written Ready " +
      "while the aggregator's discovery check had failed for 65 s",
  },
  {
    seed: 4506965,
    found:
      "a standby whose istiod tries had backed off to 128 s took the lead and reported istiod " +
      "unreachable for two minutes after it answered again",
  },
  {
    seed: 4600344,
    found:
      "Pods a fault made slow became ready 4 to 12 minutes after the faults stopped: the world " +
      "never stayed still for the quiet period",
  },
  {
    seed: 5200169,
    found: "a stalled APIService watch restarted while a Scaler's Ready write was under way: the " +
      "write was confirmed against the caught-up cache, not the stale copy it was judged from",
  },
  {
    seed: 5204852,
    found: "the harness: a 41 s clock jump inside a cluster DNS outage counted as time the " +
      "operator's lookups should have noticed it in, though no timer can fire in a jump",
  },
  {
    seed: 5407105,
    found: "a new leader's term waited for the module watches to list again; the module was " +
      "deleted meanwhile and they closed, but nothing told the term, which never began",
  },
];

for (const { seed, found } of PINNED) {
  Deno.test(`pinned seed ${seed} (${found}) passes`, async () => {
    const r = await runSeed(seed, { faults: faultsFor("default", seed) });
    assert.ok(r.ok, `seed ${seed} at ${r.failedAt}: ${r.failure}`);
  });
}
