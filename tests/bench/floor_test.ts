/** The floors under the operator's idle memory are read from real Deno processes. */
import assert from "node:assert/strict";
import { addFloors, FLOORS } from "../../bench/cluster/floor.ts";

Deno.test("each floor is a Deno process's own VmRSS, the empty script the lowest", async () => {
  const rows: { name: string; value: number }[] = [];
  const empty = await addFloors({ add: (f) => rows.push(f) }, "s");
  assert.deepEqual(rows.map((r) => r.name), FLOORS.map((f) => `floor: ${f.name}`));
  assert.equal(empty, rows[0].value);
  assert.ok(empty > 10 && empty < 200, `${empty} MB`);
  for (const r of rows.slice(1)) assert.ok(r.value > empty, `${r.name}: ${r.value} MB`);
});
