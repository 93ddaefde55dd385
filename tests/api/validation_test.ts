/**
 * The plans the operator validates with answer exactly as the zod schemas they come from: the same
 * value (defaults filled, unknown fields stripped or kept) or the same field errors, on objects
 * generated from each plan and bent at random (wrong types, bounds, bad patterns, missing and
 * extra fields, nulls).
 */
import assert from "node:assert/strict";
import { FILL_INTERVAL_PATTERN } from "../../src/api/duration.ts";
import fc from "fast-check";
import { z } from "zod";
import { parseWith } from "../../src/api/issues.ts";
import { generatedPlans, PLAN_SCHEMAS, PLANS_FILE, plansText } from "../../src/api/schema/plans.ts";
import { planOf } from "../../src/api/validation/from_zod.ts";
import type { ValidationPlan } from "../../src/api/validation/plan.ts";
import { PLANS } from "../../src/api/validation/plans.ts";
import { validate } from "../../src/api/validation/run.ts";

const ABSENT = Symbol("absent");

const STRINGS = [
  "",
  "a",
  "Ready",
  "True",
  "30s",
  "1m",
  "0s",
  "10x",
  "/headers",
  "/a?b",
  "100m",
  "512Mi",
  "x.example.com/Ready",
  "not camel",
  "InstallationErr",
  "🙂",
  "🙂".repeat(200),
  "x".repeat(317),
  "x".repeat(1025),
  "info",
  "json",
];
const NUMBERS = [0, 1, -1, 2, 30, 1.5, 4294967295, 4294967296, 2 ** 53, -(2 ** 53), 1e21];

/** Any JSON value, for a field given the wrong thing. */
const wrong: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.constantFrom(...STRINGS),
  fc.constantFrom(...NUMBERS),
  fc.boolean(),
  fc.constant([]),
  fc.constant(["a"]),
  fc.constant({}),
  fc.constant({ length: 2 }),
);

/**
 * Values for `plan`: of its shape, and wrong about one time in `bend` (never when 0). Unbent values
 * keep to the plan's own checks, so whole objects come out valid and their defaults are compared.
 */
function valuesOf(plan: ValidationPlan, bend: number): fc.Arbitrary<unknown> {
  if (bend === 0) return shaped(plan, bend);
  return fc.oneof({ weight: bend - 1, arbitrary: shaped(plan, bend) }, {
    weight: 1,
    arbitrary: wrong,
  });
}

/** The candidates that pass a leaf's own checks (all of them when bending). */
function passing<T>(plan: ValidationPlan, candidates: readonly T[], bend: number): T[] {
  if (bend > 0) return [...candidates];
  const ok = candidates.filter((c) => validate(plan, c).ok);
  return ok.length ? ok : [...candidates];
}

/** The size a plan's check of this kind bounds (a length, entries, key length), if it has one. */
function bound(
  plan: ValidationPlan,
  kind: "max" | "maxProperties" | "maxKeyLength",
): number | undefined {
  const check = ("checks" in plan ? plan.checks ?? [] : []).find((c) => c.check === kind);
  return check && "n" in check ? check.n : undefined;
}

/** Strings at a length bound `n` and one over, in characters (an emoji is two UTF-16 units). */
const around = (n: number) => ["x".repeat(n), "x".repeat(n + 1), "🙂".repeat(n)];

/** Sometimes (one time in 9) `big` instead of `small`: sizes at the bounds are slow to build. */
const sometimes = <T>(small: fc.Arbitrary<T>, big: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 8, arbitrary: small }, { weight: 1, arbitrary: big });

function shaped(plan: ValidationPlan, bend: number): fc.Arbitrary<unknown> {
  switch (plan.type) {
    case "string": {
      const max = bound(plan, "max");
      const strings = [...STRINGS, ...(max === undefined ? [] : around(max))];
      return bend
        ? fc.oneof(fc.constantFrom(...strings), fc.string({ maxLength: 4 }))
        : fc.constantFrom(...passing(plan, strings, bend));
    }
    case "int":
      return bend
        ? fc.oneof(fc.constantFrom(...NUMBERS), fc.integer({ min: -3, max: 70 }))
        : fc.constantFrom(...passing(plan, NUMBERS, bend));
    case "boolean":
      return fc.boolean();
    case "enum":
      return fc.constantFrom(...plan.values, ...(bend ? ["other"] : []));
    case "object": {
      const fields = Object.entries(plan.shape).map(([key, child]) => {
        const present = valuesOf(child, bend).map((v) => [key, v] as const);
        const mayLack = bend > 0 || child.type !== "object" && "inner" in child;
        return mayLack
          ? fc.oneof({ weight: 5, arbitrary: present }, {
            weight: 1,
            arbitrary: fc.constant([key, ABSENT] as const),
          })
          : present;
      });
      const extra = fc.option(fc.tuple(fc.constantFrom("extra", "x-y", "length"), wrong), {
        freq: 4,
      });
      return fc.tuple(fc.tuple(...fields), extra).map(([entries, more]) => {
        const out: Record<string, unknown> = {};
        for (const [k, v] of entries) if (v !== ABSENT) out[k] = v;
        if (more) out[more[0]] = more[1];
        return out;
      });
    }
    case "record": {
      const keyMax = bound(plan, "maxKeyLength");
      const longKeys = keyMax === undefined ? [] : around(keyMax).filter((_, i) => bend || i !== 1);
      const small = fc.dictionary(
        fc.constantFrom("app", "a", "x-y", "b.c/d", ...longKeys),
        valuesOf(plan.value, bend),
        { minKeys: bend ? 0 : 1, maxKeys: 3 },
      );
      const max = bound(plan, "maxProperties");
      if (max === undefined) return small;
      const full = fc.array(valuesOf(plan.value, bend), {
        minLength: max,
        maxLength: max + (bend ? 1 : 0),
      }).map((values) => Object.fromEntries(values.map((v, i) => [`k${i}`, v])));
      return sometimes(small, full);
    }
    case "array": {
      const max = bound(plan, "max");
      const small = fc.array(valuesOf(plan.item, bend), { maxLength: Math.min(3, max ?? 3) });
      if (max === undefined) return small;
      const full = fc.array(valuesOf(plan.item, bend), {
        minLength: max,
        maxLength: max + (bend ? 1 : 0),
      });
      return sometimes(small, full);
    }
    case "optional":
    case "default":
    case "prefault":
      return fc.oneof({ weight: 4, arbitrary: valuesOf(plan.inner, bend) }, {
        weight: 1,
        arbitrary: fc.constant(undefined),
      });
  }
}

/** The counterexample where a plan and a schema disagree, or undefined when they never do. */
function disagreement(plan: ValidationPlan, schema: z.ZodType, runs: number, seed: number) {
  const inputs = fc.oneof(valuesOf(plan, 0), valuesOf(plan, 40), valuesOf(plan, 7));
  const result = fc.check(
    fc.property(inputs, (input) => {
      assert.deepEqual(validate(plan, input), parseWith(schema, input));
    }),
    { numRuns: runs, seed },
  );
  return result.failed ? result.counterexample : undefined;
}

for (const [name, schema] of Object.entries(PLAN_SCHEMAS)) {
  Deno.test(`validation plan of ${name}: the same value or the same errors as its zod schema`, () => {
    const plan = PLANS[name as keyof typeof PLANS];
    assert.deepEqual(disagreement(plan, schema, 3000, 20261123), undefined);
  });
}

Deno.test("validation plans: the checked-in plans.json is what the schemas generate", async () => {
  assert.equal(await Deno.readTextFile(PLANS_FILE), plansText());
  assert.deepEqual(PLANS, generatedPlans());
});

Deno.test("validation plans: a plan that differs from its schema is caught", () => {
  const spec = (PLANS.RateLimit as Extract<ValidationPlan, { type: "object" }>).shape.spec;
  const broken = structuredClone(PLANS.RateLimit) as Extract<ValidationPlan, { type: "object" }>;
  // The bucket interval pattern loosened: `0s` would pass the plan and fail the schema.
  const text = JSON.stringify(spec).replace(FILL_INTERVAL_PATTERN, "^[0-9]+(s|m)$");
  assert.notEqual(text, JSON.stringify(spec));
  broken.shape.spec = JSON.parse(text);
  assert.notEqual(disagreement(broken, PLAN_SCHEMAS.RateLimit, 3000, 1), undefined);
});

Deno.test("validation plans: what a plan cannot express is refused, not guessed", () => {
  const refused: [z.ZodType, RegExp][] = [
    [z.string().transform((s) => s.length), /the type pipe/],
    [z.union([z.string(), z.int()]), /the type union/],
    [z.strictObject({ a: z.string() }), /a never catch-all/],
    [z.string().email(), /the check string_format \(email\)/],
    [z.number(), /a number that is not z.int\(\)/],
    [z.object({ a: z.string() }).refine((o) => o.a !== "x"), /1 refinement\(s\) but 0 stated/],
    [z.string().regex(/a/i), /a pattern with flags \/i/],
    [z.string().default("a").optional(), /optional around default/],
  ];
  for (const [schema, message] of refused) assert.throws(() => planOf(schema), message);
});

Deno.test("validation plans: a schema's message function becomes a template of the input", () => {
  const plan = planOf(
    z.object({
      at: z.string().regex(/^x$/, { error: (i) => `${JSON.stringify(i.input)} is no x` }),
    }),
  );
  assert.deepEqual(validate(plan, { at: "y" }), {
    ok: false,
    errors: [{ path: "at", message: '"y" is no x' }],
  });
});
