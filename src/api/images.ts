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

// An image reference as container runtimes parse it (distribution/reference's grammar):
// `[registry[:port]/]path[:tag][@digest]`, the path's components lower case, the name at most
// 255 characters; so no white space or control characters anywhere. Written as patterns that
// JavaScript and Go (RE2, which Helm's values schema uses) read alike.
const DOMAIN_COMPONENT = "(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
const HOST = `(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[a-fA-F0-9:]+\\])`;
const COMPONENT = "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*";
const NAME = `(?:${HOST}(?::[0-9]+)?/)?${COMPONENT}(?:/${COMPONENT})*`;
const TAG = "[\\w][\\w.-]{0,127}";
const DIGEST = "[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}";

/** The pattern of an image's name (repository): `[registry[:port]/]path`, no tag or digest. */
export const IMAGE_NAME_PATTERN = `^${NAME}$`;
/** The pattern of an image's tag. */
export const IMAGE_TAG_PATTERN = `^${TAG}$`;
/** The pattern of a whole image reference, `name[:tag][@digest]`. */
export const IMAGE_REFERENCE_PATTERN = `^(${NAME})(?::${TAG})?(?:@${DIGEST})?$`;

const IMAGE_REFERENCE = new RegExp(IMAGE_REFERENCE_PATTERN);

/** True for an image reference (`IMAGE_REFERENCE_PATTERN`) whose name has at most 255 characters. */
export function isImageReference(value: string): boolean {
  const m = IMAGE_REFERENCE.exec(value);
  return m !== null && m[1].length <= 255;
}
