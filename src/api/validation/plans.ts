/** The validation plans of the kinds and their parts, as `deno task crds` generated them. */
import data from "./plans.json" with { type: "json" };
import type { ValidationPlan } from "./plan.ts";

/** What has a plan: the three kinds, and the metadata and Condition every kind shares. */
export type PlanName = "RateLimit" | "Serverless" | "Scaler" | "ObjectMeta" | "Condition";

/** The plans by name (plans.json, generated from the zod schemas of src/api/schema/). */
export const PLANS: Readonly<Record<PlanName, ValidationPlan>> = data as unknown as Record<
  PlanName,
  ValidationPlan
>;
