/**
 * A seed never crashes the sweep: a run that cannot finish (a request never answered, an exception
 * out of the simulated program, a rejection nobody handled, a dead or silent worker) is reported
 * `unfinished` with its replay command and the tail of its trace, and the seeds after it still run.
 * The stuck seeds come from tests/sim/stuck_runner.ts: real sweep seeds with one fault injected.
 */
import assert from "node:assert/strict";
import { sweep } from "../../sim/pool.ts";
import type { RunResult } from "../../sim/run_result.ts";
import { runSim } from "../../src/cli/sim.ts";

const RUNNER = new URL("./stuck_runner.ts", import.meta.url).href;
const replay = (s: number) => `deno task sim --seed ${s}`;

async function sweepStuck(count: number, workers: number): Promise<RunResult[]> {
  const out: RunResult[] = [];
  await sweep({
    from: 1,
    count,
    workers,
    faults: "default",
    replay,
    runner: RUNNER,
    seedTimeoutMs: 15_000,
  }, (r) => out.push(r));
  return out;
}

function byOutcome(rs: RunResult[]): string[] {
  return rs.map((r) => `${r.seed} ${r.outcome}`);
}

Deno.test("unfinished: in one process, stuck, throwing, rejecting and livelocked seeds are reported and the sweep goes on", async () => {
  const rs = await sweepStuck(6, 1);
  assert.deepEqual(byOutcome(rs), [
    "1 passed",
    "2 unfinished",
    "3 passed",
    "4 unfinished",
    "5 unfinished",
    "6 unfinished",
  ]);
  const [stuck, throws, rejects, livelock] = [rs[1], rs[3], rs[4], rs[5]];
  assert.match(
    stuck.failure!,
    /^Unfinished: request did not finish within 120000 ms of virtual time \(\d+ timer\(s\) pending/,
  );
  assert.match(stuck.error!, /at Simulation\.drive/);
  assert.equal(stuck.replay, "deno task sim --seed 2");
  assert.ok(stuck.timeline.length > 0, "the trace up to the stuck request is kept");
  assert.match(throws.failure!, /^TypeError: Cannot read properties of undefined/);
  assert.match(throws.error!, /stuck_runner\.ts/);
  assert.match(rejects.failure!, /^EscapedRejection: unhandled promise rejection: a write nobody/);
  assert.match(livelock.failure!, /^LivelockError: livelock: 100001 events at virtual time /);
  // Passing seeds are the real ones: the same hash as when run on their own.
  assert.ok(rs[0].traceHash.length === 16 && rs[0].timeline.length === 0);
});

Deno.test("unfinished: on workers, a dead worker and a worker that never yields are replaced; every seed is reported in order", async () => {
  const rs = await sweepStuck(9, 2);
  assert.deepEqual(byOutcome(rs), [
    "1 passed",
    "2 unfinished",
    "3 passed",
    "4 unfinished",
    "5 unfinished",
    "6 unfinished",
    "7 unfinished",
    "8 unfinished",
    "9 passed",
  ]);
  assert.match(rs[1].failure!, /^Unfinished: request did not finish/);
  assert.match(rs[6].failure!, /^WorkerLost: worker died: .*uncaught on the worker's event loop/);
  assert.match(rs[7].failure!, /^WorkerLost: no result within 15 s of wall time/);
  assert.equal(rs[7].replay, "deno task sim --seed 8");
});

Deno.test("unfinished: the CLI prints UNFINISHED with the failure, replay, stack and trace tail, counts it, exit 1", async () => {
  const lines: string[] = [];
  const code = await runSim(
    ["--seed", "1", "--seeds", "3", "--workers", "1"],
    { out: (l) => lines.push(...l.split("\n")), err: (l) => lines.push(l) },
    { runner: RUNNER },
  );
  assert.equal(code, 1);
  const at = lines.findIndex((l) => l.startsWith("UNFINISHED  seed 2 "));
  assert.ok(at > 0, lines.join("\n"));
  assert.match(lines[at + 1], /^ {6}at \S+s: Unfinished: request did not finish within 120000 ms/);
  assert.equal(lines[at + 2], "      seed 2; replay: deno task sim --seed 2");
  assert.match(lines[at + 3], /^ {8}at Simulation\.drive/);
  const tail = lines.findIndex((l) => /^ {6}last \d+ of \d+ trace entries:$/.test(l));
  assert.ok(tail > at, lines.join("\n"));
  const [shown, total] = lines[tail].match(/\d+/g)!.map(Number);
  assert.ok(total > 5 && shown === Math.min(15, total), lines[tail]);
  const entries = lines.slice(tail + 1, tail + 1 + shown);
  assert.equal(entries.filter((l) => /^ {8}-?[0-9.]+s \w+ /.test(l)).length, shown);
  assert.match(lines[tail + 1 + shown], /^PASS {2}seed 3 /);
  assert.match(
    lines.at(-1)!,
    /^2 passed, 0 failed, 1 unfinished \(0 scenarios, 3 sweep seeds, 1 worker;/,
  );
  const json: string[] = [];
  await runSim(["--seed", "2", "--json"], { out: (l) => json.push(l), err: (l) => json.push(l) }, {
    runner: RUNNER,
  });
  const r = JSON.parse(json[0]);
  assert.equal(r.outcome, "unfinished");
  assert.equal(r.ok, false);
  assert.match(r.error, /^Unfinished: request did not finish[^]*at Simulation\.drive/);
});
