/** Every scenario in sim/scenarios/ passes with its own seed and faults. */
import assert from "node:assert/strict";
import { scenarioFiles } from "../../src/cli/sim.ts";
import { parseScenario } from "../../sim/scenario/format.ts";
import { runScenario } from "../../sim/scenario/run.ts";

const files = await scenarioFiles();

Deno.test("scenarios: the folder has the suite", () => {
  assert.ok(files.length >= 30, `only ${files.length} scenario files`);
});

for (const file of files) {
  Deno.test(`scenario ${file.split("/").at(-1)}`, async () => {
    const scenario = parseScenario(await Deno.readTextFile(file), file);
    const result = await runScenario(scenario, { file });
    assert.ok(
      result.ok,
      `${result.failedAt}: ${result.failure}\nreplay: deno task sim ${file} --seed ${result.seed}`,
    );
    assert.ok(result.steps > 0 && result.virtualMs > 0);
  });
}
