/** The images of the module workloads, as the reducers render them. */

/** Images of the module workloads; pinned, overridable by operator flags. */
export interface ModuleImages {
  serverlessController: string;
  kedaOperator: string;
  kedaMetricsServer: string;
  kedaAdmissionWebhooks: string;
}

/**
 * The global rate limit engine's version: envoyproxy/ratelimit's pseudo-version that
 * tools/ratelimit-engine/go.mod pins (a test holds them equal).
 */
export const RATELIMIT_ENGINE_VERSION = "v1.4.1-0.20260122083618-3fb702589d36";

/**
 * The engine image the operator deploys unless `--global-engine-image` says otherwise: the
 * project's build of the engine (tools/ratelimit-engine/image.ts makes it locally as
 * `localhost/platform-project/ratelimit-engine:<tag>`), tagged with the engine's version.
 */
export const DEFAULT_ENGINE_IMAGE = `ghcr.io/platform-project/ratelimit-engine:${
  RATELIMIT_ENGINE_VERSION.replace(/^v/, "")
}`;
