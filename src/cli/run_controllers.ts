/** The controllers `run --controllers` can choose from, by name. */
import { rateLimitController } from "../controllers/ratelimit.ts";
import { scalerController } from "../controllers/scaler.ts";
import { serverlessController } from "../controllers/serverless.ts";
import type { ControllerSpec } from "../runtime/controller.ts";
import type { ControllerName } from "./run_flags.ts";

/** Every controller of the operator. */
export const CONTROLLERS: Readonly<Record<ControllerName, ControllerSpec>> = {
  serverless: serverlessController,
  scaler: scalerController,
  ratelimit: rateLimitController,
};
