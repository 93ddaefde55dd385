/** The module images the operator installs unless a flag or variable overrides them. */
import type { ModuleImages } from "../api/images.ts";
import { KEDA_VERSION } from "./scaler/names.ts";

/** Module images used when no flag or variable overrides them; KEDA at the version the reconciler renders. */
export const DEFAULT_IMAGES: ModuleImages = {
  serverlessController: "ghcr.io/platform-project/serverless-controller:0.1.0",
  kedaOperator: `ghcr.io/kedacore/keda:${KEDA_VERSION}`,
  kedaMetricsServer: `ghcr.io/kedacore/keda-metrics-apiserver:${KEDA_VERSION}`,
  kedaAdmissionWebhooks: `ghcr.io/kedacore/keda-admission-webhooks:${KEDA_VERSION}`,
};
