/**
 * The validation plans the operator runs with (validation/plans.json), rendered from the zod
 * schemas: `deno task crds` writes them beside the CRDs, and a test keeps them up to date.
 */
import { fileURLToPath } from "node:url";
import type { PlanName } from "../validation/plans.ts";
import { planOf } from "../validation/from_zod.ts";
import type { ValidationPlan } from "../validation/plan.ts";
import { ConditionSchema, ObjectMetaSchema } from "./common.ts";
import { RateLimitSchema } from "./ratelimit.ts";
import { ScalerSchema } from "./scaler.ts";
import { ServerlessSchema } from "./serverless.ts";

/** The zod schema behind each plan. */
export const PLAN_SCHEMAS = {
  RateLimit: RateLimitSchema,
  Serverless: ServerlessSchema,
  Scaler: ScalerSchema,
  ObjectMeta: ObjectMetaSchema,
  Condition: ConditionSchema,
} as const satisfies Record<PlanName, unknown>;

/** Where the generated plans live. */
export const PLANS_FILE = fileURLToPath(new URL("../validation/plans.json", import.meta.url));

/** The plans, generated now. */
export function generatedPlans(): Record<PlanName, ValidationPlan> {
  const out = {} as Record<PlanName, ValidationPlan>;
  for (const [name, schema] of Object.entries(PLAN_SCHEMAS)) out[name as PlanName] = planOf(schema);
  return out;
}

/** The text of plans.json: JSON with two-space indents, as `deno fmt` leaves it. */
export function plansText(plans: Record<PlanName, ValidationPlan> = generatedPlans()): string {
  return `${JSON.stringify(plans, null, 2)}\n`;
}
