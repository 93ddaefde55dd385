/** The one controller registry: names and specs agree, and the simulated operator runs it. */
import assert from "node:assert/strict";
import { ALL_CONTROLLERS, CONTROLLER_NAMES, CONTROLLERS } from "../../src/controllers/registry.ts";
import { createLogger } from "../../src/runtime/log.ts";
import { SimClock } from "../../sim/clock.ts";
import { SimCluster } from "../../sim/cluster/mod.ts";
import { OperatorProcess } from "../../sim/operator.ts";
import { Prng } from "../../sim/prng.ts";

Deno.test("registry: each name is its controller's name, in one order", () => {
  for (const name of CONTROLLER_NAMES) assert.equal(CONTROLLERS[name].name, name);
  assert.deepEqual(ALL_CONTROLLERS.map((c) => c.name), [...CONTROLLER_NAMES]);
  assert.deepEqual(Object.keys(CONTROLLERS).sort(), [...CONTROLLER_NAMES].sort());
});

Deno.test("registry: the simulated operator starts every registered controller by default", () => {
  const clock = new SimClock();
  const prng = new Prng(1);
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({ clock, level: "info", sink: (l) => lines.push(JSON.parse(l)) });
  const op = new OperatorProcess({ cluster: new SimCluster({ clock, prng }), prng, log });
  op.start();
  op.crash();
  const starting = lines.find((l) => l.msg === "starting");
  assert.equal(starting?.controllers, CONTROLLER_NAMES.join(","));
});
