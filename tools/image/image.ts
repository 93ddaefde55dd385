/**
 * `./deno task image`: builds the project's Dockerfile with no registry. It makes the two base
 * images itself (base.ts), builds the `deno-runtime` target on them with podman, smoke-runs the
 * result as the Pod would (read-only root, uid 65532, no capabilities), saves it as a docker
 * archive for `ctr images import`, and records what went in (.cache/image/record.json).
 */
import { writeFileAtomic } from "../files.ts";
import { inputsHash } from "../stamp.ts";
import { join } from "node:path";
import { type Bases, BUILD_BASE, makeBases, RUNTIME_BASE } from "./base.ts";
import { ROOT } from "./lock.ts";
import { podman, podmanStep, RESTRICTED_RUN, saveImage } from "./podman.ts";
import { BuildError, CACHE, elapsed, missingTools, type Say } from "./run.ts";

/** The tag the image gets by default. */
export const DEFAULT_TAG = "localhost/platform-operator:dev";
/** The Dockerfile target built here (the default target needs the denort download). */
export const DEFAULT_TARGET = "deno-runtime";
/** Where the record of the last build is written. */
export const RECORD: string = join(CACHE, "record.json");

/** What one build produced and what went into it. */
export interface ImageRecord {
  tag: string;
  target: string;
  id: string;
  /** The image's size as podman reports it (uncompressed layers), bytes. */
  size: number;
  archive: string;
  archiveSize: number;
  bases: { runtime: string; build: string };
  packages: { name: string; version: string; architecture: string }[];
  deno: Bases["deno"];
  /** The npm packages cached in the image (the operator's lockfile), name@version. */
  npm: string[];
  seconds: number;
  /** The hash of the build's context and settings (see {@link contextHash}). */
  inputs?: string;
}

/** Options of one build. */
export interface BuildOptions {
  tag?: string;
  target?: string;
  /** Skip `podman save` (the archive is what another machine imports). */
  save?: boolean;
  /**
   * Give the last build back when nothing that goes into the image changed: its record has the
   * same context hash, its archive is there at its size, and podman still holds the image with
   * its id. The e2e suites that deploy the image ask for this; `./deno task image` always builds.
   */
  reuse?: boolean;
}

/**
 * SHA-256 over the build's context under `root` and the build's settings: the Dockerfile,
 * .dockerignore, and every file its allowlist lets through (`*`, then `!path` lines, a directory
 * ending in `/`), so that the hash follows .dockerignore as the build does. Any other pattern is
 * an error, not a guess.
 */
export async function contextHash(settings: readonly unknown[], root = ROOT): Promise<string> {
  const files = ["Dockerfile", ".dockerignore"];
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(join(root, dir))) {
      const p = `${dir}/${e.name}`;
      if (e.isDirectory) await walk(p);
      else files.push(p);
    }
  };
  const ignore = await Deno.readTextFile(join(root, ".dockerignore"));
  for (const raw of ignore.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line === "*") continue;
    if (!line.startsWith("!") || /[*?[]/.test(line)) {
      throw new Error(`.dockerignore: "${line}" is not a "!path" line of the allowlist`);
    }
    const path = line.slice(1);
    if (path.endsWith("/")) await walk(path.slice(0, -1));
    else files.push(path);
  }
  return await inputsHash(root, files.sort(), settings);
}

/** The last build's record when it is of `inputs` and its image and archive are still there. */
async function reusable(inputs: string, save: boolean): Promise<ImageRecord | undefined> {
  let record: ImageRecord;
  try {
    record = JSON.parse(await Deno.readTextFile(RECORD)) as ImageRecord;
  } catch {
    return undefined;
  }
  if (record.inputs !== inputs) return undefined;
  if (save) {
    const size = await Deno.stat(record.archive).then((s) => s.size, () => -1);
    if (size !== record.archiveSize) return undefined;
  }
  const inspect = await podman(["image", "inspect", "--format", "{{.Id}}", record.tag], {
    check: false,
  });
  return inspect.code === 0 && inspect.stdout.trim() === record.id ? record : undefined;
}

/** The CA bundle given to the build's npm downloads (a proxy's CA is trusted here as on the host). */
const HOST_CA = "/etc/ssl/certs/ca-certificates.crt";

/** Builds, smoke-runs, saves and records the image. */
export async function buildImage(say: Say, o: BuildOptions = {}): Promise<ImageRecord> {
  const start = Date.now();
  const tag = o.tag ?? DEFAULT_TAG;
  const target = o.target ?? DEFAULT_TARGET;
  const missing = await missingTools();
  if (missing) throw new BuildError(missing);
  const ca = await Deno.stat(HOST_CA).then(() => true, () => false);
  const inputs = await contextHash([tag, target, BUILD_BASE, RUNTIME_BASE, ca, o.save !== false]);
  if (o.reuse) {
    const last = await reusable(inputs, o.save !== false);
    if (last) {
      say(`${tag} up to date (${last.id.slice(0, 12)}; nothing in its build context changed)`);
      return last;
    }
  }
  say(`building ${tag} (Dockerfile target ${target}); storage: podman's default`);
  const bases = await makeBases(say);
  await podmanStep(say, `podman build --target ${target}`, [
    "build",
    "--pull=never",
    "--network=host",
    "--isolation=oci",
    "--layers",
    "--file",
    join(ROOT, "Dockerfile"),
    "--target",
    target,
    "--build-arg",
    `DENO_IMAGE=${BUILD_BASE}`,
    "--build-arg",
    `RUNTIME_IMAGE=${RUNTIME_BASE}`,
    ...(ca ? ["--volume", `${HOST_CA}:/run/build-ca.crt:ro`] : []),
    ...(ca ? ["--build-arg", "DENO_CERT=/run/build-ca.crt"] : []),
    "--tag",
    tag,
    ROOT,
  ]);
  const [inspect] = JSON.parse((await podman(["image", "inspect", tag])).stdout) as {
    Id: string;
    Size: number;
  }[];
  say(`    ${tag}: ${(inspect.Size / 1e6).toFixed(1)} MB`);
  await podmanStep(say, "smoke run: --help, read-only, uid 65532, no capabilities", [
    ...RESTRICTED_RUN,
    tag,
    "--help",
  ]);
  const archive = join(CACHE, `${tag.replace(/^.*\//, "").replace(/[:]/g, "-")}.tar`);
  if (o.save !== false) await saveImage(say, tag, archive);
  const lock = JSON.parse(await Deno.readTextFile(join(ROOT, "deploy/operator/deno.lock"))) as {
    npm: Record<string, unknown>;
  };
  const record: ImageRecord = {
    tag,
    target,
    id: inspect.Id,
    size: inspect.Size,
    archive,
    archiveSize: o.save === false ? 0 : (await Deno.stat(archive)).size,
    bases: { runtime: RUNTIME_BASE, build: BUILD_BASE },
    packages: bases.packages.map(({ name, version, architecture }) => ({
      name,
      version,
      architecture,
    })),
    deno: bases.deno,
    npm: Object.keys(lock.npm).map((k) => k.replace(/_.*$/, "")).sort(),
    seconds: Math.round((Date.now() - start) / 1000),
    inputs,
  };
  await writeFileAtomic(RECORD, `${JSON.stringify(record, null, 2)}\n`);
  say(`built ${tag} in ${elapsed(start)}: ${(record.size / 1e6).toFixed(1)} MB; record ${RECORD}`);
  if (o.save !== false) say(`saved ${archive}: ctr -n k8s.io images import ${archive}`);
  return record;
}

const HELP = `Usage: ./deno task image [--tag TAG] [--target deno-runtime|binary] [--no-save]

Builds the Dockerfile with podman on base images made here from Debian packages and the pinned
deno (no registry), runs it once as the Pod does, saves it to .cache/image/ and records it.
  --tag TAG      the image's tag (default ${DEFAULT_TAG})
  --target T     the Dockerfile target (default ${DEFAULT_TARGET}; binary needs dl.deno.land)
  --no-save      skip podman save
`;

if (import.meta.main) {
  const args = [...Deno.args];
  const value = (flag: string) => {
    const i = args.indexOf(flag);
    return i < 0 ? undefined : args.splice(i, 2)[1];
  };
  if (args.includes("--help") || args.includes("-h")) {
    console.log(HELP);
    Deno.exit(0);
  }
  const tag = value("--tag");
  const target = value("--target");
  const save = !args.includes("--no-save");
  const unknown = args.filter((a) => a !== "--no-save");
  if (unknown.length) {
    console.error(`unknown arguments: ${unknown.join(" ")}\n${HELP}`);
    Deno.exit(2);
  }
  try {
    await buildImage((l) => console.log(l), { tag, target, save });
  } catch (e) {
    console.error(`error: ${e instanceof BuildError ? e.message : (e as Error).stack}`);
    Deno.exit(1);
  }
}
