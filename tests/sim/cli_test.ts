import assert from "node:assert/strict";
import { parseSimArgs, runSim } from "../../src/cli/sim.ts";
import { seconds } from "../../src/cli/sim_report.ts";

async function run(args: string[]): Promise<{ code: number; lines: string[]; errors: string[] }> {
  const lines: string[] = [];
  const errors: string[] = [];
  const code = await runSim(args, {
    out: (l) => lines.push(...l.split("\n")),
    err: (l) => errors.push(l),
  });
  return { code, lines, errors };
}

async function tempScenario(text: string): Promise<string> {
  const file = await Deno.makeTempFile({ suffix: ".yaml" });
  await Deno.writeTextFile(file, text);
  return file;
}

const PASSING = `name: passes
steps:
  - at: 1s
    expect:
      - {kind: Namespace, name: mesh-system, status: {phase: Active}}
`;

Deno.test("cli sim: flags parse; bad flags are usage errors (exit 2)", async () => {
  assert.deepEqual(
    parseSimArgs(["a.yaml", "--seed", "3", "--faults", "none", "--json"]),
    { files: ["a.yaml"], seed: 3, faults: "none", json: true, help: false },
  );
  assert.deepEqual(parseSimArgs(["--seed", "3", "--seeds=4", "--workers=2"]), {
    files: [],
    seed: 3,
    seeds: 4,
    workers: 2,
    json: false,
    help: false,
  });
  // With files no sweep runs: a sweep's flags would be ignored without a word.
  assert.throws(() => parseSimArgs(["a.yaml", "--seeds", "500"]), /--seeds sets the sweep/);
  assert.throws(() => parseSimArgs(["a.yaml", "--workers", "7"]), /--workers runs sweep seeds/);
  assert.throws(() => parseSimArgs(["--seed", "x"]), /--seed needs a non-negative integer/);
  assert.throws(() => parseSimArgs(["--faults", "some"]), /--faults is none or default/);
  assert.throws(() => parseSimArgs(["--nope"]), /unknown flag --nope/);
  assert.throws(() => parseSimArgs(["--workers", "0"]), /--workers needs at least 1/);
  // No seed would run and the run would pass (with --window, over a backwards range).
  for (const args of [["--seed", "5", "--seeds", "0"], ["--window", "today", "--seeds", "0"]]) {
    assert.deepEqual(await run(args), {
      code: 2,
      lines: [],
      errors: ["error: --seeds needs at least 1. See 'mod.ts sim --help'."],
    });
  }
  assert.throws(() => parseSimArgs(["--window", "2026-02-30"]), /a window is a UTC day/);
  assert.throws(() => parseSimArgs(["--window", "today", "--seed", "1"]), /--window and --seed/);
  assert.equal(parseSimArgs(["--window", "today"]).window, "today");
  // A usage error is one line on stderr, nothing on stdout.
  assert.deepEqual(await run(["--sed", "1"]), {
    code: 2,
    lines: [],
    errors: ["error: unknown flag --sed; did you mean --seed? See 'mod.ts sim --help'."],
  });
  const missing = await run(["/nonexistent/s.yaml"]);
  assert.deepEqual(missing, {
    code: 2,
    lines: [],
    errors: ["error: /nonexistent/s.yaml: no such file"],
  });
  for (const flag of ["--help", "-h"]) {
    const help = await run([flag]);
    assert.deepEqual([help.code, help.errors], [0, []]);
    assert.match(help.lines[0], /^Usage: mod\.ts sim \[FILE\.\.\.\]/);
  }
});

Deno.test("cli sim: one line a passing scenario and a summary, exit 0", async () => {
  const file = await tempScenario(PASSING);
  const { code, lines } = await run([file, "--seed", "5"]);
  assert.equal(code, 0);
  assert.match(
    lines[0],
    /^PASS {2}.* \(seed 5, Envoy 1\.38\) {2}virtual \S+ {2}steps \d+ {2}writes \d+ {2}trace [0-9a-f]{16}$/,
  );
  assert.match(lines.at(-1)!, /^1 passed, 0 failed, 0 unfinished \(1 scenarios, 0 sweep seeds, /);
});

Deno.test("cli sim: a failure names the first differing field, the seed and the replay command, exit 1", async () => {
  const file = await tempScenario(
    PASSING.replace("phase: Active", "phase: Gone").replace(
      "steps:\n",
      "steps:\n  - at: 0s\n    apply: {apiVersion: v1, kind: Namespace, metadata: {name: demo}}\n",
    ),
  );
  const { code, lines } = await run([file, "--seed", "4"]);
  assert.equal(code, 1);
  assert.match(lines[0], /^FAIL/);
  assert.match(lines[1], /Namespace mesh-system: status\.phase: expected "Gone", got "Active"/);
  assert.equal(lines[2].trim(), `seed 4; replay: deno task sim ${file} --seed 4`);
  // The last steps of the trace follow, so the failure reads in context.
  assert.match(lines[3], /^ {6}last \d+ of \d+ trace entries:$/);
  assert.match(lines[4], /^ {8}-?[0-9.]+s (status|step|phase|crash|restart|response) /);
  assert.match(lines.at(-1)!, /^0 passed, 1 failed, 0 unfinished /);
});

Deno.test("cli sim: --json prints one object a run with the timeline", async () => {
  const file = await tempScenario(`name: json
steps:
  - at: 0s
    apply: {apiVersion: v1, kind: Namespace, metadata: {name: demo}}
  - at: 1s
    requests: [{to: gateway, path: /ip}]
    expectResponses: [{status: 200}]
`);
  const { code, lines } = await run([file, "--json"]);
  assert.equal(code, 0);
  assert.equal(lines.length, 1);
  const r = JSON.parse(lines[0]);
  assert.equal(r.ok, true);
  assert.equal(typeof r.virtualSeconds, "number");
  assert.ok(
    r.timeline.some((e: { event: string; status?: number }) =>
      e.event === "response" && e.status === 200
    ),
  );
  assert.ok(r.timeline.some((e: { event: string }) => e.event === "step"));
});

Deno.test("cli sim: --seed without files replays sweep seeds; a bad scenario file is exit 2", async () => {
  const { code, lines } = await run(["--seed", "2", "--faults", "none"]);
  assert.equal(code, 0);
  assert.match(lines[0], /^PASS {2}seed 2 /);
  assert.match(lines.at(-1)!, /\(0 scenarios, 1 sweep seeds/);
  const bad = await tempScenario("name: x\nsteps:\n  - at: soon\n");
  const r = await run([bad]);
  assert.deepEqual([r.code, r.lines], [2, []], "the error is on stderr only");
  assert.match(r.errors[0], /^error: .*steps\[0\]\.at: must be a Go duration/);
});

Deno.test("cli sim: virtual times print as seconds, then minutes and whole seconds", () => {
  assert.equal(seconds(59_999), "59.999s");
  assert.equal(seconds(60_000), "1m0s");
  assert.equal(seconds(119_917), "2m0s"); // was 1m60s
  assert.equal(seconds(392_400), "6m32s");
});

Deno.test("cli sim: --faults replaces a scenario's fault rates but keeps the standbys its steps need", async () => {
  // The leader is partitioned and its standby must take over: without the standby it cannot.
  const file = "sim/scenarios/fault-partitioned-leader.yaml";
  for (const faults of ["none", "default"]) {
    const { code, lines } = await run([file, "--faults", faults]);
    assert.equal(code, 0, `--faults ${faults}:\n${lines.join("\n")}`);
  }
});
