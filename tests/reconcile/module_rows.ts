/** The walk over a module's state table: every row has a case, and each case reaches its row. */
import assert from "node:assert/strict";
import { rowOfStatus, type StateRow } from "../../src/reconcile/conditions.ts";
import type { Plan } from "../../src/reconcile/plan.ts";
import { statusOf } from "./serverless_fixtures.ts";

/** The input that reaches a row, the message the row's condition must have, and more checks. */
export interface RowCase<I> {
  input: () => I;
  message: RegExp;
  check?: (plan: Plan) => void;
}

/**
 * Registers a test that every row of `table` has a case (by row number), and a test a row: the
 * Plan of the case's input shows the row's state and condition, with the case's message.
 */
export function testStateRows<I>(
  kind: string,
  table: readonly StateRow[],
  cases: Record<number, RowCase<I>>,
  reconcile: (input: I) => Plan,
): void {
  Deno.test(`every ${kind} state-table row has a case`, () => {
    assert.deepEqual(Object.keys(cases).map(Number), table.map((r) => r.no));
  });
  for (const row of table) {
    Deno.test(`${kind} row ${row.no}: ${row.state} ${row.type}=${row.status} ${row.reason}`, () => {
      const c = cases[row.no];
      const plan = reconcile(c.input());
      const status = statusOf(plan);
      assert.equal(status.state, row.state);
      const cond = status.conditions.find((x) => x.type === row.type);
      assert.ok(cond, `no ${row.type} condition in ${JSON.stringify(status)}`);
      assert.equal(cond.status, row.status);
      assert.equal(cond.reason, row.reason);
      assert.match(cond.message, c.message);
      assert.equal(rowOfStatus(table, status)?.state, row.state);
      c.check?.(plan);
    });
  }
}
