/**
 * docs/design.md shows each kind's state table; its first six columns must be the data the reducers
 * use (one concept, one place: the tables are data in src/reconcile, the page explains them).
 */
import assert from "node:assert/strict";
import type { StateRow } from "../src/reconcile/conditions.ts";
import { RATELIMIT_STATES } from "../src/reconcile/ratelimit/mod.ts";
import { SCALER_STATES } from "../src/reconcile/scaler/mod.ts";
import { SERVERLESS_STATES } from "../src/reconcile/serverless/mod.ts";

const PAGE = new URL("../docs/design.md", import.meta.url);

/** The rows of the table under `### <kind>` in the State tables section, as cells. */
export function tableRows(markdown: string, kind: string): string[][] {
  const section = markdown.split("\n## State tables\n")[1]?.split("\n## ")[0] ?? "";
  const part = section.split(`\n### ${kind}\n`)[1]?.split("\n### ")[0] ?? "";
  return part.split("\n")
    .filter((l) => /^\|\s*\d+\s*\|/.test(l))
    .map((l) => l.split("|").slice(1, -1).map((c) => c.trim()));
}

const cells = (r: StateRow) => [String(r.no), r.state, r.type, r.status, r.reason, r.meaning];

for (
  const [kind, table] of [
    ["Serverless", SERVERLESS_STATES],
    ["Scaler", SCALER_STATES],
    ["RateLimit", RATELIMIT_STATES],
  ] as const
) {
  Deno.test(`docs/design.md shows the ${kind} state table as the reducer has it`, async () => {
    const rows = tableRows(await Deno.readTextFile(PAGE), kind);
    assert.deepEqual(rows.map((r) => r.slice(0, 6)), table.map(cells));
    for (const r of rows) assert.ok(r[6]?.length > 10, `row ${r[0]}: what moves it here is empty`);
  });
}

Deno.test("the state-table check fails on a row that differs", () => {
  const page =
    "\n## State tables\n\n### Scaler\n\n| 1 | Ready | Installed | True | Verified | Ready | x |\n";
  assert.deepEqual(tableRows(page, "Scaler"), [[
    "1",
    "Ready",
    "Installed",
    "True",
    "Verified",
    "Ready",
    "x",
  ]]);
  assert.notDeepEqual(
    tableRows(page, "Scaler").map((r) => r.slice(0, 6)),
    SCALER_STATES.map(cells),
  );
});
