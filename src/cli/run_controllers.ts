/** The controllers `run --controllers` can choose from, by name. */
import { rateLimitController } from "../controllers/ratelimit.ts";
import { serverlessController } from "../controllers/serverless.ts";
import type { ControllerSpec } from "../runtime/controller.ts";
import type { ControllerName } from "./run_flags.ts";

/** Every controller of the operator. The scaler controller is wired when src/controllers/scaler.ts lands. */
export const CONTROLLERS: Readonly<Partial<Record<ControllerName, ControllerSpec>>> = {
  serverless: serverlessController,
  ratelimit: rateLimitController,
};
