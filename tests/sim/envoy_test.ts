/**
 * The simulator's Envoy version: a scenario file may name it (`envoy:`), `deno task sim --envoy`
 * overrides it, and the pinned scenario of issue 11 shows both refills.
 */
import assert from "node:assert/strict";
import { parseSimArgs, runSim } from "../../src/cli/sim.ts";
import { envoyBehaviour } from "../../src/dataplane/mod.ts";
import { parseScenario } from "../../sim/scenario/format.ts";
import { runScenario } from "../../sim/scenario/run.ts";

const PINNED = "sim/scenarios/ratelimit-continuous-refill.yaml";

function version(v: string) {
  const b = envoyBehaviour(v);
  assert.ok(b.ok);
  return b.value;
}

Deno.test("format: envoy is a version string; numbers and unknown versions are refused", () => {
  const base = "name: x\nsteps:\n  - at: 1s\n";
  assert.equal(parseScenario(`${base}envoy: "1.30"\n`).envoy?.refill, "interval");
  assert.equal(parseScenario(`${base}envoy: v1.36.2\n`).envoy?.version, "1.36");
  assert.equal(parseScenario(base).envoy, undefined);
  assert.throws(
    () => parseScenario(`${base}envoy: 1.30\n`, "f.yaml"),
    /f\.yaml: envoy: write the Envoy version as a string, e\.g\. "1\.30" \(YAML reads 1\.3 as a number\)/,
  );
  assert.throws(
    () => parseScenario(`${base}envoy: "1.29"\n`),
    /envoy: the model follows Envoy 1\.30 to 1\.38, not 1\.29/,
  );
});

Deno.test("the pinned scenario: Envoy 1.38 admits the third request; 1.30's timer refuses it", async () => {
  const text = await Deno.readTextFile(PINNED);
  const pinned = parseScenario(text, PINNED);
  assert.equal(pinned.envoy?.version, "1.38");
  const now = await runScenario(pinned, { file: PINNED });
  assert.ok(now.ok, now.failure ?? "");
  assert.equal(now.envoy, "1.38");
  // The same requests under Envoy 1.30, checking statuses only (1.30's reset header differs too).
  const statusesOnly = parseScenario(text.replace(/headers: \{[^}]*\}/g, "headers: {}"), PINNED);
  const old = await runScenario(statusesOnly, { file: PINNED, envoy: version("1.30") });
  assert.equal(old.envoy, "1.30");
  assert.equal(old.ok, false);
  assert.match(
    old.failure ?? "",
    /^step 4 \(at 26s\): response 1 \(GET \/get -> demo \{app=httpbin\}\): status: expected 200, got 429$/,
  );
});

Deno.test("cli sim: --envoy overrides the file, shows in the line and in the replay command", async () => {
  assert.equal(parseSimArgs(["--envoy", "1.30"]).envoy?.version, "1.30");
  assert.throws(() => parseSimArgs(["--envoy", "2.0"]), /--envoy: "2\.0" is not an Envoy version/);
  const lines: string[] = [];
  const code = await runSim([PINNED, "--envoy", "1.30"], {
    out: (l) => lines.push(...l.split("\n")),
    err: (l) => lines.push(l),
  });
  assert.equal(code, 1);
  assert.match(lines[0], /^FAIL {2}.*ratelimit-continuous-refill\.yaml \(seed 1, Envoy 1\.30\) /);
  assert.equal(
    lines[2].trim(),
    `seed 1; replay: deno task sim ${PINNED} --seed 1 --envoy 1.30`,
  );
  const bad: string[] = [];
  assert.equal(await runSim(["--envoy=1.3"], { out: () => {}, err: (l) => bad.push(l) }), 2);
  assert.match(bad[0], /^error: --envoy: the model follows Envoy 1\.30 to 1\.38, not 1\.3/);
});
