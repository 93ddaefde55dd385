/**
 * The properties both module reducers (Serverless, Scaler) must have, over worlds from nothing, or
 * installed from another spec, or with their status wiped: deterministic and pure (the same input
 * gives the same Plan, the input is not changed, the spec never written), and convergent (carrying
 * out the Plans reaches a fixpoint with zero writes and no Events).
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { rowOfStatus, type StateRow } from "../../src/reconcile/conditions.ts";
import type { Plan } from "../../src/reconcile/plan.ts";
import type { KubeObject } from "../../src/api/object.ts";
import { deepFreeze } from "../../src/api/json.ts";
import { statusOf } from "./serverless_fixtures.ts";
import { carryOut, isQuiet } from "./plans_on_sim_store.ts";
import { isClaimingPlan, type World } from "./module_fixtures.ts";

/** A module reducer as the shared properties see it. */
export interface ModuleReducer<I> {
  kind: string;
  /** Specs mixing valid and invalid values of every field. */
  arbSpec: fc.Arbitrary<Record<string, unknown>>;
  /** The module object with `spec`, as the API server returns it. */
  object(spec: Record<string, unknown>): KubeObject;
  inputOf(w: World): I;
  reconcile(input: I): Plan;
  /** Carries out Plans from `w` until they write nothing. */
  converge(w: World): { world: World };
  table: readonly StateRow[];
  numRuns: number;
}

/** A world from nothing (0), installed from another spec (1), or that with its status wiped (2). */
export function arbModuleWorld<I>(m: ModuleReducer<I>): fc.Arbitrary<World> {
  return fc.tuple(m.arbSpec, m.arbSpec, fc.nat(2)).map(([a, b, start]) => {
    if (start === 0) return { object: m.object(b), others: [], installed: [] };
    const before = m.converge({ object: m.object(a), others: [], installed: [] }).world;
    const object = structuredClone(before.object!);
    object.spec = b;
    object.metadata.generation = 2;
    if (start === 2) delete object.status;
    return { ...before, object };
  });
}

/** Registers the determinism and fixpoint properties of `m` as two tests. */
export function testModuleProperties<I>(m: ModuleReducer<I>): void {
  const arbWorld = arbModuleWorld(m);
  const params = { seed: 42, numRuns: m.numRuns };

  Deno.test(`${m.kind}: the same input gives the same Plan and the input is not changed`, () => {
    fc.assert(
      fc.property(arbWorld, (w) => {
        const input = deepFreeze(m.inputOf(w));
        const copy = structuredClone(input);
        const a = m.reconcile(input);
        assert.deepEqual(m.reconcile(input), a);
        assert.deepEqual(input, copy);
        assert.ok(
          a.apply.every((o) => o.kind !== m.kind),
          `never writes a ${m.kind} (its spec)`,
        );
      }),
      params,
    );
  });

  Deno.test(`${m.kind}: carrying out the Plans reaches a fixpoint with zero writes`, () => {
    fc.assert(
      fc.property(arbWorld, (start) => {
        let w = start;
        for (let pass = 0; pass < 6; pass++) {
          const plan = m.reconcile(m.inputOf(w));
          assert.ok(
            isClaimingPlan(plan) || rowOfStatus(m.table, statusOf(plan)),
            `not a row: ${JSON.stringify(plan.status)}`,
          );
          if (isQuiet(w, plan)) {
            assert.deepEqual(plan.events, [], "no events without a change");
            const again = m.reconcile(m.inputOf(carryOut(w, plan)));
            assert.deepEqual([again.apply, again.delete, again.status], [
              [],
              [],
              w.object?.status,
            ]);
            return;
          }
          w = carryOut(w, plan);
        }
        assert.fail(`no fixpoint within 6 passes for ${JSON.stringify(start.object?.spec)}`);
      }),
      params,
    );
  });
}
