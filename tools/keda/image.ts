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
import { createHash } from "node:crypto";
import { join } from "node:path";
import { makeBases, RUNTIME_BASE } from "../image/base.ts";
import { podman, podmanStep, RESTRICTED_RUN, saveImage } from "../image/podman.ts";
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

/** One built image. */
export interface KedaImage {
  /** `localhost/kedacore/<repo>:<version>`. */
  ref: string;
  id: string;
  /** Uncompressed size as podman reports it, bytes. */
  size: number;
  binarySize: number;
  /** The `podman save` archive. */
  archive: string;
  archiveSize: number;
}

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

async function sha256(path: string): Promise<string> {
  return createHash("sha256").update(await Deno.readFile(path)).digest("hex");
}

async function inspect(ref: string): Promise<{ Id: string; Size: number; label?: string }> {
  const out = await podman(["image", "inspect", ref], { check: false });
  if (!out.success) return { Id: "", Size: 0 };
  const [i] = JSON.parse(out.stdout) as {
    Id: string;
    Size: number;
    Labels?: Record<string, string> | null;
  }[];
  return { Id: i.Id, Size: i.Size, label: i.Labels?.[INPUTS_LABEL] };
}

/** Builds (or reuses) one image, smoke-runs it and saves it; returns what was made. */
async function oneImage(
  say: (line: string) => void,
  program: KedaProgram,
  binaryPath: string,
  version: string,
  baseId: string,
): Promise<KedaImage> {
  const ref = kedaImageRef(program, version);
  const { binary } = KEDA_PROGRAMS[program];
  const hash = createHash("sha256").update(
    [await sha256(binaryPath), containerfile(program, ""), baseId].join("\n"),
  ).digest("hex").slice(0, 16);
  const archive = join(KEDA_IMAGE_DIR, `${KEDA_IMAGES[program].repo}.tar`);
  const idFile = `${archive}.id`;
  let image = await inspect(ref);
  if (image.label !== hash) {
    const ctx = join(REPO_ROOT, ".cache", "keda", "context", binary);
    await Deno.remove(ctx, { recursive: true }).catch(() => {});
    await Deno.mkdir(ctx, { recursive: true });
    await Deno.copyFile(binaryPath, join(ctx, binary));
    await Deno.writeTextFile(join(ctx, "Containerfile"), containerfile(program, hash));
    await podmanStep(say, `podman build ${ref}`, [
      "build",
      "--pull=never",
      "--network=none",
      "--isolation=oci",
      "--file",
      join(ctx, "Containerfile"),
      "--tag",
      ref,
      ctx,
    ]);
    await Deno.remove(ctx, { recursive: true });
    image = await inspect(ref);
  } else say(`    ${ref} unchanged: reused`);
  const help = await podman([...RESTRICTED_RUN, ref, "--help"], { check: false });
  if (!/--zap-log-level/.test(help.stdout + help.stderr)) {
    throw new Error(`${ref} --help did not print KEDA's flags:\n${help.stdout}${help.stderr}`);
  }
  const saved = await Deno.readTextFile(idFile).catch(() => "");
  const have = await Deno.stat(archive).then(() => true, () => false);
  if (saved.trim() !== image.Id || !have) {
    await saveImage(say, ref, archive);
    await Deno.writeTextFile(idFile, `${image.Id}\n`);
  }
  return {
    ref,
    id: image.Id,
    size: image.Size,
    binarySize: (await Deno.stat(binaryPath)).size,
    archive,
    archiveSize: (await Deno.stat(archive)).size,
  };
}

/** Builds the binaries, the base and the three images; writes `.cache/keda-images/record.json`. */
export async function buildKedaImages(say: (line: string) => void): Promise<KedaImages> {
  const start = performance.now();
  const bins = await ensureKedaBuilt(say);
  await makeBases(say);
  const baseId = (await inspect(RUNTIME_BASE)).Id;
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
  await Deno.writeTextFile(join(KEDA_IMAGE_DIR, "record.json"), JSON.stringify(record, null, 2));
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
