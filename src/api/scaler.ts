/**
 * The Scaler module resource (operator.platform-project.io/v1alpha1): KEDA, docs/design.md "Scaler":
 * its constants, types and validation. The zod schema is in schema/scaler.ts.
 */
import type { z } from "zod";
import type { ParseResult } from "./issues.ts";
import type * as S from "./schema/scaler.ts";
import { PLANS } from "./validation/plans.ts";
import { validate, type ValidateOptions } from "./validation/run.ts";

/** The KEDA components a Scaler configures. */
export const SCALER_COMPONENTS = ["operator", "metricServer", "admissionWebhook"] as const;
/** A KEDA component name. */
export type ScalerComponent = (typeof SCALER_COMPONENTS)[number];

/** A parsed Scaler, defaults filled. */
export type Scaler = z.output<typeof S.ScalerSchema>;
/** Scaler spec with defaults filled. */
export type ScalerSpec = z.output<typeof S.ScalerSpecSchema>;
/** Scaler status. */
export type ScalerStatus = z.output<typeof S.ScalerStatusSchema>;
/** A container environment variable. */
export type EnvVar = z.output<typeof S.EnvVarSchema>;

/**
 * Parses a Scaler object; returns it with defaults filled, or field errors. Unknown fields are
 * stripped unless `options.unknown` says otherwise (`ValidateOptions`).
 */
export function parseScaler(
  input: unknown,
  options: Pick<ValidateOptions, "unknown"> = {},
): ParseResult<Scaler> {
  return validate(PLANS.Scaler, input, options);
}
