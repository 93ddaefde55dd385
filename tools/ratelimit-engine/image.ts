/**
 * The global rate limit engine's image made here, with no registry, the way KEDA's are
 * (tools/image/binary_image.ts): the project's runtime base (tools/image/base.ts, Debian packages
 * assembled like distroless: glibc, the CA bundle for Redis over TLS, nonroot 65532) plus the
 * engine built from its Go module (tools/ratelimit-engine/build.ts, static), at `/bin/ratelimit`
 * as envoyproxy/ratelimit's own image has it. The smoke run starts it as the operator's
 * Deployment runs it (read-only root, uid 65532, no capabilities, no network) against a Redis
 * that is not there: it must get as far as dialing Redis. Saved under
 * `.cache/ratelimit-engine-images/` for the real node's `loadImage`.
 *
 *   ./deno run -A tools/ratelimit-engine/image.ts     # or: ./deno task build --only=ratelimit-engine-image
 *
 * The operator's default (`--global-engine-image`, src/api/images.ts DEFAULT_ENGINE_IMAGE) is the
 * published `ghcr.io/platform-project/ratelimit-engine:<version>`; this build is
 * `localhost/platform-project/ratelimit-engine:<version>`, named to the operator with the flag.
 *
 * @module
 */
import { writeFileAtomic } from "../files.ts";
import { join } from "node:path";
import { makeBases, RUNTIME_BASE } from "../image/base.ts";
import { podman, RESTRICTED_RUN } from "../image/podman.ts";
import { type BinaryImage, binaryImage, inspectImage } from "../image/binary_image.ts";
import { REPO_ROOT } from "../cluster/paths.ts";
import { ENGINE, engineVersion, ensureRatelimitEngine } from "./build.ts";

/** Where the archive and the record go. */
export const ENGINE_IMAGE_DIR: string = join(REPO_ROOT, ".cache", "ratelimit-engine-images");
/** The label holding a hash of the image's inputs (binary, Containerfile, base). */
const INPUTS_LABEL = "io.platform-operator.ratelimit-engine.inputs";
/** Where the engine is in the image (as in envoyproxy/ratelimit's Dockerfile). */
export const ENGINE_PATH = "/bin/ratelimit";

/** The local image reference of the engine at `version` (its Go pseudo-version). */
export function engineImageRef(version: string): string {
  return `localhost/platform-project/ratelimit-engine:${version.replace(/^v/, "")}`;
}

function containerfile(hash: string): string {
  return [
    `FROM ${RUNTIME_BASE}`,
    "WORKDIR /",
    `COPY ${ENGINE} ${ENGINE_PATH}`,
    "# 65532 is numeric for nonroot",
    "USER 65532:65532",
    `LABEL ${INPUTS_LABEL}=${hash}`,
    `ENTRYPOINT ${JSON.stringify([ENGINE_PATH])}`,
    "",
  ].join("\n");
}

/** Runs the image with no Redis: it must start and fail dialing Redis, as the engine does. */
async function smoke(ref: string): Promise<void> {
  const run = await podman([
    ...RESTRICTED_RUN,
    "--env=USE_STATSD=false",
    "--env=REDIS_SOCKET_TYPE=tcp",
    "--env=REDIS_URL=127.0.0.1:1",
    ref,
  ], { check: false });
  const out = run.stdout + run.stderr;
  if (!/connecting to redis on 127\.0\.0\.1:1/.test(out) || !/connection refused/.test(out)) {
    throw new Error(`${ref} did not start as the engine does (dialing Redis):\n${out}`);
  }
}

/** Builds the engine, the base and the image; writes `.cache/ratelimit-engine-images/record.json`. */
export async function buildEngineImage(say: (line: string) => void): Promise<BinaryImage> {
  const start = performance.now();
  const { engine } = await ensureRatelimitEngine(say);
  await makeBases(say);
  const version = await engineVersion();
  const image = await binaryImage(say, {
    ref: engineImageRef(version),
    binaryPath: engine,
    contextName: ENGINE,
    containerfile,
    inputsLabel: INPUTS_LABEL,
    baseId: (await inspectImage(RUNTIME_BASE, INPUTS_LABEL)).Id,
    archive: join(ENGINE_IMAGE_DIR, "ratelimit-engine.tar"),
    contextDir: join(REPO_ROOT, ".cache", "ratelimit-engine-images", "context"),
    smoke,
  });
  const seconds = (performance.now() - start) / 1000;
  say(
    `    ${image.ref}: ${(image.size / 1e6).toFixed(1)} MB, archive ${
      (image.archiveSize / 1e6).toFixed(1)
    } MB, ${seconds.toFixed(1)} s${image.reused ? " (reused)" : ""}`,
  );
  const record = { version, seconds: Math.round(seconds * 10) / 10, image };
  await writeFileAtomic(join(ENGINE_IMAGE_DIR, "record.json"), JSON.stringify(record, null, 2));
  return image;
}

if (import.meta.main) {
  try {
    await buildEngineImage((l) => console.log(l));
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    Deno.exit(1);
  }
}
