/**
 * The two base images the Dockerfile builds on, made here without a registry. The runtime base
 * is made the way distroless makes cc-debian12: Debian's packages unpacked (glibc, libgcc, the CA
 * bundle, tzdata), a passwd and group with nonroot (65532), a /tmp, and nothing that runs a shell or
 * installs packages. The build base is that plus the project's pinned deno binary, at the path
 * and with the DENO_DIR denoland/deno uses, so the Dockerfile's build stage runs unchanged.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { CACHE, type Say, step } from "./run.ts";
import { podman, podmanStep } from "./podman.ts";
import { ROOT } from "./lock.ts";

/**
 * The Debian packages of the runtime base: glibc, GCC's runtime library, the CA certificates and
 * the time zone database (distroless's bases carry tzdata too: KEDA's cron scaler loads a
 * ScaledObject's `timezone` from /usr/share/zoneinfo).
 */
export const PACKAGES: readonly string[] = ["libc6", "libgcc-s1", "ca-certificates", "tzdata"];
/** The runtime base's tag (stands in for gcr.io/distroless/cc-debian12:nonroot). */
export const RUNTIME_BASE = "localhost/platform-operator-base/runtime:debian12";
/** The build base's tag (stands in for denoland/deno:2.9.6). */
export const BUILD_BASE = "localhost/platform-operator-base/deno:2.9.6";
/** The pinned deno binary ./deno installs (tools/deno/package.json). */
export const DENO_BINARY: string = join(ROOT, "tools", "deno", "node_modules", "deno", "deno");
/** The label holding a hash of what a base was made from: the same hash, the same base. */
const INPUTS_LABEL = "io.platform-operator.base.inputs";

/** A Debian package as unpacked into the runtime base. */
export interface Package {
  name: string;
  version: string;
  architecture: string;
  file: string;
  /** The package's control fields (`dpkg-deb -f`). */
  control: string;
}

/** Files written into the runtime base besides the packages' own (distroless writes the same). */
const FILES: Record<string, string> = {
  "etc/passwd": "root:x:0:0:root:/root:/sbin/nologin\n" +
    "nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
    "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
  "etc/group": "root:x:0:\nnobody:x:65534:\ntty:x:5:\nnonroot:x:65532:\n",
  "etc/nsswitch.conf": "passwd: files\ngroup: files\nhosts: files dns\n",
};
/** What the packages hold that a program never reads, or that only a shell would run. */
const DROPPED = [
  "usr/share/doc",
  "usr/share/man",
  "usr/share/info",
  "usr/share/lintian",
  "usr/share/locale",
  "usr/sbin/update-ca-certificates",
  "usr/bin/ldd",
  "usr/bin/tzselect",
  "etc/ca-certificates",
];

/** Downloads the packages' candidate versions into .cache/image/debs (kept: a version is fetched once). */
async function download(say: Say): Promise<Package[]> {
  const dir = join(CACHE, "debs");
  await Deno.mkdir(dir, { recursive: true });
  // apt's sandbox user must be able to write here, or apt-get warns on every download.
  await Deno.chmod(dir, 0o777);
  // An empty folder: apt-get prints no URI for a package file already in the current one.
  const empty = await Deno.makeTempDir({ prefix: "apt-uris-" });
  const uris = await step(say, "apt-get download --print-uris", "apt-get", [
    "download",
    "--print-uris",
    ...PACKAGES,
  ], { cwd: empty }).finally(() => Deno.remove(empty));
  // apt-get prints the URIs in its own order: each file is found by its package's name.
  const all = [...uris.matchAll(/^'[^']+' (\S+\.deb) /gm)].map((m) => m[1]);
  const files = PACKAGES.map((p) => all.find((f) => f.startsWith(`${p}_`)));
  if (files.some((f) => f === undefined)) {
    throw new Error(`apt-get download --print-uris ${PACKAGES.join(" ")} said:\n${uris}`);
  }
  const have = new Set([...Deno.readDirSync(dir)].map((e) => e.name));
  const need = PACKAGES.filter((_, i) => !have.has(files[i]!));
  if (need.length) {
    await step(say, `apt-get download ${need.join(" ")}`, "apt-get", ["download", ...need], {
      cwd: dir,
    });
  }
  const out: Package[] = [];
  for (const [i, name] of PACKAGES.entries()) {
    const file = join(dir, files[i]!);
    const control = await step(say, `dpkg-deb -f ${files[i]}`, "dpkg-deb", ["-f", file]);
    const field = (f: string) => new RegExp(`^${f}: (\\S+)$`, "m").exec(control)?.[1] ?? "";
    out.push({
      name,
      version: field("Version"),
      architecture: field("Architecture"),
      file,
      control,
    });
  }
  return out;
}

/** Unpacks the packages into a fresh root filesystem and adds what distroless adds. */
async function assemble(say: Say, packages: Package[], rootfs: string): Promise<void> {
  await Deno.remove(rootfs, { recursive: true }).catch(() => {});
  await Deno.mkdir(rootfs, { recursive: true });
  for (const p of packages) {
    await step(say, `dpkg-deb -x ${p.name}`, "dpkg-deb", ["-x", p.file, rootfs]);
  }
  for (const d of DROPPED) await Deno.remove(join(rootfs, d), { recursive: true }).catch(() => {});
  // update-ca-certificates would build the bundle in the package's postinst: the same here.
  const certs = join(rootfs, "usr/share/ca-certificates/mozilla");
  const names = [...Deno.readDirSync(certs)].map((e) => e.name).filter((n) => n.endsWith(".crt"));
  const pem = names.sort().map((n) => Deno.readTextFileSync(join(certs, n)).trimEnd() + "\n");
  await Deno.mkdir(join(rootfs, "etc/ssl/certs"), { recursive: true });
  await Deno.writeTextFile(join(rootfs, "etc/ssl/certs/ca-certificates.crt"), pem.join(""));
  await Deno.remove(join(rootfs, "usr/share/ca-certificates"), { recursive: true });
  // As distroless: each package's control fields, where image scanners look for them.
  await Deno.mkdir(join(rootfs, "var/lib/dpkg/status.d"), { recursive: true });
  for (const p of packages) {
    await Deno.writeTextFile(join(rootfs, "var/lib/dpkg/status.d", p.name), p.control);
  }
  for (const [path, text] of Object.entries(FILES)) {
    await Deno.writeTextFile(join(rootfs, path), text);
  }
  for (const [dir, mode] of [["tmp", 0o1777], ["root", 0o700], ["home/nonroot", 0o700]] as const) {
    await Deno.mkdir(join(rootfs, dir), { recursive: true });
    await Deno.chmod(join(rootfs, dir), mode);
  }
  await Deno.chown(join(rootfs, "home/nonroot"), 65532, 65532);
}

/** Packs `dir` into a tar with fixed times and numeric owners. */
async function pack(say: Say, label: string, tarball: string, dir: string): Promise<void> {
  await step(say, label, "tar", [
    "--create",
    "--file",
    tarball,
    "--sort=name",
    "--mtime=@0",
    "--numeric-owner",
    "-C",
    dir,
    ".",
  ]);
}

/** A hash of the build's inputs, so an unchanged base is reused, not imported again. */
function inputsHash(parts: string[]): string {
  return createHash("sha256").update(parts.join("\n")).digest("hex").slice(0, 16);
}

/** The hash label `image` carries, or undefined when it does not exist. */
async function labelOf(image: string): Promise<string | undefined> {
  const out = await podman([
    "image",
    "inspect",
    "--format",
    `{{index .Labels "${INPUTS_LABEL}"}}`,
    image,
  ], { check: false });
  return out.success ? out.stdout.trim() : undefined;
}

/**
 * Imports `tarball` as `tag` with the image config `changes` (Dockerfile instructions), removing
 * the image the tag named before when nothing else uses it.
 */
async function importImage(say: Say, tarball: string, tag: string, changes: string[]) {
  const old = await podman(["image", "inspect", "--format", "{{.Id}}", tag], { check: false });
  await podmanStep(say, `podman import ${tag}`, [
    "import",
    ...changes.flatMap((c) => ["--change", c]),
    tarball,
    tag,
  ]);
  if (old.success) await podman(["rmi", old.stdout.trim()], { check: false });
}

/** What the bases were made of: the packages, the deno binary's version and digest. */
export interface Bases {
  packages: Package[];
  deno: { version: string; sha256: string };
}

/** Makes (or reuses, when nothing changed) the runtime and build base images. */
export async function makeBases(say: Say): Promise<Bases> {
  const packages = await download(say);
  const version = (await step(say, "deno --version", DENO_BINARY, ["--version"])).split(" ")[1];
  const sha256 = createHash("sha256").update(await Deno.readFile(DENO_BINARY)).digest("hex");
  const source = await Deno.readTextFile(new URL(import.meta.url));
  const runtimeHash = inputsHash([source, ...packages.map((p) => `${p.name}=${p.version}`)]);
  const buildHash = inputsHash([runtimeHash, sha256]);
  const env = "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  const runtimeFresh = await labelOf(RUNTIME_BASE) === runtimeHash;
  const buildFresh = await labelOf(BUILD_BASE) === buildHash;
  if (runtimeFresh && buildFresh) {
    say(`    bases unchanged (${RUNTIME_BASE}, ${BUILD_BASE}): reused`);
    return { packages, deno: { version, sha256 } };
  }
  const rootfs = join(CACHE, "rootfs", "runtime");
  await assemble(say, packages, rootfs);
  if (!runtimeFresh) {
    const tarball = join(CACHE, "rootfs", "runtime.tar");
    await pack(say, "pack the runtime base", tarball, rootfs);
    await importImage(say, tarball, RUNTIME_BASE, [
      env,
      "ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
      "USER 65532:65532",
      "WORKDIR /home/nonroot",
      `LABEL ${INPUTS_LABEL}=${runtimeHash}`,
    ]);
  }
  if (!buildFresh) {
    const build = join(CACHE, "rootfs", "deno");
    await Deno.remove(build, { recursive: true }).catch(() => {});
    await step(say, "copy the runtime base's files", "cp", ["-a", rootfs, build]);
    await Deno.mkdir(join(build, "deno-dir"));
    await Deno.mkdir(join(build, "usr/bin"), { recursive: true });
    await Deno.copyFile(DENO_BINARY, join(build, "usr/bin/deno"));
    const tarball = join(CACHE, "rootfs", "deno.tar");
    await pack(say, "pack the build base", tarball, build);
    await importImage(say, tarball, BUILD_BASE, [
      env,
      // As denoland/deno: root, the module cache in /deno-dir/.
      "ENV DENO_DIR=/deno-dir/",
      "USER 0:0",
      `LABEL ${INPUTS_LABEL}=${buildHash}`,
    ]);
  }
  return { packages, deno: { version, sha256 } };
}
