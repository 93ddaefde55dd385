/**
 * An image of one program built here: the project's runtime base (base.ts) plus the program's
 * binary, from a Containerfile the caller writes, built with podman without a registry, smoke-run,
 * and saved as a docker archive for the real node's `loadImage`. An image whose binary,
 * Containerfile and base did not change is reused (a hash of them is its label), and its archive
 * kept. KEDA's images (tools/keda/image.ts) and the global rate limit engine's
 * (tools/ratelimit-engine/image.ts) are made so.
 */
import { createHash } from "node:crypto";
import { dirname, join } from "node:path";
import { podman, podmanStep, saveImage } from "./podman.ts";
import type { Say } from "./run.ts";
import { withLock } from "../lock.ts";

/** What to build. */
export interface BinaryImageSpec {
  /** The image reference, e.g. `localhost/kedacore/keda:2.20.2`. */
  ref: string;
  /** The built program on this machine. */
  binaryPath: string;
  /** Its file name in the build context (what the Containerfile COPYs). */
  contextName: string;
  /** The Containerfile, with `LABEL <inputsLabel>=<hash>` (given "" when hashing). */
  containerfile: (hash: string) => string;
  /** The label that holds the hash of the inputs. */
  inputsLabel: string;
  /** The runtime base's image id. */
  baseId: string;
  /** Where the archive goes (`<archive>.id` records the saved image id). */
  archive: string;
  /** A scratch build context (removed after the build). */
  contextDir: string;
  /** Runs the image once and throws when it does not behave as the program should. */
  smoke: (ref: string) => Promise<void>;
}

/** One built image. */
export interface BinaryImage {
  ref: string;
  id: string;
  /** Uncompressed size as podman reports it, bytes. */
  size: number;
  binarySize: number;
  /** The `podman save` archive. */
  archive: string;
  archiveSize: number;
  /** True when the image was reused as it was. */
  reused: boolean;
}

async function sha256(path: string): Promise<string> {
  return createHash("sha256").update(await Deno.readFile(path)).digest("hex");
}

/** An image's id and size, and the value of `label`; an empty id when it does not exist. */
export async function inspectImage(
  ref: string,
  label: string,
): Promise<{ Id: string; Size: number; label?: string }> {
  const out = await podman(["image", "inspect", ref], { check: false });
  if (!out.success) return { Id: "", Size: 0 };
  const [i] = JSON.parse(out.stdout) as {
    Id: string;
    Size: number;
    Labels?: Record<string, string> | null;
  }[];
  return { Id: i.Id, Size: i.Size, label: i.Labels?.[label] };
}

/**
 * Builds (or reuses) the image, smoke-runs it and saves it; returns what was made. Two processes
 * making the same image take turns (a lock beside its context folder): CI's background build and
 * a test running `./deno task build` may reach the same image at once.
 */
export async function binaryImage(say: Say, spec: BinaryImageSpec): Promise<BinaryImage> {
  await Deno.mkdir(dirname(spec.contextDir), { recursive: true });
  return await withLock(`${spec.contextDir}.lock`, () => buildBinaryImage(say, spec), say);
}

async function buildBinaryImage(say: Say, spec: BinaryImageSpec): Promise<BinaryImage> {
  const hash = createHash("sha256").update(
    [await sha256(spec.binaryPath), spec.containerfile(""), spec.baseId].join("\n"),
  ).digest("hex").slice(0, 16);
  let image = await inspectImage(spec.ref, spec.inputsLabel);
  const reused = image.label === hash;
  if (!reused) {
    const ctx = spec.contextDir;
    await Deno.remove(ctx, { recursive: true }).catch(() => {});
    await Deno.mkdir(ctx, { recursive: true });
    await Deno.copyFile(spec.binaryPath, join(ctx, spec.contextName));
    await Deno.writeTextFile(join(ctx, "Containerfile"), spec.containerfile(hash));
    await podmanStep(say, `podman build ${spec.ref}`, [
      "build",
      "--pull=never",
      "--network=none",
      "--isolation=oci",
      "--file",
      join(ctx, "Containerfile"),
      "--tag",
      spec.ref,
      ctx,
    ]);
    await Deno.remove(ctx, { recursive: true });
    image = await inspectImage(spec.ref, spec.inputsLabel);
  } else say(`    ${spec.ref} unchanged: reused`);
  await spec.smoke(spec.ref);
  const idFile = `${spec.archive}.id`;
  const saved = await Deno.readTextFile(idFile).catch(() => "");
  const have = await Deno.stat(spec.archive).then(() => true, () => false);
  if (saved.trim() !== image.Id || !have) {
    await Deno.mkdir(dirname(spec.archive), { recursive: true });
    await saveImage(say, spec.ref, spec.archive);
    await Deno.writeTextFile(idFile, `${image.Id}\n`);
  }
  return {
    ref: spec.ref,
    id: image.Id,
    size: image.Size,
    binarySize: (await Deno.stat(spec.binaryPath)).size,
    archive: spec.archive,
    archiveSize: (await Deno.stat(spec.archive)).size,
    reused,
  };
}
