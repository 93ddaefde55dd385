/**
 * Every controller of the operator, by name: the one list that the operator (`run --controllers`),
 * the simulator and the benchmarks take their controllers from.
 */
import type { ControllerSpec } from "../runtime/controller_spec.ts";
import { rateLimitController } from "./ratelimit.ts";
import { scalerController } from "./scaler.ts";
import { serverlessController } from "./serverless.ts";

/** Names of the controllers, in the order the operator starts them. */
export const CONTROLLER_NAMES = ["serverless", "scaler", "ratelimit"] as const;
/** A controller name. */
export type ControllerName = typeof CONTROLLER_NAMES[number];

/** Every controller of the operator, by name. */
export const CONTROLLERS: Readonly<Record<ControllerName, ControllerSpec>> = {
  serverless: serverlessController,
  scaler: scalerController,
  ratelimit: rateLimitController,
};

/** Every controller, in CONTROLLER_NAMES order (what the simulated operator runs). */
export const ALL_CONTROLLERS: readonly ControllerSpec[] = CONTROLLER_NAMES.map((n) =>
  CONTROLLERS[n]
);
