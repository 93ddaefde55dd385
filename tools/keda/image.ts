/**
 * KEDA's three images made here, with no registry: the project's runtime base
 * (tools/image/base.ts, Debian packages assembled like distroless) plus one of KEDA's binaries
 * (tools/keda/build.ts), laid out as KEDA's Dockerfiles lay theirs out (the binary in `/`,
 * WORKDIR `/`, USER 65532:65532, the same ENTRYPOINT). Each is smoke-run, then saved with
 * `podman save` under `.cache/keda-images/` for the real node's `loadImage`. An image whose
 * binary and Containerfile did not change is reused, and its archive kept.
 *
 *   ./deno run -A tools/keda/image.ts     # or: ./deno task build --only=keda
 *
 * @module
 */
import { writeFileAtomic } from "../files.ts";
import { join } from "node:path";
import { makeBases, RUNTIME_BASE } from "../image/base.ts";
import { podman, RESTRICTED_RUN } from "../image/podman.ts";
import { type BinaryImage, binaryImage, inspectImage } from "../image/binary_image.ts";
import { REPO_ROOT } from "../cluster/paths.ts";
import { ensureKedaBuilt, KEDA_PROGRAMS, type KedaProgram, kedaVersion } from "./build.ts";

/** Where the archives and the record go. */
export const KEDA_IMAGE_DIR: string = join(REPO_ROOT, ".cache", "keda-images");
/** The label holding a hash of an image's inputs (binary, Containerfile, base). */
const INPUTS_LABEL = "io.platform-operator.keda.inputs";

/** Upstream image names (ghcr.io/kedacore/…) and entrypoints, per program. */
export const KEDA_IMAGES: Record<KedaProgram, { repo: string; entrypoint: string[] }> = {
  operator: {
    repo: "keda",
    entrypoint: ["/keda", "--zap-log-level=info", "--zap-encoder=console"],
  },
  metricServer: {
    repo: "keda-metrics-apiserver",
    entrypoint: [
      "/keda-adapter",
      "--secure-port=6443",
      "--zap-log-level=info",
      "--zap-encoder=console",
    ],
  },
  admissionWebhook: {
    repo: "keda-admission-webhooks",
    entrypoint: ["/keda-admission-webhooks", "--zap-log-level=info", "--zap-encoder=console"],
  },
};

/** One built image (its ref `localhost/kedacore/<repo>:<version>`). */
export type KedaImage = Omit<BinaryImage, "reused">;

/** The three images, by program. */
export type KedaImages = Record<KedaProgram, KedaImage>;

/** The image reference of a program at `version` (e.g. `localhost/kedacore/keda:2.20.2`). */
export function kedaImageRef(program: KedaProgram, version: string): string {
  return `localhost/kedacore/${KEDA_IMAGES[program].repo}:${version.replace(/^v/, "")}`;
}

function containerfile(program: KedaProgram, hash: string): string {
  const { binary } = KEDA_PROGRAMS[program];
  return [
    `FROM ${RUNTIME_BASE}`,
    "WORKDIR /",
    `COPY ${binary} /${binary}`,
    "# 65532 is numeric for nonroot",
    "USER 65532:65532",
    `LABEL ${INPUTS_LABEL}=${hash}`,
    `ENTRYPOINT ${JSON.stringify(KEDA_IMAGES[program].entrypoint)}`,
    "",
  ].join("\n");
}

/** Builds (or reuses) one image, smoke-runs it and saves it; returns what was made. */
async function oneImage(
  say: (line: string) => void,
  program: KedaProgram,
  binaryPath: string,
  version: string,
  baseId: string,
): Promise<KedaImage> {
  const { binary } = KEDA_PROGRAMS[program];
  const ref = kedaImageRef(program, version);
  const { reused: _, ...image } = await binaryImage(say, {
    ref,
    binaryPath,
    contextName: binary,
    containerfile: (hash) => containerfile(program, hash),
    inputsLabel: INPUTS_LABEL,
    baseId,
    archive: join(KEDA_IMAGE_DIR, `${KEDA_IMAGES[program].repo}.tar`),
    contextDir: join(REPO_ROOT, ".cache", "keda", "context", binary),
    smoke: async (ref) => {
      const help = await podman([...RESTRICTED_RUN, ref, "--help"], { check: false });
      if (!/--zap-log-level/.test(help.stdout + help.stderr)) {
        throw new Error(`${ref} --help did not print KEDA's flags:\n${help.stdout}${help.stderr}`);
      }
    },
  });
  return image;
}

/** Builds the binaries, the base and the three images; writes `.cache/keda-images/record.json`. */
export async function buildKedaImages(say: (line: string) => void): Promise<KedaImages> {
  const start = performance.now();
  const bins = await ensureKedaBuilt(say);
  await makeBases(say);
  const baseId = (await inspectImage(RUNTIME_BASE, INPUTS_LABEL)).Id;
  const version = await kedaVersion();
  await Deno.mkdir(KEDA_IMAGE_DIR, { recursive: true });
  const out: Partial<KedaImages> = {};
  for (const program of Object.keys(KEDA_PROGRAMS) as KedaProgram[]) {
    out[program] = await oneImage(say, program, bins[program], version, baseId);
    const i = out[program];
    say(
      `    ${i.ref}: ${(i.size / 1e6).toFixed(1)} MB, archive ${
        (i.archiveSize / 1e6).toFixed(1)
      } MB`,
    );
  }
  const images = out as KedaImages;
  const record = { version, seconds: Math.round((performance.now() - start) / 1000), images };
  await writeFileAtomic(join(KEDA_IMAGE_DIR, "record.json"), JSON.stringify(record, null, 2));
  return images;
}

if (import.meta.main) {
  try {
    await buildKedaImages((l) => console.log(l));
  } catch (e) {
    console.error(`error: ${(e as Error).message}`);
    Deno.exit(1);
  }
}
